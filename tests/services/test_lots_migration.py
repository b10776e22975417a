"""Migration 0011 on a database made before it: every account gets the lots that make
Σ remaining = max(0, Σ ACTIVE entries) hold, and the points keep working afterwards."""
from __future__ import annotations

from datetime import timedelta

from alembic import command
from sqlalchemy import inspect, select, text

from app.database.engine import make_engine, utcnow
from app.database.migrate import alembic_config, upgrade
from app.models import RewardLot
from app.services.rewards import accounts, verification
from app.services.transactions import make_session_factory

BEFORE = "0010_deliveries_by_event"


def _populate(connection, now) -> None:
    """Two companies as release 0010 left them, written in its own columns."""
    rows = {"companies": [], "programs": [], "customers": [], "reward_accounts": [],
            "ledger_entries": []}
    # (company, customer, [(amount, status)]): a balance, a debt, pending only, nothing.
    ledgers = [("c1", "u1", [(1000, "ACTIVE"), (-300, "ACTIVE"), (500, "PENDING")]),
               ("c1", "u2", [(200, "ACTIVE"), (-500, "ACTIVE")]),
               ("c2", "u3", [(700, "PENDING")]),
               ("c2", "u4", [])]
    for company in ("c1", "c2"):
        rows["companies"].append({"id": company, "name": company, "created_at": now})
        rows["programs"].append({"company_id": company, "id": f"p-{company}", "name": "bonuses",
                                 "accrual_bp": 500, "max_redeem_bp": 3000,
                                 "accrual_delay_days": 0, "hold_ttl_seconds": 900,
                                 "enrollment_requires_otp": False,
                                 "clawback_policy": "UNLIMITED", "created_at": now})
    for n, (company, customer, entries) in enumerate(ledgers):
        rows["customers"].append({"company_id": company, "id": customer,
                                  "phone": f"+7912000000{n}", "first_name": "Анна",
                                  "card_number": f"200000000{n:03d}0", "card_token": f"t{n}",
                                  "created_at": now})
        rows["reward_accounts"].append({
            "company_id": company, "customer_id": customer,
            "available": sum(a for a, s in entries if s == "ACTIVE"),
            "pending": sum(a for a, s in entries if s == "PENDING"), "reserved": 0,
            "next_maturity_at": None, "updated_at": now})
        rows["ledger_entries"] += [
            {"company_id": company, "id": f"{customer}-e{i}", "customer_id": customer,
             "type": "ADJUSTMENT", "amount": amount, "status": status, "available_at": now,
             "created_at": now} for i, (amount, status) in enumerate(entries)]
    for table, values in rows.items():
        for row in values:
            columns = ", ".join(row)
            connection.execute(text(f"INSERT INTO {table} ({columns}) VALUES "
                                    f"({', '.join(':' + name for name in row)})"), row)


def test_the_migration_gives_every_existing_account_its_lots(fresh_database):
    upgrade(fresh_database, BEFORE)
    engine = make_engine(fresh_database)
    now = utcnow()
    with engine.begin() as connection:
        _populate(connection, now.replace(tzinfo=None)
                  if engine.dialect.name == "sqlite" else now)

    upgrade(fresh_database)
    session = make_session_factory(engine)()
    lots = {lot.customer_id: (lot.id, lot.amount, lot.remaining, lot.expires_at)
            for lot in session.scalars(select(RewardLot))}
    assert lots == {"u1": ("u1", 700, 700, None)}  # the debt, pending only, nothing: no lot
    assert verification.verify(session) == []
    program = session.execute(text("SELECT points_lifetime_days, expiry_reminder_days "
                                   "FROM programs")).all()
    assert [tuple(row) for row in program] == [(None, 7), (None, 7)]

    # Afterwards the points work as if they had always been lots: a debit takes from the
    # brought-forward lot; a credit first pays u2's debt.
    accounts.adjust(session, "c1", "u1", amount=-200, basis="spent", now=utcnow())
    accounts.adjust(session, "c1", "u2", amount=500, basis="goodwill", now=utcnow(),
                    expires_at=utcnow() + timedelta(days=1))
    session.commit()
    assert verification.verify(session) == []
    remaining = dict(session.execute(select(RewardLot.customer_id, RewardLot.remaining)).all())
    assert remaining == {"u1": 500, "u2": 200}
    session.close()

    command.downgrade(alembic_config(fresh_database), BEFORE)
    with engine.connect() as connection:
        assert "reward_lots" not in inspect(connection).get_table_names()
    engine.dispose()
