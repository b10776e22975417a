"""The HTTP edge around the views (app/api/): what every request passes through on its way in
and out — the request's hooks and its transaction (requests), the body (bodies), the key
(auth), the rate limit's lease (rate_limit), idempotency, the client's address behind a proxy
(proxies) — and what an operator reads of it: the metrics and their scrape (metrics,
monitoring)."""
