"""Every transition of docs/api.md#states (session, hold, sale) and every 409 of the flow."""
from datetime import datetime, timedelta

from sqlalchemy import update

from app.database.engine import utcnow
from app.models import LedgerEntry, RewardAccount
from app.services.checkout import holds
from tests.checkout.conftest import line
from worker.periodic import TASKS

RECEIPT = [line("1", "100.00"), line("2", "50.00")]  # 45.00 redeemable at 30 %


def _code(register):
    return register.last.get_json()["code"]


def test_open_held_committed(register, shop):
    customer = shop.customer("100.00")
    session = register.open(customer)
    assert shop.state(session["id"]) == ("OPEN", [])
    quote = register.quote(session["id"], RECEIPT)
    hold = register.hold(session["id"], quote["id"])
    assert shop.state(session["id"]) == ("HELD", ["ACTIVE"])
    assert hold["checkoutSessionId"] == session["id"] and hold["releasedAt"] is None
    sale = register.commit(session["id"], quote["id"])
    assert shop.state(session["id"]) == ("COMMITTED", ["CAPTURED"])
    assert sale["checkoutSessionId"] == session["id"] and sale["redeemed"] == "45.00"
    assert shop.events("checkout.hold.created") == [hold]
    assert shop.events("sale.committed") == [sale]


def test_a_quote_only_in_open(register, shop):
    customer = shop.customer("100.00")
    session = register.open(customer)
    quote = register.quote(session["id"], RECEIPT)
    requote = register.quote(session["id"], RECEIPT)  # OPEN again and again: the latest counts
    register.hold(session["id"], quote["id"], expect=409)
    assert _code(register) == "invalid_state"
    register.hold(session["id"], requote["id"])
    register.quote(session["id"], RECEIPT, expect=409)
    assert _code(register) == "invalid_state"
    register.commit(session["id"], requote["id"])
    register.quote(session["id"], RECEIPT, expect=409)
    assert _code(register) == "invalid_state"


def test_hold_refusals(register, shop):
    customer = shop.customer("10.00")
    session = register.open(customer)
    other = register.open(customer)
    quote = register.quote(session["id"], RECEIPT)
    other_quote = register.quote(other["id"], RECEIPT)
    assert quote["discount"] == other_quote["discount"] == "10.00"

    register.hold(session["id"], "no-such-quote", expect=404)
    register.hold(session["id"], other_quote["id"], expect=404)  # a quote of another session
    register.hold(session["id"], quote["id"], amount="10.01", expect=422)
    assert register.last.get_json()["detail"][0]["loc"] == ["body", "amount"]
    register.hold(session["id"], quote["id"], amount="0.00", expect=422)
    register.hold(session["id"], quote["id"], amount="4.00")
    register.hold(session["id"], quote["id"], expect=409)
    assert _code(register) == "hold_already_active"
    # The other session's quote saw 10.00; only 6.00 is left.
    register.hold(other["id"], other_quote["id"], expect=409)
    assert _code(register) == "insufficient_balance"
    register.hold(other["id"], other_quote["id"], amount="6.00")
    assert shop.account(customer) == {"available": "0.00", "pending": "0.00", "reserved": "10.00"}


def test_a_quote_that_redeems_nothing_cannot_be_held(register, shop):
    customer = shop.customer("10.00")
    session = register.open(customer)
    zero = register.quote(session["id"], RECEIPT, redeem="0")
    assert (zero["discount"], zero["redemption"]["allowed"]) == ("0.00", True)
    register.hold(session["id"], zero["id"], expect=409)
    assert _code(register) == "invalid_state"


def test_release_returns_to_open(register, shop):
    customer = shop.customer("100.00")
    session = register.open(customer)
    register.release(session["id"], expect=409)
    assert _code(register) == "invalid_state"
    quote = register.quote(session["id"], RECEIPT)
    register.hold(session["id"], quote["id"])
    released = register.release(session["id"], "card declined")
    assert (released["state"], released["amount"]) == ("RELEASED", "45.00")
    assert released["releasedAt"] is not None
    assert shop.state(session["id"]) == ("OPEN", ["RELEASED"])
    assert shop.account(customer) == {"available": "100.00", "pending": "0.00", "reserved": "0.00"}
    assert shop.events("checkout.hold.released") == [released]
    register.release(session["id"], expect=409)
    # OPEN again: quote, hold and commit as before.
    quote = register.quote(session["id"], RECEIPT, redeem="5.00")
    register.hold(session["id"], quote["id"])
    assert register.commit(session["id"], quote["id"])["redeemed"] == "5.00"
    register.release(session["id"], expect=409)
    assert _code(register) == "invalid_state"
    assert shop.verify() == []


