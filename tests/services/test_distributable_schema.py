"""Every tenant table can be distributed by company (docs/api.md#operators, #limits;
docs/scaling.md): in the migrated database, its primary key, unique keys and unique indexes lead
with `company_id`, and a foreign key to another tenant table leads with `company_id` on both sides.
The tables without a company are the ones Citus would copy to every node (reference tables)."""
from __future__ import annotations

from sqlalchemy import inspect

# staff_emails holds each back-office email once in the service; staff_sign_in_failures counts
# failures by an email that may be no one's.
REFERENCE_TABLES = {"companies", "allowed_webhook_hosts", "sweep_marks", "staff_emails",
                    "staff_sign_in_failures"}
OURS = "alembic_version"


def _schema(app):
    inspector = inspect(app.extensions["engine"])
    return inspector, [name for name in inspector.get_table_names() if name != OURS]


def test_only_the_reference_tables_have_no_company(app):
    inspector, tables = _schema(app)
    without = {name for name in tables
               if "company_id" not in {column["name"] for column in inspector.get_columns(name)}}
    assert without == REFERENCE_TABLES


def test_every_key_of_a_tenant_table_leads_with_its_company(app):
    inspector, tables = _schema(app)
    wrong = []
    for name in sorted(set(tables) - REFERENCE_TABLES):
        keys = [("primary key", inspector.get_pk_constraint(name)["constrained_columns"])]
        keys += [(f"unique {u['name']}", u["column_names"])
                 for u in inspector.get_unique_constraints(name)]
        keys += [(f"unique index {i['name']}", i["column_names"])
                 for i in inspector.get_indexes(name) if i["unique"]]
        for foreign in inspector.get_foreign_keys(name):
            if foreign["referred_table"] in REFERENCE_TABLES:
                continue
            keys.append((f"foreign key to {foreign['referred_table']}",
                         foreign["constrained_columns"]))
            keys.append((f"foreign key to {foreign['referred_table']} (referred)",
                         foreign["referred_columns"]))
        wrong += [f"{name}: {what} {columns}" for what, columns in keys
                  if not columns or columns[0] != "company_id"]
    assert wrong == []
