"""A rotated endpoint's secret (docs/api.md#webhooks): during the grace every delivery carries both
signatures, `v1,<new> v1,<old>`, so a receiver verifying with the reference `standardwebhooks`
library accepts it with either secret; after the grace only the new one verifies. The worker's
own job delivers to a real HTTPS receiver, in the test process, on both databases."""
from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update
from standardwebhooks.webhooks import WebhookVerificationError

from app.database.engine import utcnow
from app.operations.work import transaction
from app.models import WebhookEndpoint
from tests.api.test_customers import enrol
from tests.api.test_webhook_endpoints import rotate
from tests.webhooks.test_delivery import register, verified
from tests.webhooks.test_sealed_codes import deliver_all, worker_app  # noqa: F401 (fixture)

HOUR = 3600


def rotated(client, tenant, endpoint_id, grace: int) -> str:
    response = rotate(client, tenant, endpoint_id, {"gracePeriodSeconds": grace})
    assert response.status_code == 201, response.get_json()
    return response.get_json()["secret"]


def end_grace(app, endpoint_id: str) -> None:
    """As if the grace had run out: the replaced secret's end moves just behind now."""
    with transaction(app) as session:
        session.execute(update(WebhookEndpoint).where(WebhookEndpoint.id == endpoint_id)
                        .values(previous_secret_valid_until=utcnow() - timedelta(seconds=1)))


def signed_by(secret: str, hit) -> bool:
    try:
        verified(secret, hit)
    except WebhookVerificationError:
        return False
    return True


def signatures(hit) -> list[str]:
    return hit.headers["webhook-signature"].split(" ")


def only(signature: str, hit):
    """The hit as a receiver would see it had the header carried this one signature alone."""
    return type(hit)(hit.path, {**hit.headers, "webhook-signature": signature}, hit.body)


def test_a_rotated_endpoints_deliveries_verify_with_both_secrets(
        client, tenant, receiver, worker_app):  # noqa: F811
    endpoint_id, old = register(client, tenant, receiver.url("/ok"), ["customer.created"])
    enrol(client, tenant, phone="+79160000001")  # recorded before the rotation, sent after
    new = rotated(client, tenant, endpoint_id, HOUR)
    enrol(client, tenant, phone="+79160000002")

    deliver_all(worker_app)

    assert len(receiver.hits) == 2
    for hit in receiver.hits:
        assert verified(new, hit) == verified(old, hit)
        assert verified(new, hit)["type"] == "customer.created"
        # The new secret's signature first, then the old one's (v1,<new> v1,<old>).
        first, second = signatures(hit)
        assert signed_by(new, only(first, hit)) and not signed_by(old, only(first, hit))
        assert signed_by(old, only(second, hit)) and not signed_by(new, only(second, hit))


def test_after_the_grace_only_the_new_secret_verifies(
        app, client, tenant, receiver, worker_app):  # noqa: F811
    endpoint_id, old = register(client, tenant, receiver.url("/ok"), ["customer.created"])
    new = rotated(client, tenant, endpoint_id, HOUR)
    end_grace(app, endpoint_id)
    enrol(client, tenant)

    deliver_all(worker_app)

    [hit] = receiver.hits
    assert len(signatures(hit)) == 1
    assert signed_by(new, hit) and not signed_by(old, hit)


def test_without_a_grace_only_the_new_secret_verifies_at_once(
        client, tenant, receiver, worker_app):  # noqa: F811
    endpoint_id, old = register(client, tenant, receiver.url("/ok"), ["customer.created"])
    new = rotated(client, tenant, endpoint_id, 0)
    enrol(client, tenant)

    deliver_all(worker_app)

    [hit] = receiver.hits
    assert len(signatures(hit)) == 1
    assert signed_by(new, hit) and not signed_by(old, hit)


@pytest.mark.parametrize("second_grace", [HOUR, 0])
def test_a_second_rotation_in_the_grace_signs_with_the_secret_it_replaced(
        client, tenant, receiver, worker_app, second_grace):  # noqa: F811
    endpoint_id, first = register(client, tenant, receiver.url("/ok"), ["customer.created"])
    second = rotated(client, tenant, endpoint_id, HOUR)
    third = rotated(client, tenant, endpoint_id, second_grace)
    enrol(client, tenant)

    deliver_all(worker_app)

    [hit] = receiver.hits
    assert signed_by(third, hit) and not signed_by(first, hit)
    assert signed_by(second, hit) is (second_grace > 0)
    assert len(signatures(hit)) == (2 if second_grace else 1)
