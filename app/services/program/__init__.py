"""The program marketing runs from the back office: its settings and its campaigns (CONTRACT §15)."""
