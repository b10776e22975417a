"""`python -m tests.services_up POSTGRES_URL REDIS_URL`: exit 0 when both answer."""
import sys

import psycopg2
import redis


def main(postgres_url: str, redis_url: str) -> int:
    try:
        psycopg2.connect(postgres_url, connect_timeout=3).close()
        redis.Redis.from_url(redis_url, socket_connect_timeout=3).ping()
    except Exception as exc:  # what is down, for the person reading the output
        print(f"not reachable: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
