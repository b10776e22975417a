"""`flask demo`: a company ready to try at a register, made once; each run issues its key anew
and says which earlier demo keys it revoked (a key is shown once: it cannot be shown again)."""
from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import ApiCredential, Company
from app.services.audit import events as audit
from app.services.locations import stores
from app.services.tenancy import companies, credentials
from app.services.tenancy.scopes import ALL_SCOPES

DEMO_COMPANY = "Demo Coffee"
DEMO_KEY = "Demo key"


def create_demo(session: Session, *, pepper: str, now: datetime,
                actor: audit.Actor | None = None) -> tuple[str, list[str]]:
    """The demo company (made on the first run, found on the next ones) and a new key with
    every scope; the demo keys issued before are revoked, so only the printed one works.
    Returns the key and the display prefixes of the keys revoked."""
    company_id = session.scalar(select(Company.id).where(Company.name == DEMO_COMPANY)
                                .order_by(Company.created_at).limit(1))
    if company_id is None:
        company_id = _make_demo_company(session, now, actor)
    revoked = []
    for credential in session.scalars(select(ApiCredential).where(
            ApiCredential.company_id == company_id, ApiCredential.name == DEMO_KEY,
            ApiCredential.revoked_at.is_(None))):
        credentials.revoke_credential(session, company_id, credential.id, now=now, actor=actor)
        revoked.append(credential.prefix)
    _, key = credentials.issue_credential(session, company_id, DEMO_KEY, list(ALL_SCOPES),
                                          pepper=pepper, now=now, actor=actor)
    return key, revoked


def _make_demo_company(session: Session, now: datetime, actor: audit.Actor | None) -> str:
    company = companies.create_company(session, DEMO_COMPANY, now=now, tariff="standard",
                                       register_limit=5, status="ACTIVE")
    companies.update_subscription(session, company.id, access_until=now + timedelta(days=365))
    store = stores.create_store(session, company.id, name="Demo Coffee on Tverskaya",
                                address="Tverskaya st. 7", city="Moscow", latitude=55.7577,
                                longitude=37.6136, channels=[stores.MINIAPP],
                                timezone="Europe/Moscow", now=now, actor=actor)
    stores.create_terminal(session, company.id, store_id=store.id, name="Register 1",
                           pos_key="demo-register-1", now=now, actor=actor)
    return company.id