def test_commit_in_open_redeems_nothing_and_only_once(register, shop):
    customer = shop.customer("100.00")
    session = register.open(customer)
    quote = register.quote(session["id"], RECEIPT)
    assert quote["discount"] == "45.00"
    old = quote
    quote = register.quote(session["id"], RECEIPT)
    register.commit(session["id"], old["id"], expect=409)  # not the latest quote
    assert _code(register) == "invalid_state"
    register.commit(session["id"], "no-such-quote", expect=404)
    sale = register.commit(session["id"], quote["id"])
    # No hold: no redemption, and the accrual is on the full amounts (5 % of 150.00).
    assert (sale["redeemed"], sale["accrued"]) == ("0.00", "7.50")
    assert [l["discount"] for l in sale["lines"]] == ["0.00", "0.00"]
    assert shop.account(customer)["available"] == "107.50"
    register.commit(session["id"], quote["id"], expect=409)
    assert _code(register) == "invalid_state"
    register.hold(session["id"], quote["id"], expect=409)
    assert _code(register) == "invalid_state"


def test_an_expired_hold_is_released_on_first_touch(register, shop):
    customer = shop.customer("100.00")
    session, quote, _ = register.held(customer, RECEIPT)
    shop.age_holds()
    # Quoting touches the session: the hold goes, its bonuses come back, the quote sees them.
    quote = register.quote(session["id"], RECEIPT)
    assert quote["discount"] == "45.00"
    assert shop.state(session["id"]) == ("OPEN", ["EXPIRED"])
    assert shop.account(customer)["reserved"] == "0.00"
    [expired] = shop.events("checkout.hold.expired")
    assert (expired["state"], expired["amount"]) == ("EXPIRED", "45.00")
    # A hold touching an expired one replaces it.
    register.hold(session["id"], quote["id"])
    shop.age_holds()
    register.hold(session["id"], quote["id"])
    assert shop.state(session["id"]) == ("HELD", ["EXPIRED", "EXPIRED", "ACTIVE"])
    assert shop.account(customer)["reserved"] == "45.00"
    assert shop.verify() == []


def test_a_commit_after_the_hold_expired_redeems_nothing(register, shop):
    customer = shop.customer("100.00")
    session, quote, _ = register.held(customer, RECEIPT)
    shop.age_holds()
    sale = register.commit(session["id"], quote["id"])
    assert (sale["redeemed"], sale["accrued"]) == ("0.00", "7.50")
    assert shop.state(session["id"]) == ("COMMITTED", ["EXPIRED"])
    assert shop.account(customer) == {"available": "107.50", "pending": "0.00", "reserved": "0.00"}
    assert shop.verify() == []


def test_releasing_an_expired_hold_answers_expired(register, shop):
    customer = shop.customer("100.00")
    session, quote, _ = register.held(customer, RECEIPT)
    shop.age_holds()
    released = register.release(session["id"])
    assert released["state"] == "EXPIRED"
    assert shop.events("checkout.hold.expired") == [released]
    assert shop.state(session["id"]) == ("OPEN", ["EXPIRED"])


def test_the_periodic_job_expires_holds(register, shop):
    assert ("expire holds", holds.expire_holds) in TASKS
    customer = shop.customer("100.00")
    session, quote, hold = register.held(customer, RECEIPT)
    assert shop.upkeep()["expire holds"] == 0  # not yet
    assert shop.upkeep(seconds_later=901)["expire holds"] == 1  # holdTtlSeconds is 900
    assert shop.state(session["id"]) == ("OPEN", ["EXPIRED"])
    assert shop.account(customer)["available"] == "100.00"
    [expired] = shop.events("checkout.hold.expired")
    assert expired == {**hold, "state": "EXPIRED", "releasedAt": expired["releasedAt"]}
    assert shop.upkeep(seconds_later=901)["expire holds"] == 0
    assert shop.verify() == []


