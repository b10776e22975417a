"""The back office's search by a name fragment pages without counting the matches: the walk
in enrolment order finds a common fragment's page, the name index a rare one's; either way the
pages are the directory's own."""
from __future__ import annotations

import pytest

from app.database.engine import utcnow
from app.services.customers import profiles, search
from testbed.cards import make_customer


@pytest.fixture
def crowd(tenant, db):
    names = ["Zina", "Olga", "Zinaida", "Anna"] * 12
    return [make_customer(db, tenant.company_id, first_name=name) for name in names]


@pytest.mark.parametrize("walked", [1_000, 3])  # the walk finds the page; it falls short
def test_uncounted_pages_are_the_counted_directorys(app, tenant, crowd, monkeypatch, walked):
    monkeypatch.setattr(profiles, "WALK_UNCOUNTED", walked)
    session = app.extensions["session_factory"]()
    try:
        counted, total = profiles.directory(session, tenant.company_id, query="zin", offset=0,
                                            limit=100, now=utcnow())
        assert total == 24
        expected = [found.customer.id for found in counted]
        pages, offset = [], 0
        while True:
            found, end = search.find_customers(session, tenant.company_id, "ZIN", offset=offset,
                                               limit=10, now=utcnow())
            pages.append([f.customer.id for f in found])
            if end <= offset + 10:
                break
            offset += 10
        assert [len(page) for page in pages] == [10, 10, 4]
        assert sum(pages, []) == expected
    finally:
        session.close()
