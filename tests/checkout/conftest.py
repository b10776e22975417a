"""Checkout fixtures: a shop (store, register, catalog, customers with funded accounts) made
directly with the models, and a register that drives the checkout API with real keys."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import pytest
from sqlalchemy import select, update

from app.database.engine import utcnow
from app.models import (CatalogItem, CheckoutSession, Customer, Hold, OutboxEvent, RewardAccount,
                        Store, Terminal)
from app.services.cards import identifiers
from app.services.checkout import holds
from app.services.customers import profiles
from app.services.rewards import ledger, verification
from app.services.tenancy import companies
from app.services.unit_of_work import UnitOfWork
from app.wire import format_amount, parse_amount


def line(line_id: str, amount: str, *, sku: str | None = None, quantity: str = "1",
         price: str | None = None) -> dict:
    body = {"lineId": line_id, "quantity": quantity, "price": price or amount, "amount": amount}
    if sku is not None:
        body["sku"] = sku
    return body


@dataclass
class Shop:
    """A company with one store and one ACTIVE register (pos key), arranged in the database."""

    app: object
    tenant: object
    store_id: str = ""
    terminal_id: str = ""
    pos_key: str = ""

    def _session(self):
        return self.app.extensions["session_factory"]()

    def arrange(self, work):
        session = self._session()
        try:
            result = work(session)
            session.commit()
            return result
        finally:
            session.close()

    def customer(self, balance: str = "0.00") -> str:
        def work(session):
            now = utcnow()
            customer = Customer(company_id=self.tenant.company_id,
                                phone=f"+79{uuid.uuid4().int % 10**9:09d}", first_name="Anna",
                                card_number=identifiers.new_card_number(),
                                card_token=identifiers.new_card_token(), created_at=now)
            session.add(customer)
            session.flush()
            profiles.record_names(session, customer.company_id, [customer.id])
            account = ledger.open_account(UnitOfWork.of(session), customer.company_id, customer.id, now)
            if parse_amount(balance):
                ledger.post(account, type="ADJUSTMENT", amount=parse_amount(balance),
                            now=now, basis="opening balance")
            session.flush()
            return customer.id
        return self.arrange(work)

    def catalog(self, items: dict[str, tuple[bool, bool]], store_id: str | None = None,
                categories: dict[str, str] | None = None) -> None:
        """sku → (redeemable, accruable) in the store's catalog; `categories`: sku → category."""
        def work(session):
            for sku, (redeemable, accruable) in items.items():
                session.add(CatalogItem(company_id=self.tenant.company_id,
                                        store_id=store_id or self.store_id, sku=sku, name=sku,
                                        price=100, redeemable=redeemable, accruable=accruable,
                                        category=(categories or {}).get(sku), updated_at=utcnow()))
        self.arrange(work)

    def program(self, **changes) -> None:
        self.arrange(lambda s: companies.update_program(s, self.tenant.company_id, **changes))

    def subscription(self, **changes) -> None:
        self.arrange(lambda s: companies.update_subscription(s, self.tenant.company_id, **changes))

    def terminal(self, state: str) -> None:
        self.arrange(lambda s: s.execute(update(Terminal).where(
            Terminal.company_id == self.tenant.company_id, Terminal.id == self.terminal_id)
                                         .values(state=state)))

    def age_holds(self, seconds: int = 1, session_id: str | None = None) -> None:
        """Every active hold's (or the session's) time ran out `seconds` ago."""
        which = [Hold.company_id == self.tenant.company_id, Hold.state == "ACTIVE"]
        if session_id is not None:
            which.append(Hold.checkout_session_id == session_id)
        self.arrange(lambda s: s.execute(update(Hold).where(*which).values(
            expires_at=utcnow() - _seconds(seconds))))

    def state(self, session_id: str) -> tuple[str, list[str]]:
        """The session's state and the states of its holds, oldest first."""
        def work(session):
            state = session.scalar(select(CheckoutSession.state).where(
                CheckoutSession.company_id == self.tenant.company_id,
                CheckoutSession.id == session_id))
            held = session.scalars(select(Hold.state).where(
                Hold.company_id == self.tenant.company_id, Hold.checkout_session_id == session_id)
                                   .order_by(Hold.created_at)).all()
            return state, list(held)
        return self.arrange(work)

    def age_sessions(self, seconds: int = 1) -> None:
        """Every session's 24 h ran out `seconds` ago."""
        self.arrange(lambda s: s.execute(update(CheckoutSession).where(
            CheckoutSession.company_id == self.tenant.company_id)
                                         .values(expires_at=utcnow() - _seconds(seconds))))

    def account(self, customer_id: str) -> dict:
        def work(session):
            account = session.scalar(select(RewardAccount).where(
                RewardAccount.company_id == self.tenant.company_id,
                RewardAccount.customer_id == customer_id))
            return {name: format_amount(getattr(account, name))
                    for name in ("available", "pending", "reserved")}
        return self.arrange(work)

    def events(self, event_type: str) -> list[dict]:
        """The data of the company's recorded events of a type, oldest first."""
        import json
        return self.arrange(lambda s: [json.loads(e.payload)["data"] for e in s.scalars(
            select(OutboxEvent).where(OutboxEvent.company_id == self.tenant.company_id,
                                      OutboxEvent.type == event_type)
            .order_by(OutboxEvent.created_at))])

    def upkeep(self, seconds_later: int = 0) -> dict:
        """One run of the checkout's periodic tasks (as the worker runs them, each in its
        own transaction), `seconds_later` from now."""
        from worker.periodic import TASKS
        from worker.context import job_session
        now = utcnow() + _seconds(seconds_later)
        results = {}
        for name, task in TASKS:
            if task in (holds.expire_holds, holds.expire_sessions):
                with job_session(self.app) as session:
                    results[name] = task(session, now)
        return results

    def verify(self) -> list:
        return self.arrange(lambda s: [str(d) for d in verification.verify(s)])


