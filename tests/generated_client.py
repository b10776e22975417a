"""A Python client generated from the app's own /openapi.json by openapi-python-client, as an
integrator would make one, and imported unedited. Generated once per test session."""
from __future__ import annotations

import importlib
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx

PACKAGE = "loyalty_client"
# No formatter run afterwards (ruff is no dependency of ours); the pkpass media type is
# binary to a generator that does not know it.
CONFIG = f"""\
post_hooks: []
package_name_override: {PACKAGE}
project_name_override: {PACKAGE}
content_type_overrides:
  application/vnd.apple.pkpass: application/octet-stream
"""


def generate(document: dict, directory: Path) -> str:
    """Writes the package under `directory`; returns the generator's output."""
    spec, config = directory / "openapi.json", directory / "config.yaml"
    spec.write_text(json.dumps(document))
    config.write_text(CONFIG)
    generator = Path(sys.executable).parent / "openapi-python-client"
    done = subprocess.run([str(generator), "generate", "--path", str(spec), "--meta", "none",
                           "--output-path", str(directory / PACKAGE), "--config", str(config)],
                          capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


@dataclass
class GeneratedClient:
    """The imported package, and clients of it that talk to the app in-process."""

    app: object
    package_root: Path

    def operation(self, name: str):
        """The module of one operation, by its operationId as the generator names it:
        `operation("checkout.commit_sale").sync_detailed(...)`."""
        return importlib.import_module(f"{PACKAGE}.api.{name}")

    @property
    def models(self):
        return importlib.import_module(f"{PACKAGE}.models")

    def client(self, key: str):
        authenticated = importlib.import_module(PACKAGE).AuthenticatedClient
        # An answer the document does not list raises instead of passing as None.
        return authenticated(base_url="http://loyalty.test", token=key,
                             raise_on_unexpected_status=True,
                             httpx_args={"transport": httpx.WSGITransport(app=self.app)})


def import_generated(app, directory: Path) -> GeneratedClient:
    sys.path.insert(0, str(directory))
    importlib.invalidate_caches()
    importlib.import_module(PACKAGE)
    return GeneratedClient(app=app, package_root=directory / PACKAGE)


def forget_generated(directory: Path) -> None:
    sys.path.remove(str(directory))
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(f"{PACKAGE}.")]:
        del sys.modules[name]
