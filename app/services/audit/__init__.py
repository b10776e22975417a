"""The audit record: who changed what, and from where, whichever way the change came in (the
portal, an API key, an operator's command)."""
