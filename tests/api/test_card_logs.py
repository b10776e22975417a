"""No log line carries a card token or a gift-card code (they travel in the path), the
framework's own included: a request whose commit fails (the database restarting, failing over)
is logged by Flask as `Exception on <path> [GET]`."""
from __future__ import annotations

from contextlib import contextmanager
from urllib.parse import quote

import pytest
from sqlalchemy import event
from sqlalchemy.exc import OperationalError

from testbed.cards import make_customer
from tests.api.test_gift_cards import issue
from tests.log_lines import lines_of, written_log


@contextmanager
def commits_failing(app):
    """Every COMMIT of the app's connections fails as one to a server that went away does: the
    connection is lost, and the pool makes a new one for the next request."""
    def refuse(connection):
        connection.invalidate()
        raise OperationalError("COMMIT", None, ConnectionError("server closed the connection"),
                               connection_invalidated=True)

    engine = app.extensions["engine"]
    event.listen(engine, "commit", refuse)
    try:
        yield
    finally:
        event.remove(engine, "commit", refuse)


def _paths(tenant, db):
    customer = make_customer(db, tenant.company_id)
    [code] = issue(db, tenant.company_id)
    return {"card page": (f"/cards/{customer.card_token}", {}, customer.card_token),
            "gift card": (f"/v1/gift-cards/{code}", tenant.headers(), code),
            "gift card as typed": (f"/v1/gift-cards/{code[:8].lower()}-{code[8:]}",
                                   tenant.headers(), code[8:]),
            "gift card in groups": ("/v1/gift-cards/" + quote(f"{code[:8]} {code[8:12]} {code[12:]}"),
                                    tenant.headers(), code[8:12])}


@pytest.mark.parametrize("name", ["card page", "gift card", "gift card as typed",
                                  "gift card in groups"])
def test_a_request_whose_commit_fails_is_logged_with_its_secret_masked(app, client, tenant, db,
                                                                        name):
    path, headers, secret = _paths(tenant, db)[name]
    with written_log() as written, commits_failing(app):
        response = client.get(path, headers=headers)
    assert (response.status_code, response.get_json()["code"]) == (503, "database_unavailable")
    failures = [line for line in lines_of(written) if line["message"].startswith("Exception on")]
    assert len(failures) == 1, written.getvalue()  # the framework's line was written...
    assert failures[0]["message"].endswith("/*** [GET]")  # ...naming the path, masked
    assert secret not in written.getvalue()
