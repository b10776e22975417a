"""An operator command's transaction, and the check that the company it names exists."""
from flask import current_app

from app.operations.work import transaction


def operator_session():
    """One transaction per command: all of it or nothing."""
    return transaction(current_app._get_current_object())


def existing_company(session, company_id: str) -> None:
    """An operator's typo is one line naming the id (exit 2), not a service's 'not found'."""
    from app.cli.errors import refuse
    from app.models import Company

    if session.get(Company, company_id) is None:
        refuse(f"no company {company_id}")
