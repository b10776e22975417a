"""The background worker: RQ jobs (webhook delivery) and periodic upkeep."""
