# Two commands do all the set-up: `make run` and `make test`.
# The first of Python 3.11, 3.12 and 3.13 that runs here (a version manager's shim may not).
PYTHON ?= $(shell for p in python3.11 python3.12 python3.13 python3; do \
	$$p -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] < (3, 14))' 2>/dev/null \
	&& { echo $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
SERVE_STAMP := $(VENV)/.installed-serve
STAMP := $(VENV)/.installed
export FLASK_APP := wsgi

PORT ?= 8000
TEST_POSTGRES_URL ?= postgresql://postgres@127.0.0.1:5432/postgres
TEST_REDIS_URL ?= redis://127.0.0.1:6379/0
# Run again through PgBouncer in transaction pooling, over a database in Asia/Kathmandu:
# the register, webhooks, upkeep (expiry, bonuses, tier spends, the worker) and the races.
PGBOUNCER_TESTS ?= tests/fleet tests/checkout tests/webhooks tests/program tests/worker \
	tests/api/test_points_expiry.py tests/api/test_otp_concurrency.py tests/api/test_rewards_concurrency.py

.PHONY: run test test-sqlite test-postgres install install-serve migrate demo worker bench clean

# Serving needs the package alone; the suite adds the test extras on top.
$(SERVE_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(SERVE_STAMP)

$(STAMP): $(SERVE_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

install-serve: $(SERVE_STAMP)

migrate: install-serve
	$(BIN)/flask db upgrade

demo: migrate
	@echo "Demo API key (shown once):"
	@$(BIN)/flask demo | tail -n 1

run: demo
	@echo "Serving on http://127.0.0.1:$(PORT)"
	$(BIN)/gunicorn wsgi:app --bind 127.0.0.1:$(PORT) --workers 2

worker: install-serve
	$(BIN)/python -m worker

# The whole suite, twice: on SQLite, then on PostgreSQL with Redis; then PGBOUNCER_TESTS once
# more, through PgBouncer (tests/bouncer.py).
test: test-sqlite test-postgres

test-sqlite: install
	env -u DATABASE_URL -u REDIS_URL $(BIN)/python -m pytest -q -m "not postgres and not redis and not deployed" $(PYTEST_ARGS)

test-postgres: install
	@if $(BIN)/python -m tests.services_up "$(TEST_POSTGRES_URL)" "$(TEST_REDIS_URL)"; then \
		DATABASE_URL="$(TEST_POSTGRES_URL)" REDIS_URL="$(TEST_REDIS_URL)" \
		$(BIN)/python -m pytest -q $(PYTEST_ARGS) && \
		TEST_THROUGH_PGBOUNCER=1 DATABASE_URL="$(TEST_POSTGRES_URL)" REDIS_URL="$(TEST_REDIS_URL)" \
		$(BIN)/python -m pytest -q $(PGBOUNCER_TESTS); \
	elif [ "$$CI" = "true" ]; then \
		echo "PostgreSQL or Redis is not reachable: the PostgreSQL pass cannot run under CI"; exit 1; \
	else \
		echo "SKIPPED: PostgreSQL + Redis pass (start them, or set TEST_POSTGRES_URL / TEST_REDIS_URL)"; \
	fi

bench: install
	@cat bench/README.md

clean:
	rm -rf $(VENV) instance .pytest_cache
