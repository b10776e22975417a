"""Every operation of the interface document, fed generated input (valid and invalid) with a
real key: the answer is never a 5xx. Cases come from schemathesis's strategies for our own
/openapi.json; hypothesis runs them against the app in-process.

A failure names the request that failed (method, path, query, headers, body), hypothesis's
`@reproduce_failure` line for the operation, and the run's seed:
`make test-sqlite PYTEST_ARGS="tests/api/test_fuzz_openapi.py --hypothesis-seed=N"` generates
the same cases again, and the `@reproduce_failure` line put above `no_server_error` replays the
one case (keep only its operation). Inputs it found stay fixed as plain requests in
test_fuzz_findings.py."""
from __future__ import annotations

import json
import random

import pytest
import schemathesis
from hypothesis import HealthCheck, core, given, seed, settings
from schemathesis.core import NotSet

EXAMPLES_PER_OPERATION = 25
SHOWN_BODY_CHARS = 2000


def describe_request(case) -> str:
    """The request as sent, without our key; non-ASCII escaped so every character is visible."""
    headers = {name: value for name, value in (case.headers or {}).items()
               if name.lower() != "authorization"}
    lines = [f"{case.method} {case.formatted_path}"]
    if case.query:
        lines.append(f"query: {json.dumps(case.query, default=repr)}")
    if headers:
        lines.append(f"headers: {json.dumps(headers, default=repr)}")
    if not isinstance(case.body, NotSet):
        body = json.dumps(case.body, default=repr)
        cut = f" … ({len(body)} characters)" if len(body) > SHOWN_BODY_CHARS else ""
        lines.append(f"body: {body[:SHOWN_BODY_CHARS]}{cut}")
    return "\n".join(lines)


def describe_failure(label: str, failure: BaseException) -> str:
    """Our own assertions name the request; anything else hypothesis raised is named by type.
    hypothesis attaches the falsifying example and the @reproduce_failure line as notes, and
    raises an ExceptionGroup when it found distinct failures."""
    if isinstance(failure, BaseExceptionGroup):
        return "\n".join(describe_failure(label, each) for each in failure.exceptions)
    text = str(failure) if isinstance(failure, AssertionError) else f"{type(failure).__name__}: {failure}"
    notes = "\n".join(getattr(failure, "__notes__", []))
    return f"[{label}]\n{text}\n{notes}"


def test_no_input_makes_a_server_error(app, tenant):
    schema = schemathesis.openapi.from_wsgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 30
    run_seed = core.global_force_seed
    if run_seed is None:
        run_seed = random.SystemRandom().randrange(2**32)
    failures = []
    for operation in operations:
        @seed(run_seed)
        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None,
                  print_blob=True, suppress_health_check=list(HealthCheck))
        def no_server_error(case):
            # A made-up register key stops a request at 403 terminal_inactive; keep one in
            # five so the rest reach validation and the operation itself.
            pos_key = (case.headers or {}).get("X-Loyalty-Pos-Key")
            if pos_key is not None and len(pos_key) % 5:
                del case.headers["X-Loyalty-Pos-Key"]
            try:
                response = case.call(headers={"Authorization": f"Bearer {tenant.key}"})
            except Exception as error:
                # schemathesis re-raises what escaped a view: a 500 in production.
                raise AssertionError(f"{describe_request(case)}\n→ {type(error).__name__}: {error}") from error
            assert response.status_code < 500, (
                f"{describe_request(case)}\n→ {response.status_code} {response.text[:300]}")

        try:
            no_server_error()
        except Exception as failure:
            failures.append(describe_failure(operation.label, failure))
    if failures:
        pytest.fail(f"--hypothesis-seed={run_seed} generates these cases again\n\n"
                    + "\n\n".join(failures), pytrace=False)
