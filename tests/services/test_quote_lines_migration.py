"""Migration 0027: a quote's lines are kept packed; the way down writes them back as text."""
from __future__ import annotations

import zlib

from alembic import command
from sqlalchemy import inspect, text

from app.database.engine import make_engine, utcnow
from app.database.migrate import alembic_config, upgrade

REVISION, BEFORE = "0027_quote_lines_zlib", "0026_idempotency_answers_zlib"
LINES = '{"maxRedeemBp":3000,"lines":[{"lineId":"1","name":"Чай","amount":10000}]}'
ROWS = [
    ("companies", {"id": "c1", "name": "c1", "created_at": None}),
    ("customers", {"company_id": "c1", "id": "u1", "phone": "+79120000001", "first_name": "Анна",
                   "card_number": "2000000000010", "card_token": "t1", "created_at": None}),
    ("checkout_sessions", {"company_id": "c1", "id": "s1", "external_receipt_id": "R-1",
                           "customer_id": "u1", "state": "OPEN", "expires_at": None,
                           "created_at": None}),
    ("quotes", {"company_id": "c1", "id": "q1", "checkout_session_id": "s1",
                "packed_lines": zlib.compress(LINES.encode("utf-8")), "total_amount": 10000,
                "redeemable": 3000, "discount": 0, "accrual": 500, "created_at": None}),
]


def test_packed_lines_go_back_to_text_on_the_way_down(fresh_database):
    upgrade(fresh_database, REVISION)
    engine = make_engine(fresh_database)
    with engine.begin() as connection:
        for table, row in ROWS:
            row = {name: utcnow() if value is None else value for name, value in row.items()}
            connection.execute(text(f"INSERT INTO {table} ({', '.join(row)})"
                                    f" VALUES ({', '.join(':' + name for name in row)})"), row)

    command.downgrade(alembic_config(fresh_database), BEFORE)
    with engine.connect() as connection:
        assert connection.scalar(text("SELECT lines FROM quotes")) == LINES
        columns = {column["name"]: column for column in inspect(connection).get_columns("quotes")}
    assert "packed_lines" not in columns and columns["lines"]["nullable"] is False
    engine.dispose()
