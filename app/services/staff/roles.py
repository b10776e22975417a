"""What each role may do: the one table every page and action of the portal asks."""
from __future__ import annotations

from app.services.tenancy.scopes import ALL_SCOPES

OWNER, MANAGER, ACCOUNTANT, SUPPORT = "owner", "manager", "accountant", "support"
ROLES = (OWNER, MANAGER, ACCOUNTANT, SUPPORT)

# An action's name → the roles that may take it. A page or action not named here is refused
# to everyone: a new one has to be given its roles.
MAY = {
    "dashboard": {OWNER, MANAGER, ACCOUNTANT},
    "reports": {OWNER, MANAGER, ACCOUNTANT},
    "customers": {OWNER, MANAGER, ACCOUNTANT, SUPPORT},
    "adjust": {OWNER, MANAGER, SUPPORT},  # support within the limit: adjustment_limit
    "program": {OWNER, MANAGER},
    "locations": {OWNER, MANAGER},
    "keys": {OWNER},
    # Managers too, as stores and the program: endpoints only reach hosts the operator allowed,
    # and a manager already sees the customers the events speak of.
    "webhooks": {OWNER, MANAGER},
    "staff": {OWNER},
    "audit": {OWNER},
}


def may(role: str, action: str) -> bool:
    return role in MAY.get(action, ())


def adjustment_limit(role: str, support_limit: int) -> int | None:
    """The most (in kopecks, either way) one adjustment by this role may move; None: no limit
    beyond the ledger's own."""
    return support_limit if role == SUPPORT else None


def grantable_scopes(role: str) -> frozenset[str]:
    """The API scopes a member of this role may put on a key they issue, rotate or revoke: no
    key stronger than the member. Only owners manage keys, and an owner may give any."""
    return frozenset(ALL_SCOPES) if role == OWNER else frozenset()
