"""Events: the outbox, webhook endpoints, and delivering to them."""
