"""The back office's tests: a shop's registers (for the dashboard and the reports), and
clients signed in as a manager or an owner of the tenant."""
import pytest

from tests.checkout.conftest import register, shop  # noqa: F401
from tests.portal.helpers import add_staff, sign_in


def signed_in_member(app, tenant, role: str, name: str):
    client = app.test_client()
    add_staff(app, tenant.company_id, f"{role}@example.com", role, name=name)
    assert sign_in(client, f"{role}@example.com").status_code == 303
    return client


@pytest.fixture
def manager(app, tenant):
    return signed_in_member(app, tenant, "manager", "Mia Manager")


@pytest.fixture
def owner(app, tenant):
    return signed_in_member(app, tenant, "owner", "Olga Owner")
