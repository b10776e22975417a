"""The program's tests run at the register: its shop and register fixtures."""
from tests.checkout.conftest import register, shop  # noqa: F401
