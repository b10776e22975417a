"""The scopes a key can hold: the spec's twelve, plus the webhook ones, the program's
(CONTRACT §3), the reports' (§17) and the audit record's."""

ALL_SCOPES = (
    "company:read", "program:read", "subscription:read",
    "customers:read", "customers:write", "ledger:write",
    "checkout:write", "products:write",
    "locations:read", "locations:write",
    "credentials:read", "credentials:write",
    "webhooks:read", "webhooks:write",
    "program:write", "reports:read", "audit:read",
)
