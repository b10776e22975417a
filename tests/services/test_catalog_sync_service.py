"""Catalog reconciliation at the service level: bulk statements, exact values, and the fast
item check that stands in for the item schema on 100,000-item snapshots."""
from __future__ import annotations

import marshmallow as ma
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import event, select, text

from app.api.catalog_schemas import CatalogSyncItem, _plain_entry
from app.database.engine import utcnow
from app.models import CatalogItem
from app.services.errors import InvalidField, NotFound
from app.services.locations import catalog, stores
from app.services.locations.catalog import CatalogEntry
from testbed.tenants import make_tenant
from tests.concurrency import run_together


@pytest.fixture
def store_id(app, tenant):
    session = app.extensions["session_factory"]()
    store = stores.create_store(session, tenant.company_id, name="Main", address="Lenina 1",
                                city="Moscow", latitude=55.7, longitude=37.6, channels=[],
                                timezone="Europe/Moscow", now=utcnow())
    session.commit()
    session.close()
    return store.id


def _sync(app, company_id, store_id, entries, allow_empty=False):
    session = app.extensions["session_factory"]()
    try:
        result = catalog.sync_catalog(session, company_id, store_id, entries,
                                      allow_empty=allow_empty, now=utcnow())
        session.commit()
        return (result.received, result.created, result.updated, result.removed, result.unchanged)
    finally:
        session.close()


def _stored(db, company_id, store_id) -> dict[str, CatalogEntry]:
    db.expire_all()
    return {row.sku: CatalogEntry(row.sku, row.name, row.price, row.barcode, row.category,
                                  row.redeemable, row.accruable)
            for row in db.scalars(select(CatalogItem).where(CatalogItem.company_id == company_id,
                                                            CatalogItem.store_id == store_id))}


def test_awkward_text_is_stored_exactly(app, db, tenant, store_id):
    entries = [
        CatalogEntry("tab\tsku", "name\twith\ttabs", 1),
        CatalogEntry("nl", "line\nbreak\r\nand return", 0),
        CatalogEntry("back\\slash", "C:\\path\\N", 99, barcode="\\N", category=""),
        CatalogEntry("unicode", "Молоко 3,2 % «Домик» ☕", 123456789012345678, barcode="", category=None),
        CatalogEntry("flags", "x", 5, redeemable=False, accruable=False),
    ]
    assert _sync(app, tenant.company_id, store_id, entries) == (5, 5, 0, 0, 0)
    assert _stored(db, tenant.company_id, store_id) == {e.sku: e for e in entries}
    assert _sync(app, tenant.company_id, store_id, entries) == (5, 0, 0, 0, 5)


def test_a_backslash_among_nulls_is_stored_exactly(app, db, tenant, store_id):
    # The only special character is one backslash, beside \\N markers of null fields.
    entries = [CatalogEntry("a", "C:\\New", 1), CatalogEntry("b", "plain", 2, barcode="x\\N")]
    _sync(app, tenant.company_id, store_id, entries)
    assert _stored(db, tenant.company_id, store_id) == {e.sku: e for e in entries}


def test_each_compared_field_counts_as_an_update(app, db, tenant, store_id):
    base = CatalogEntry("a", "name", 100, "b", "c", True, True)
    _sync(app, tenant.company_id, store_id, [base])
    for change in ({"name": "other"}, {"price": 101}, {"barcode": None}, {"category": "d"},
                   {"redeemable": False}, {"accruable": False}):
        changed = base._replace(**change)
        assert _sync(app, tenant.company_id, store_id, [changed]) == (1, 0, 1, 0, 0), change
        assert _sync(app, tenant.company_id, store_id, [base]) == (1, 0, 1, 0, 0), change
    assert _stored(db, tenant.company_id, store_id) == {"a": base}


def test_duplicates_empty_and_unknown_store_are_refused_before_any_write(app, db, tenant, store_id):
    _sync(app, tenant.company_id, store_id, [CatalogEntry("a", "n", 1)])
    with pytest.raises(InvalidField) as duplicate:
        _sync(app, tenant.company_id, store_id,
              [CatalogEntry("x", "n", 1), CatalogEntry("a", "n", 1), CatalogEntry("x", "n", 2)])
    assert duplicate.value.loc == ["body", "items", 2, "sku"]
    with pytest.raises(InvalidField) as empty:
        _sync(app, tenant.company_id, store_id, [])
    assert empty.value.loc == ["body", "items"]
    other = make_tenant(app, "Other")
    with pytest.raises(NotFound):
        _sync(app, other.company_id, store_id, [CatalogEntry("a", "n", 1)])
    assert _stored(db, tenant.company_id, store_id) == {"a": CatalogEntry("a", "n", 1)}


