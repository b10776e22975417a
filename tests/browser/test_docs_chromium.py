"""/docs in a real headless Chromium that can reach nothing but 127.0.0.1: Swagger UI renders
the interface document from the files the package ships, with no request leaving the machine."""
from __future__ import annotations

import pytest

from tests.browser.test_card_page_chromium import (assert_stayed_on_loopback, chromium,  # noqa: F401
                                                   run_chromium, serve, stop, visible_text)


@pytest.fixture
def served(app):
    server, thread = serve(app)
    yield f"http://127.0.0.1:{server.server_port}"
    stop(server, thread)


@pytest.mark.slow
def test_docs_render_offline_from_packaged_assets(chromium, served, tmp_path):  # noqa: F811
    url = f"{served}/docs"
    # The page's scripts render after load: give them virtual time to fetch the document.
    dom, log = run_chromium(chromium, tmp_path, "docs", "--virtual-time-budget=15000",
                            "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    text = visible_text(dom.stdout)
    # Rendered by Swagger UI from /openapi.json, not present in the page as served.
    assert "Loyalty programme public API" in text, text[:2000]
    assert "POST /v1 /checkout-sessions" in text  # an operation, its path in segments
    assert_stayed_on_loopback(log, served, url)
    asked = log.requests_of_site("http://127.0.0.1")
    assert f"{served}/docs/assets/swagger-ui-bundle.js" in asked
    assert f"{served}/openapi.json" in asked
