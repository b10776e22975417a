"""Loyalty cards, their page and Wallet pass, and gift cards."""
