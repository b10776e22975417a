"""The database plumbing: the engine and the models' base, the UTC timestamp type and the
migrations runner."""
