"""The reports' tests run a shop's registers, then read the back office's reports."""
from tests.checkout.conftest import register, shop  # noqa: F401
