"""The scopes a key can hold: the spec's twelve, plus the webhook ones, the program's
(docs/api.md#keys), the reports' (docs/api.md#reports) and the audit record's."""

ALL_SCOPES = (
    "company:read", "program:read", "subscription:read",
    "customers:read", "customers:write", "ledger:write",
    "checkout:write", "products:write",
    "locations:read", "locations:write",
    "credentials:read", "credentials:write",
    "webhooks:read", "webhooks:write",
    "program:write", "reports:read", "audit:read",
)
