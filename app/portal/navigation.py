"""The sections in the portal's menu, each with the action its role must be allowed: a new
section is one line here (and a module in PAGE_MODULES)."""
from __future__ import annotations

from flask_babel import lazy_gettext as _l

from app.portal.blueprint import bp

SECTIONS = [
    ("dashboard", "portal.home", _l("Dashboard")),
    ("reports", "portal.liability_report", _l("Reports")),
    ("customers", "portal.customers", _l("Customers")),
    ("program", "portal.program", _l("Program")),
    ("locations", "portal.locations", _l("Stores and registers")),
    ("keys", "portal.keys", _l("API keys")),
    ("webhooks", "portal.webhooks", _l("Webhooks")),
    ("staff", "portal.staff", _l("Staff")),
    ("audit", "portal.audit", _l("Audit log")),
]
ROLE_NAMES = {"owner": _l("owner"), "manager": _l("manager"), "accountant": _l("accountant"),
              "support": _l("support")}


@bp.app_context_processor
def _menu() -> dict:
    return {"sections": lambda: SECTIONS, "role_name": lambda role: ROLE_NAMES.get(role, role)}
ENTRY_NAMES = {"ACCRUAL": _l("Accrual"), "REDEMPTION": _l("Redemption"),
               "ADJUSTMENT": _l("Adjustment"), "REDEMPTION_RESTORE": _l("Redemption returned"),
               "ACCRUAL_REVERSAL": _l("Accrual reversed"), "EXPIRY": _l("Expiry"),
               "BONUS": _l("Bonus")}
STATUS_NAMES = {"PENDING": _l("pending"), "ACTIVE": _l("active")}


@bp.app_context_processor
def _names() -> dict:
    return {"entry_name": lambda kind: ENTRY_NAMES.get(kind, kind),
            "status_name": lambda status: STATUS_NAMES.get(status, status)}
