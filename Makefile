# Two commands do all the set-up: `make run` and `make test`.
# The first of Python 3.11, 3.12 and 3.13 that runs here (a version manager's shim may not).
PYTHON ?= $(shell for p in python3.11 python3.12 python3.13 python3; do \
	$$p -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] < (3, 14))' 2>/dev/null \
	&& { echo $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
SERVE_STAMP := $(VENV)/.installed-serve
STAMP := $(VENV)/.installed
# Node tools the suite runs (Spectral), exactly as tests/node/package-lock.json pins them.
NODE_DIR := $(VENV)/node
NODE_STAMP := $(NODE_DIR)/.installed
export FLASK_APP := wsgi

PORT ?= 8000
# Cards' addresses (cardUrl) and the interface document's server follow the port served on.
PUBLIC_BASE_URL ?= http://127.0.0.1:$(PORT)
TEST_POSTGRES_URL ?= postgresql://postgres@127.0.0.1:5432/postgres
TEST_REDIS_URL ?= redis://127.0.0.1:6379/0
# Run again through PgBouncer in transaction pooling, over a database in Asia/Kathmandu: the
# whole suite but the deployment harness, which brings its own processes (about 9 minutes here).
PGBOUNCER_TESTS ?= -m "not deployed"

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

# Without npm the lint test is skipped (it fails under CI=true, tests/api/test_openapi_lint.py).
$(NODE_STAMP): tests/node/package.json tests/node/package-lock.json
	@if command -v npm >/dev/null; then \
		mkdir -p $(NODE_DIR) && cp tests/node/package.json tests/node/package-lock.json $(NODE_DIR)/ && \
		(cd $(NODE_DIR) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) && \
		touch $(NODE_STAMP); \
	else echo "npm not found: the interface document's lint test will be skipped"; fi

install: $(STAMP) $(NODE_STAMP)

install-serve: $(SERVE_STAMP)

migrate: install-serve
	$(BIN)/flask db upgrade

# Each run issues a new demo key and revokes the one printed before (flask demo says so).
demo: migrate
	@echo "Demo API key (shown once):"
	@$(BIN)/flask demo | tail -n 1

# Served as the Procfile's web line serves (app/serving.py: JSON log lines, no control socket),
# on this machine's loopback only.
run: demo
	@echo "Webhooks and upkeep wait for a worker: REDIS_URL=redis://127.0.0.1:6379/0 make worker"
	@echo "Serving on http://127.0.0.1:$(PORT)"
	@PORT=$(PORT) PUBLIC_BASE_URL=$(PUBLIC_BASE_URL) $(BIN)/gunicorn --config python:app.serving --bind 127.0.0.1:$(PORT) wsgi:app

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
