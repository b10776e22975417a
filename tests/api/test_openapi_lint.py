"""The interface document as other tools read it: Stoplight's Spectral with its standard
`spectral:oas` rules (installed by `make install` from tests/node, pinned by its lock), and
every `pattern` in it, which means an ECMA-262 regular expression, read by JavaScript as by
Python. Each test walks the whole document, so a new operation or field is held to the same."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.api.test_openapi_for_clients import each_operation, values_of
from tests.conftest import without

SPECTRAL = Path(sys.prefix) / "node" / "node_modules" / ".bin" / "spectral"
# Strings on which Python and JavaScript part ways if a pattern leaves the subset both read
# alike: a final newline (Python's `$` matches before it), \Z (an anchor only in Python),
# digits beyond ASCII (Python's \d takes them), characters beyond the BMP, NUL.
PROBES = ["", "0", "12345", "123456", "1234567", "123456\n", "\n123456", "123456Z", "Z",
          "١٢٣٤٥٦", "𝟙𝟚𝟛", "150.00", "-150.00", "150.00\n", "1.5", "100", "100.001", "-",
          "reg-1", "reg-1\n", " reg-1", "reg-1 ", "front desk 1", "касса-1", "tab\there",
          "a\x00b", "a\nb", "\u2028", "~", "A"]
# The JavaScript side, as a generated validator runs it: `new RegExp(pattern, "u").test(s)`.
MATCH_IN_JAVASCRIPT = """
const [patterns, probes] = JSON.parse(require("fs").readFileSync(0, "utf8"));
const tested = patterns.map(p => { const r = new RegExp(p, "u"); return probes.map(s => r.test(s)); });
process.stdout.write(JSON.stringify(tested));
"""


@pytest.fixture(scope="module")
def document(app):
    return app.test_client().get("/openapi.json").get_json()


# Slow: it starts Spectral (node), installed in the suite's own virtualenv, so it stays with the
# main run (tests/test_python_versions.py runs the rest on the other Pythons).
@pytest.mark.slow
def test_spectral_oas_finds_no_error_and_no_warning(document, tmp_path):
    if not SPECTRAL.exists():
        without(f"Spectral is not installed at {SPECTRAL} (`make install` installs it)")
    (tmp_path / "openapi.json").write_text(json.dumps(document))
    (tmp_path / ".spectral.yaml").write_text('extends: ["spectral:oas"]\n')
    done = subprocess.run([str(SPECTRAL), "lint", "openapi.json", "--ruleset", ".spectral.yaml",
                           "--format", "json", "--output", "results.json",
                           "--fail-severity", "warn"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    results = json.loads((tmp_path / "results.json").read_text())
    # Severity 0 is an error, 1 a warning.
    found = [f"{r['code']} at {'/'.join(map(str, r['path']))}: {r['message']}"
             for r in results if r["severity"] <= 1]
    assert found == [], "\n".join(found)
    assert done.returncode == 0, done.stdout + done.stderr


def matched_in_javascript(patterns: list[str], probes: list[str]) -> dict[str, list[bool]]:
    node = shutil.which("node")
    if node is None:
        without("node is not installed: the document's patterns cannot be read as JavaScript")
    done = subprocess.run([node, "-e", MATCH_IN_JAVASCRIPT], input=json.dumps([patterns, probes]),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return dict(zip(patterns, json.loads(done.stdout)))


def test_every_pattern_reads_alike_in_python_and_javascript(document):
    """`^…$` around the pattern makes JavaScript's search a whole match, which is how the
    server matches (app.api.fields.Pattern: fullmatch)."""
    patterns = sorted({p for p in values_of(document, "pattern") if isinstance(p, str)})
    assert len(patterns) >= 4, patterns
    for pattern in patterns:
        assert pattern.startswith("^") and pattern.endswith("$"), pattern
        assert not pattern.endswith("\\$"), pattern
    javascript = matched_in_javascript(patterns, PROBES)
    differences = [f"{pattern!r} on {probe!r}: Python {python}, JavaScript {js}"
                   for pattern in patterns
                   for probe, js in zip(PROBES, javascript[pattern])
                   if (python := re.fullmatch(pattern, probe) is not None) != js]
    assert differences == [], "\n".join(differences)


def test_the_otp_code_pattern_takes_six_digits_and_nothing_after_them(document):
    schemas = document["components"]["schemas"]
    pattern = schemas["ConfirmOtpChallengeRequest"]["properties"]["code"]["pattern"]
    probes = ["123456", "123456\n", "123456Z", "12345", "1234567"]
    assert matched_in_javascript([pattern], probes)[pattern] == [True, False, False, False, False]
    assert schemas["ConfirmOtpChallengeRequest"]["properties"]["code"]["example"] == "444444"


def test_every_operation_describes_more_than_its_summary(document):
    for path, method, operation in each_operation(document):
        summary = operation.get("summary", "").strip()
        description = operation.get("description", "").strip()
        assert summary and description, (method, path)
        assert description != summary and summary not in description.split("\n\n"), (method, path)
    assert document["info"]["contact"]["url"].endswith("/docs")
