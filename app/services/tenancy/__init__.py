"""Companies, their API keys and scopes, and the demo company."""
