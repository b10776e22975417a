"""Stores, terminals, cashiers and each store's catalog."""