def _seconds(n: int):
    from datetime import timedelta
    return timedelta(seconds=n)


def build_shop(app, tenant) -> Shop:
    shop = Shop(app=app, tenant=tenant, pos_key=f"register-{uuid.uuid4().hex[:8]}")

    def work(session):
        now = utcnow()
        store = Store(company_id=tenant.company_id, name="Corner shop", address="Lenina 1",
                      city="Moscow", latitude=55.75, longitude=37.61, channels="", created_at=now)
        session.add(store)
        session.flush()
        terminal = Terminal(company_id=tenant.company_id, store_id=store.id, name="Register 1",
                            state="ACTIVE", pos_key=shop.pos_key, created_at=now, updated_at=now)
        session.add(terminal)
        session.flush()
        shop.store_id, shop.terminal_id = store.id, terminal.id
    shop.arrange(work)
    return shop


@dataclass
class Register:
    """The register's side of the API: each call with a fresh Idempotency-Key unless given."""

    client: object
    shop: Shop
    pos: bool = True
    last: object = field(default=None, repr=False)

    def headers(self, key: str | None = None, **more) -> dict:
        extra = {"X_Loyalty_Pos_Key": self.shop.pos_key} if self.pos else {}
        return self.shop.tenant.headers(Idempotency_Key=key or uuid.uuid4().hex, **extra, **more)

    def call(self, method: str, path: str, body: dict | None = None, *, key: str | None = None,
             expect: int | None = None, **headers):
        response = self.client.open(path, method=method, json=body,
                                    headers=self.headers(key, **headers))
        self.last = response
        if expect is not None:
            assert response.status_code == expect, (response.status_code, response.get_json())
        return response

    def open(self, customer_id: str, receipt: str | None = None, *, expect: int | None = 201,
             **more):
        body = {"externalReceiptId": receipt or f"R-{uuid.uuid4().hex[:12]}",
                "customerId": customer_id, **more}
        return self.call("POST", "/v1/checkout-sessions", body, expect=expect).get_json()

    def quote(self, session_id: str, lines: list[dict], redeem: str | None = None, *,
              expect: int | None = 201):
        body = {"lines": lines}
        if redeem is not None:
            body["redeemAmount"] = redeem
        return self.call("POST", f"/v1/checkout-sessions/{session_id}/quote", body,
                         expect=expect).get_json()

    def hold(self, session_id: str, quote_id: str, amount: str | None = None, *,
             expect: int | None = 201):
        body = {"quoteId": quote_id}
        if amount is not None:
            body["amount"] = amount
        return self.call("POST", f"/v1/checkout-sessions/{session_id}/hold", body,
                         expect=expect).get_json()

    def release(self, session_id: str, reason: str | None = None, *, expect: int | None = 200):
        body = {} if reason is None else {"reason": reason}
        return self.call("DELETE", f"/v1/checkout-sessions/{session_id}/hold", body,
                         expect=expect).get_json()

    def commit(self, session_id: str, quote_id: str, *, expect: int | None = 201):
        return self.call("POST", f"/v1/checkout-sessions/{session_id}/commit",
                         {"quoteId": quote_id}, expect=expect).get_json()

    def return_lines(self, sale_id: str, lines: list[tuple[str, str]], *, expect: int | None = 201):
        body = {"lines": [{"lineId": line_id, "quantity": quantity} for line_id, quantity in lines]}
        return self.call("POST", f"/v1/sales/{sale_id}/returns", body, expect=expect).get_json()

    def offline(self, customer: dict, lines: list[dict], sold_at: str, receipt: str | None = None,
                *, key: str | None = None, expect: int | None = 201, **more):
        """A sale made offline, sent now; `customer` names them ({"customerId": …} or
        phone, cardNumber)."""
        body = {"externalReceiptId": receipt or f"R-{uuid.uuid4().hex[:12]}", "soldAt": sold_at,
                "customer": customer, "lines": lines, **more}
        return self.call("POST", "/v1/offline-sales", body, key=key, expect=expect).get_json()

    def lookup(self, receipt: str, *, expect: int | None = 200):
        response = self.client.get(f"/v1/sales/by-external-receipt/{receipt}",
                                   headers=self.shop.tenant.headers())
        if expect is not None:
            assert response.status_code == expect, (response.status_code, response.get_json())
        return response.get_json()

    def held(self, customer_id: str, lines: list[dict], receipt: str | None = None):
        """A session with a quote of `lines` and its redemption held: (session, quote, hold)."""
        session = self.open(customer_id, receipt)
        quote = self.quote(session["id"], lines)
        return session, quote, self.hold(session["id"], quote["id"])

    def checkout(self, customer_id: str, lines: list[dict], *, redeem: str | None = None,
                 hold: bool = True) -> dict:
        """A whole receipt: session → quote → hold (when the quote redeems) → commit."""
        session = self.open(customer_id)
        quote = self.quote(session["id"], lines, redeem)
        held = None
        if hold and quote["discount"] != "0.00":
            held = self.hold(session["id"], quote["id"])
        sale = self.commit(session["id"], quote["id"])
        return {"session": session, "quote": quote, "hold": held, "sale": sale}


@pytest.fixture
def shop(app, tenant) -> Shop:
    return build_shop(app, tenant)


@pytest.fixture
def register(client, shop) -> Register:
    return Register(client, shop)
