"""A register's day driven by a client generated from the interface document, unedited: if the
document misstates a shape, a status or a header, the generated code fails here."""
from __future__ import annotations

import uuid
from decimal import Decimal

import pytest

from tests.generated_client import forget_generated, generate, import_generated

PHONE = "+79161234567"


@pytest.fixture(scope="session")
def generated(app, tmp_path_factory):
    directory = tmp_path_factory.mktemp("generated")
    output = generate(app.test_client().get("/openapi.json").get_json(), directory)
    # The generator leaves out what it cannot understand with a warning: nothing may be left out.
    assert "Warning" not in output, output
    yield import_generated(app, directory)
    forget_generated(directory)


def key() -> str:
    return uuid.uuid4().hex


def money(text: str) -> Decimal:
    return Decimal(text)


def test_the_generated_client_names_every_operation_by_its_operation_id(generated):
    api = generated.package_root / "api"
    names = {path.stem for path in api.glob("*/*.py") if path.stem != "__init__"}
    assert {"create_checkout_session", "quote_receipt", "place_hold", "commit_sale",
            "return_lines", "create_customer", "get_reward_account"} <= names
    assert not [name for name in names if name.startswith(("get_v1", "post_v1"))]


def test_a_register_day_through_the_generated_client(generated, tenant):
    m, call = generated.models, generated.operation
    client = generated.client(tenant.key)

    store = call("stores.create_store").sync(client=client, body=m.CreateStoreRequest(
        name="Tverskaya 1", address="Tverskaya st. 1", city="Moscow", latitude=55.76,
        longitude=37.61, channels=[m.StoreChannel.MINIAPP]))
    assert isinstance(store, m.StoreResponse) and store.channels == [m.StoreChannel.MINIAPP]
    terminal = call("terminals.create_terminal").sync(client=client, body=m.CreateTerminalRequest(
        store_id=store.id, name="Register 1", pos_key="POS-1"))
    assert terminal.state is m.TerminalState.ACTIVE

    enrolled = call("customers.create_customer").sync(client=client, body=m.CreateCustomerRequest(
        phone=PHONE, first_name="Anna"))
    assert isinstance(enrolled, m.CustomerResponse)
    # The register retries the enrolment (its answer was lost): the 409 names the customer.
    again = call("customers.create_customer").sync_detailed(
        client=client, body=m.CreateCustomerRequest(phone=PHONE, first_name="Anna"))
    assert again.status_code == 409
    assert isinstance(again.parsed, m.CustomerExistsError)
    assert (again.parsed.code, again.parsed.customer_id) == ("customer_exists", enrolled.id)

    adjusted = call("rewards.adjust_rewards").sync(
        client=client, customer_id=enrolled.id, idempotency_key=key(),
        body=m.RewardAdjustmentRequest(amount="500.00", basis="welcome bonus"))
    assert adjusted.balance.available == "500.00"
    synced = call("catalog.sync_catalog").sync(client=client, idempotency_key=key(),
                                               body=m.CatalogSyncRequest(store_id=store.id, items=[
        m.CatalogSyncItem(sku="MILK", name="Milk", price="100.00"),
        m.CatalogSyncItem(sku="WINE", name="Wine", price="100.00", redeemable=False)]))
    assert isinstance(synced, m.CatalogSyncResponse)

    register = {"client": client, "x_loyalty_pos_key": "POS-1"}
    session = call("checkout.create_checkout_session").sync(
        **register, idempotency_key=key(), body=m.CreateCheckoutSessionRequest(
            external_receipt_id="R-0001", customer_id=enrolled.id,
            cashier=m.CheckoutCashier(external_id="C-7", name="Olga")))
    assert session.state is m.CheckoutSessionState.OPEN and session.terminal_id == terminal.id
    quote = call("checkout.quote_receipt").sync(
        **register, checkout_session_id=session.id, idempotency_key=key(),
        body=m.CreateQuoteRequest(lines=[
            m.QuoteLineRequest(line_id="1", sku="MILK", quantity="2", price="100.00", amount="200.00"),
            m.QuoteLineRequest(line_id="2", sku="WINE", quantity="1", price="100.00", amount="100.00")]))
    assert quote.redemption.allowed and quote.redemption.restriction_reason is None
    assert [line.restriction for line in quote.lines] == [None, m.LineRestriction.ITEM_NOT_REDEEMABLE]
    discount = money(quote.discount)
    assert Decimal("0") < discount <= Decimal("200.00")
    hold = call("checkout.place_hold").sync(**register, checkout_session_id=session.id,
                                            idempotency_key=key(),
                                            body=m.CreateHoldRequest(quote_id=quote.id))
    assert hold.state is m.HoldState.ACTIVE and hold.amount == quote.discount

    commit_key = key()
    commit = call("checkout.commit_sale")
    sale = commit.sync_detailed(**register, checkout_session_id=session.id,
                                idempotency_key=commit_key,
                                body=m.CommitSaleRequest(quote_id=quote.id))
    assert sale.status_code == 201 and "Idempotent-Replayed" not in sale.headers
    assert sale.parsed.state is m.SaleState.COMMITTED and sale.parsed.redeemed == quote.discount
    # The register did not hear the answer and sends the commit again: the same sale.
    replayed = commit.sync_detailed(**register, checkout_session_id=session.id,
                                    idempotency_key=commit_key,
                                    body=m.CommitSaleRequest(quote_id=quote.id))
    assert replayed.headers["Idempotent-Replayed"] == "true"
    assert replayed.parsed.id == sale.parsed.id
    assert sale.headers["X-Request-Id"] != replayed.headers["X-Request-Id"]

    found = call("sales.get_sale_by_receipt").sync(**register, external_receipt_id="R-0001")
    assert found.id == sale.parsed.id
    returned = call("sales.return_lines").sync(
        **register, sale_id=sale.parsed.id, idempotency_key=key(),
        body=m.CreateReturnRequest(lines=[m.ReturnLineRequest(line_id="2", quantity="1")]))
    assert returned.sale_state is m.SaleState.PARTIALLY_RETURNED
    assert returned.restored_redemption == "0.00"  # the wine paid no bonuses

    account = call("rewards.get_reward_account").sync(client=client, customer_id=enrolled.id)
    expected = (money("500.00") - discount + money(sale.parsed.accrued)
                - money(returned.reversed_accrual))
    assert money(account.available) == expected == money(returned.balance.available)
    assert (account.pending, account.reserved) == ("0.00", "0.00")
    activities = call("rewards.list_reward_activities").sync(client=client,
                                                              customer_id=enrolled.id)
    assert {(a.type_, a.status) for a in activities.items} == {
        (m.ActivityType.ADJUSTMENT, m.ActivityStatus.ACTIVE),
        (m.ActivityType.REDEMPTION, m.ActivityStatus.ACTIVE),
        (m.ActivityType.ACCRUAL, m.ActivityStatus.ACTIVE),
        (m.ActivityType.ACCRUAL_REVERSAL, m.ActivityStatus.ACTIVE)}

    # The store manager's evening: the shift by cashier, as the back office reads it.
    from app.database.engine import utcnow
    from app.services.reports.periods import moscow_day
    today = moscow_day(utcnow())
    shift = call("reports.get_register_report").sync(
        client=client, from_=today, to=today, group_by=m.RegisterGrouping.CASHIER)
    assert isinstance(shift, m.RegisterReport) and len(shift.items) == 1
    olga = shift.items[0]
    assert (olga.name, olga.sales, olga.returns) == ("Olga", 1, 1)
    assert money(olga.amount) == Decimal("300.00") - discount
    assert olga.returned_amount == "100.00" and olga.discount == quote.discount
