"""Reward accounts and the ledger that changes them."""
