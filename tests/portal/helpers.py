"""Staff members made as the operator's command makes them, a dead letter as the worker leaves
one, and a browser-like client that signs in through the sign-in form, carrying the CSRF token
each page gives."""
from __future__ import annotations

import re
from decimal import Decimal
from html.parser import HTMLParser

from sqlalchemy import select

from app.database.engine import utcnow
from app.models import WebhookDelivery
from app.services.audit import events as audit
from app.services.staff import members
from app.services.webhooks import delivery, endpoints
from app.services.webhooks.outbox import record_event
from app.services.webhooks.transport import DeliveryOutcome
from tests.conftest import TEST_PEPPER

PASSWORD = "correct horse battery staple"
HOOK_HOST = "hooks.example.com"
_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def add_staff(app, company_id: str, email: str, role: str, *, name: str | None = None,
              password: str | None = PASSWORD) -> str:
    session = app.extensions["session_factory"]()
    try:
        member = members.add_member(session, company_id, email=email, role=role, name=name,
                                    actor=audit.operator(), now=utcnow())
        if password is not None:
            members.set_password(session, member, password)
        session.commit()
        return member.id
    finally:
        session.close()


def dead_letter(app, company_id: str, path: str = "/dead") -> tuple[str, str]:
    """An event of the company whose delivery, to a new endpoint at `path` on HOOK_HOST (allowed
    here), was given up on: its one attempt answered 500 and no retry left, as the worker
    leaves it. Returns (the event's id, the delivery's id)."""
    session = app.extensions["session_factory"]()
    try:
        endpoints.allow_host(session, HOOK_HOST, now=utcnow())
        endpoint, _secret = endpoints.create_endpoint(
            session, company_id, url=f"https://{HOOK_HOST}{path}", events=["*"],
            description=None, pepper=TEST_PEPPER, now=utcnow())
        event = record_event(session, company_id, "customer.created", {"id": "c-1"})
        session.commit()
        delivery.dispatch_pending(session, now=utcnow(), limit=100)
        session.commit()
        [(delivery_id,)] = session.execute(
            select(WebhookDelivery.id).where(WebhookDelivery.company_id == company_id,
                                             WebhookDelivery.event_id == event.id,
                                             WebhookDelivery.endpoint_id == endpoint.id)).all()
        attempt = delivery.begin_attempt(session, company_id, delivery_id, now=utcnow(),
                                         pepper=TEST_PEPPER)
        failed = DeliveryOutcome(status=500, retry_after=None, error=None)
        assert delivery.finish_attempt(session, attempt, failed, now=utcnow(), delays=[]) is None
        session.commit()
        return event.id, delivery_id
    finally:
        session.close()


def csrf_token(page) -> str:
    found = _TOKEN.search(page.get_data(as_text=True))
    assert found, "the page has no form with a CSRF token"
    return found.group(1)


def sign_in(client, email: str, password: str = PASSWORD, **extra):
    """The sign-in form sent as a browser sends it; returns the answer."""
    token = csrf_token(client.get("/portal/login"))
    return client.post("/portal/login", data={"email": email, "password": password,
                                              "csrf_token": token, **extra})


def post_form(client, page_path: str, action: str, data: dict):
    """A form posted from the page at `page_path`, with that page's CSRF token."""
    token = csrf_token(client.get(page_path))
    return client.post(action, data={**data, "csrf_token": token})


def session_cookie(client) -> str | None:
    cookie = client.get_cookie("loyalty_portal", path="/portal")
    return cookie.value if cookie else None


class _Tables(HTMLParser):
    """The cells' text of each table with an id, row by row."""

    def __init__(self):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._table = self._row = self._cell = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._table = self.tables.setdefault(dict(attrs).get("id") or "", [])
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(re.sub(r"[ \t\r\n]+", " ", "".join(self._cell)).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self._table.append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def table(page, table_id: str) -> list[list[str]]:
    """The rows (header row first) of the page's table with this id."""
    parser = _Tables()
    parser.feed(page.get_data(as_text=True))
    return parser.tables[table_id]


def roubles(amount: str) -> str:
    """An API amount ("1450.00") as an English page writes it ("1,450.00 ₽")."""
    return f"{Decimal(amount):,.2f}\N{NO-BREAK SPACE}₽"
