"""The directory's name rows against the customers they copy (the check every test ends with)."""
from __future__ import annotations

from sqlalchemy import and_, or_, select

from app.models import Customer, CustomerName
from app.services.customers.profiles import FULL_NAME


def names_out_of_step(connection) -> list[tuple]:
    """(customer id, first name, last name) of every customer whose name row is missing or
    says something else than the customer's own name and enrolment time."""
    return [tuple(row) for row in connection.execute(
        select(Customer.id, Customer.first_name, Customer.last_name)
        .outerjoin(CustomerName, and_(CustomerName.company_id == Customer.company_id,
                                      CustomerName.card_number == Customer.card_number))
        .where(or_(CustomerName.card_number.is_(None), CustomerName.full_name != FULL_NAME,
                   CustomerName.created_at != Customer.created_at)))]
