"""The service's world stood up on this machine, for the suite (tests/) and the benchmarks
(bench/) alike: the Procfile's processes, their own PostgreSQL and Redis, the fleet of deploy/
(nginx, PgBouncer), registers at the counter, a tenant's webhook receiver, a stand-in for
Apple's push service and a phone's Wallet, companies, customers and stores. Neither tests/ nor
bench/ is imported from here, and bench/ imports nothing of tests/."""
