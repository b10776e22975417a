"""`flask demo`: a company ready to try at a register."""
from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from app.services.tenancy import companies, credentials

from app.services.locations import stores
from app.services.tenancy.scopes import ALL_SCOPES


def create_demo(session: Session, *, pepper: str, now: datetime) -> str:
    company = companies.create_company(session, "Demo Coffee", now=now, tariff="standard",
                                       register_limit=5, status="ACTIVE")
    companies.update_subscription(session, company.id, access_until=now + timedelta(days=365))
    store = stores.create_store(session, company.id, name="Demo Coffee on Tverskaya",
                                address="Tverskaya st. 7", city="Moscow", latitude=55.7577,
                                longitude=37.6136, channels=[stores.MINIAPP],
                                timezone="Europe/Moscow", now=now)
    stores.create_terminal(session, company.id, store_id=store.id, name="Register 1",
                           pos_key="demo-register-1", now=now)
    _, key = credentials.issue_credential(session, company.id, "Demo key", list(ALL_SCOPES),
                                          pepper=pepper, now=now)
    return key
