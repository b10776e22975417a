"""Opening a checkout session: the terminal and store it is bound to, the cashier catalog,
and what it refuses."""
from datetime import datetime, timedelta

from sqlalchemy import select

from app.models import Cashier
from tests.checkout.conftest import Register, line


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_a_session_is_bound_to_the_register_of_the_pos_key_and_its_store(register, shop):
    customer = shop.customer()
    session = register.open(customer, "R-1")
    assert session["externalReceiptId"] == "R-1" and session["customerId"] == customer
    assert (session["terminalId"], session["storeId"]) == (shop.terminal_id, shop.store_id)
    assert session["state"] == "OPEN" and session["cashierId"] is None
    assert _at(session["expiresAt"]) - _at(session["createdAt"]) == timedelta(hours=24)


def test_terminal_id_binds_without_a_pos_key_and_must_agree_with_one(client, shop):
    customer = shop.customer()
    plain = Register(client, shop, pos=False)
    session = plain.open(customer, terminalId=shop.terminal_id)
    assert (session["terminalId"], session["storeId"]) == (shop.terminal_id, shop.store_id)

    register = Register(client, shop)
    register.open(customer, terminalId=shop.terminal_id)  # the same terminal: fine
    register.open(customer, terminalId="another-terminal", expect=422)
    assert register.last.get_json()["detail"][0]["loc"] == ["body", "terminalId"]

    plain.open(customer, terminalId="no-such-terminal", expect=404)
    shop.terminal("DISABLED")
    plain.open(customer, terminalId=shop.terminal_id, expect=403)
    assert plain.last.get_json()["code"] == "terminal_inactive"
    register.open(customer, expect=403)  # its pos key names no ACTIVE terminal any more
    assert register.last.get_json()["code"] == "terminal_inactive"


def test_without_a_terminal_the_store_is_the_given_one_or_none(client, shop):
    customer = shop.customer()
    plain = Register(client, shop, pos=False)
    session = plain.open(customer, storeId=shop.store_id)
    assert (session["terminalId"], session["storeId"]) == (None, shop.store_id)
    session = plain.open(customer)
    assert (session["terminalId"], session["storeId"]) == (None, None)
    plain.open(customer, storeId="no-such-store", expect=404)
    # The terminal's store wins over a storeId given beside it.
    session = Register(client, shop).open(customer, storeId="ignored")
    assert session["storeId"] == shop.store_id


def test_a_session_without_a_store_applies_no_catalog_flags(client, shop):
    shop.catalog({"TOBACCO": (False, False)})
    customer = shop.customer("100.00")
    plain = Register(client, shop, pos=False)
    session = plain.open(customer)
    quote = plain.quote(session["id"], [line("1", "10.00", sku="TOBACCO")])
    assert (quote["discount"], quote["accrual"]) == ("3.00", "0.35")


def test_the_cashier_block_enters_the_cashier_catalog(register, shop, db):
    customer = shop.customer()
    first = register.open(customer, cashier={"externalId": "C-7", "name": "Olga"})
    again = register.open(customer, cashier={"externalId": "C-7", "name": "Olga P."})
    assert first["cashierId"] == again["cashierId"] is not None
    cashiers = db.scalars(select(Cashier).where(Cashier.company_id == shop.tenant.company_id)).all()
    assert [(c.external_id, c.name) for c in cashiers] == [("C-7", "Olga P.")]
    # Safe data only: a PIN is an unknown field.
    register.open(customer, cashier={"externalId": "C-8", "name": "Ivan", "pin": "1234"},
                  expect=422)
    assert register.last.get_json()["detail"][0]["loc"] == ["body", "cashier", "pin"]


def test_unknown_customer_is_404_and_the_body_is_validated(register, shop):
    register.open("no-such-customer", expect=404)
    assert register.last.get_json()["code"] == "not_found"
    customer = shop.customer()
    register.open(customer, "R" * 129, expect=422)
    assert register.last.get_json()["detail"][0]["loc"] == ["body", "externalReceiptId"]
    register.call("POST", "/v1/checkout-sessions", {"customerId": customer}, expect=422)
    assert register.last.get_json()["detail"][0]["loc"] == ["body", "externalReceiptId"]
    register.call("POST", "/v1/checkout-sessions",
                  {"externalReceiptId": "R", "customerId": customer, "companyId": "x"}, expect=422)
    assert register.last.get_json()["detail"][0]["loc"] == ["body", "companyId"]


def test_a_receipt_with_a_sale_cannot_open_another_session(register, shop):
    customer = shop.customer()
    session = register.open(customer, "R-42")
    late = register.open(customer, "R-42")  # a second session before the sale: allowed
    quote = register.quote(session["id"], [line("1", "10.00")])
    register.commit(session["id"], quote["id"])
    register.open(customer, "R-42", expect=409)
    assert register.last.get_json()["code"] == "receipt_already_committed"
    # ... and the session opened before the sale cannot commit it a second time.
    quote = register.quote(late["id"], [line("1", "10.00")])
    register.commit(late["id"], quote["id"], expect=409)
    assert register.last.get_json()["code"] == "receipt_already_committed"
