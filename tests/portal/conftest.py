"""The back office's tests that run a shop's registers (the dashboard, the reports)."""
from tests.checkout.conftest import register, shop  # noqa: F401