def test_sessions_expire_after_24_hours_releasing_their_hold(register, shop):
    assert ("expire checkout sessions", holds.expire_sessions) in TASKS
    customer = shop.customer("100.00")
    idle = register.open(customer)
    held = register.open(customer)
    quote = register.quote(held["id"], RECEIPT)
    register.hold(held["id"], quote["id"])
    done = register.open(customer)
    register.commit(done["id"], register.quote(done["id"], RECEIPT)["id"])

    assert shop.upkeep(seconds_later=3600)["expire checkout sessions"] == 0
    results = shop.upkeep(seconds_later=24 * 3600 + 1)
    assert results["expire checkout sessions"] == 2
    assert shop.state(idle["id"]) == ("EXPIRED", [])
    assert shop.state(held["id"]) == ("EXPIRED", ["EXPIRED"])  # the hold's 900 s ran out too
    assert shop.state(done["id"])[0] == "COMMITTED"
    assert shop.account(customer)["reserved"] == "0.00"
    assert shop.verify() == []


def test_a_session_past_24_hours_refuses_everything_but_release(register, shop):
    customer = shop.customer("100.00")
    session, quote, _ = register.held(customer, RECEIPT)
    shop.age_sessions()
    register.quote(session["id"], RECEIPT, expect=409)
    assert _code(register) == "invalid_state"
    register.commit(session["id"], quote["id"], expect=409)
    assert _code(register) == "invalid_state"
    # On PostgreSQL both moved the session in the statement that read it; the refusal took
    # each move back with the rest (sessions.read_and_move).
    assert shop.state(session["id"]) == ("HELD", ["ACTIVE"])
    assert register.release(session["id"])["state"] == "RELEASED"
    assert shop.upkeep()["expire checkout sessions"] == 1
    assert shop.state(session["id"]) == ("EXPIRED", ["RELEASED"])


def test_a_session_expiring_with_a_live_hold_releases_it(register, shop):
    shop.program(hold_ttl_seconds=48 * 3600)
    customer = shop.customer("100.00")
    session, quote, _ = register.held(customer, RECEIPT)
    assert shop.upkeep(seconds_later=24 * 3600 + 1)["expire checkout sessions"] == 1
    assert shop.state(session["id"]) == ("EXPIRED", ["RELEASED"])
    [released] = shop.events("checkout.hold.released")
    assert released["state"] == "RELEASED"
    assert shop.account(customer)["available"] == "100.00"


def test_accrual_waits_for_the_delay(register, shop):
    shop.program(accrual_delay_days=14)
    customer = shop.customer("100.00")
    done = register.checkout(customer, RECEIPT)
    sale = done["sale"]
    committed = datetime.fromisoformat(sale["committedAt"].replace("Z", "+00:00"))
    available_at = datetime.fromisoformat(sale["accrualAvailableAt"].replace("Z", "+00:00"))
    assert available_at - committed == timedelta(days=14)
    # 150.00 − 45.00 redeemed = 105.00; 5 % = 5.25, pending for 14 days.
    assert sale["accrued"] == "5.25"
    assert shop.account(customer) == {"available": "55.00", "pending": "5.25", "reserved": "0.00"}
    assert sale["receiptText"][2].startswith("  spendable from ")
    assert sale["receiptText"][3].endswith(" 55.00")
    # Fourteen days on, the next checkout's first touch of the account makes it spendable.
    shop.arrange(lambda s: (
        s.execute(update(LedgerEntry).where(LedgerEntry.company_id == shop.tenant.company_id)
                  .values(available_at=utcnow() - timedelta(seconds=1))),
        s.execute(update(RewardAccount).where(RewardAccount.company_id == shop.tenant.company_id)
                  .values(next_maturity_at=utcnow() - timedelta(seconds=1)))))
    later = register.checkout(customer, [line("1", "10.00")], redeem="1.00")["sale"]
    # 55.00 + 5.25 matured − 1.00 redeemed; 0.45 earned waits again.
    assert later["receiptText"][-1].endswith(" 59.25")
    assert shop.account(customer) == {"available": "59.25", "pending": "0.45", "reserved": "0.00"}
    assert shop.verify() == []


def test_sale_lookup_by_the_registers_receipt_id(register, shop):
    customer = shop.customer("100.00")
    session, quote, _ = register.held(customer, RECEIPT, "2024/0001-A")
    sale = register.commit(session["id"], quote["id"])
    assert register.lookup("2024/0001-A") == sale
    assert register.lookup("2024%2F0001-A") == sale
    register.lookup("no-such-receipt", expect=404)
    too_long = register.lookup("x" * 129, expect=422)
    assert too_long["detail"][0]["loc"] == ["path", "external_receipt_id"]
    register.lookup("x" * 128, expect=404)
