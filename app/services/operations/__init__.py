"""What the operator watches and what the service stops keeping."""
