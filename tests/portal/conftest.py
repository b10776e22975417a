"""The back office's tests: a shop's registers (for the dashboard and the reports), and a
client signed in as a manager of the tenant."""
import pytest

from tests.checkout.conftest import register, shop  # noqa: F401
from tests.portal.helpers import add_staff, sign_in


@pytest.fixture
def manager(app, tenant):
    client = app.test_client()
    add_staff(app, tenant.company_id, "manager@example.com", "manager", name="Mia Manager")
    assert sign_in(client, "manager@example.com").status_code == 303
    return client
