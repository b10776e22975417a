"""A company with a key holding every scope, made as `flask companies create` makes it, on
whichever app is given (its own pepper signs the keys)."""
from __future__ import annotations

from dataclasses import dataclass, field

from app.database.engine import utcnow
from app.services.tenancy import companies, credentials
from app.services.tenancy.scopes import ALL_SCOPES


@dataclass
class Tenant:
    """A company with a key holding every scope; `headers()` authenticates as it."""

    app: object
    company_id: str
    key: str
    extra_keys: dict = field(default_factory=dict)

    def headers(self, key: str | None = None, **more) -> dict:
        headers = {"Authorization": f"Bearer {key or self.key}"}
        headers.update({k.replace("_", "-"): v for k, v in more.items()})
        return headers

    def key_with(self, *scopes: str) -> str:
        with self.app.app_context():
            session = self.app.extensions["session_factory"]()
            _, key = credentials.issue_credential(session, self.company_id, "test key",
                                                  list(scopes), pepper=_pepper(self.app),
                                                  now=utcnow())
            session.commit()
            session.close()
        return key


def make_tenant(app, name: str = "Test Shop", **subscription) -> Tenant:
    """A company as `flask companies create` makes it, with an ACTIVE subscription and room
    for registers unless told otherwise."""
    session = app.extensions["session_factory"]()
    now = utcnow()
    company = companies.create_company(session, name, now=now, tariff="standard",
                                       register_limit=subscription.pop("register_limit", 10),
                                       status=subscription.pop("status", "ACTIVE"))
    _, key = credentials.issue_credential(session, company.id, "all scopes", list(ALL_SCOPES),
                                          pepper=_pepper(app), now=now)
    session.commit()
    session.close()
    return Tenant(app=app, company_id=company.id, key=key)


def _pepper(app) -> str:
    return app.config["SETTINGS"].api_key_pepper