def test_the_statements_do_not_grow_with_the_snapshot(app, tenant, store_id):
    engine = app.extensions["engine"]

    def statements_of_two_syncs(size: int) -> list[str]:
        seen: list[str] = []

        def record(conn, cursor, statement, parameters, context, executemany):
            seen.append(statement)

        event.listen(engine, "before_cursor_execute", record)
        try:
            _sync(app, tenant.company_id, store_id,
                  [CatalogEntry(f"{size}-{i}", "n", i) for i in range(size)])
            _sync(app, tenant.company_id, store_id,
                  [CatalogEntry(f"{size}-{i}", "changed" if i % 2 else "n", i) for i in range(1, size)])
        finally:
            event.remove(engine, "before_cursor_execute", record)
        return seen

    small, large = statements_of_two_syncs(10), statements_of_two_syncs(2000)
    assert len(large) == len(small) <= 2 * 11, large  # a sync's own 10, and its event


@pytest.mark.postgres
def test_concurrent_syncs_of_one_store_take_turns(app, db, tenant, store_id):
    snapshots = [[CatalogEntry(f"{n}-{i}", f"snapshot {n}", i) for i in range(2000)] for n in range(4)]
    results = run_together([lambda s=s: _sync(app, tenant.company_id, store_id, s)
                            for s in snapshots])

    assert all(isinstance(r, tuple) for r in results), results
    final = _stored(db, tenant.company_id, store_id)
    assert any(final == {e.sku: e for e in entries} for entries in snapshots)


# The fast item check against the schema it stands in for.

_text = st.one_of(st.text(max_size=70), st.text(alphabet="ab\x00 ", max_size=3),
                  st.sampled_from(["", "x" * 64, "x" * 65, "x" * 255, "x" * 256]))
_value = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.floats(allow_nan=False),
                   _text, st.lists(st.integers(), max_size=1))
_price = st.one_of(_value, st.from_regex(r"-?[0-9]{0,20}(\.[0-9]{0,3})?", fullmatch=True))
_item = st.fixed_dictionaries(
    {"sku": st.one_of(_text, _value), "name": st.one_of(_text, _value), "price": _price},
    optional={"barcode": st.one_of(_text, _value), "category": st.one_of(_text, _value),
              "redeemable": _value, "accruable": _value, "pin": _value},
)
_plain_item = st.fixed_dictionaries(
    {"sku": st.text(min_size=1, max_size=64), "name": st.text(min_size=1, max_size=255),
     "price": st.from_regex(r"[0-9]{1,18}(\.[0-9]{1,2})?", fullmatch=True)},
    optional={"barcode": st.one_of(st.none(), st.text(max_size=64)),
              "category": st.one_of(st.none(), st.text(max_size=255)),
              "redeemable": st.booleans(), "accruable": st.booleans()},
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_plain_item, _item, _value))
def test_the_fast_check_never_accepts_what_the_schema_refuses(item):
    fast = _plain_entry(item)
    try:
        loaded = CatalogSyncItem().load(item)
    except ma.ValidationError:
        assert fast is None
        return
    if fast is not None:
        assert fast == CatalogEntry(**loaded)


def test_the_fast_check_takes_plain_items():
    assert _plain_entry({"sku": "a", "name": "Milk", "price": "89.9"}) == CatalogEntry("a", "Milk", 8990)
    assert _plain_entry({"sku": "a", "name": "b", "price": "0", "barcode": None, "category": "c",
                         "redeemable": False, "accruable": True}) == CatalogEntry("a", "b", 0, None, "c", False, True)


@pytest.mark.postgres
def test_the_planner_settings_end_with_the_reconciliation(app, tenant, store_id):
    session = app.extensions["session_factory"]()
    try:
        catalog.sync_catalog(session, tenant.company_id, store_id, [CatalogEntry("a", "n", 1)],
                             allow_empty=False, now=utcnow())
        settings_now = session.execute(text(
            "SELECT current_setting('enable_nestloop'), current_setting('work_mem')")).one()
        assert tuple(settings_now) == ("on", "4MB")
    finally:
        session.rollback()
        session.close()
