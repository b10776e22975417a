"""The program marketing runs from the back office: its settings and its campaigns
(docs/api.md#tiers)."""
