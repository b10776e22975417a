"""The interface document: every route documented, every operation with its markers."""
from __future__ import annotations

import re

from app.api.base import operations

# Every schema name the specification gives (its Resources part).
SPEC_SCHEMA_NAMES = set("""
    CompanyResponse ProgramResponse SubscriptionResponse CreateCustomerRequest CustomerResponse
    CustomerDirectoryResponse RewardAccountResponse RewardAdjustmentRequest RewardAdjustmentResponse
    RewardActivityPageResponse CreateCheckoutSessionRequest CheckoutSessionResponse CreateQuoteRequest
    QuoteResponse CreateHoldRequest ReleaseHoldRequest HoldResponse CommitSaleRequest SaleResponse
    SaleLookupResponse CreateReturnRequest ReturnResponse CatalogSyncRequest CatalogSyncResponse
    CreateStoreRequest StoreResponse StoreListResponse PlaceDirectoryResponse CreateTerminalRequest
    UpdateTerminalRequest TerminalResponse TerminalListResponse CashierListResponse
    CreateCredentialRequest IssuedCredentialResponse CredentialListResponse HTTPValidationError
""".split())
# docs/api.md#interface: the spec's 29 rows, revocation, OTP (2), webhook endpoints (3), gift-card
# lookup, card page and card pass; docs/api.md#tiers: the program's change, campaigns create, list,
# change, delete; docs/api.md#webhooks: an endpoint's secret rotation; docs/api.md#reports's four
# reports; docs/api.md#wallet: the Wallet web service's five; the sale a register made offline;
# and the audit record's list.
OPERATION_COUNT = 55


def _openapi_path(rule: str) -> str:
    return re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule)


def test_document_version_and_security_scheme(client):
    spec = client.get("/openapi.json").get_json()
    assert spec["info"]["version"] == "0.1.0"
    assert spec["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http", "scheme": "bearer", "bearerFormat": "lk_live_… API key"}
    assert SPEC_SCHEMA_NAMES <= set(spec["components"]["schemas"])


def test_every_route_is_documented_with_its_markers(app, client):
    spec = client.get("/openapi.json").get_json()
    documented = 0
    for rule in app.url_map.iter_rules():
        # /metrics is for the operator's scraper, deliberately outside the document
        # (docs/api.md#availability). The back office's pages (/portal) are for browsers,
        # outside the document too.
        if (rule.endpoint in ("static", "metrics", "docs_assets.static")
                or rule.endpoint.startswith(("api-docs.", "portal."))):
            continue
        path = spec["paths"].get(_openapi_path(rule.rule))
        assert path is not None, f"{rule.rule} is not in the interface document"
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            doc = path[method.lower()]
            documented += 1
            assert doc["x-readiness"] == "READY"
            assert doc["x-group"] == ("system" if rule.rule in ("/health", "/ready") else "native")
    declared = list(operations(app))
    assert documented == len(declared) == OPERATION_COUNT
    for method, rule, operation in declared:
        doc = spec["paths"][_openapi_path(rule)][method.lower()]
        if rule.startswith("/v1/"):
            assert doc["x-lifecycle"] == "active"
            assert doc["x-scope"] == operation.scope
            assert doc["security"] == [{"bearerAuth": []}]
            assert doc["responses"]["422"]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/HTTPValidationError"}
            headers = {p["name"]: p for p in doc["parameters"] if p["in"] == "header"}
            assert headers["X-Loyalty-Pos-Key"]["schema"]["maxLength"] == 128
            if operation.idempotency:
                low, high = operation.idempotency
                assert headers["Idempotency-Key"]["required"] is operation.idempotency_required
                assert headers["Idempotency-Key"]["schema"] == {"type": "string", "minLength": low,
                                                                "maxLength": high}
            else:
                assert "Idempotency-Key" not in headers
        else:
            assert "security" not in doc and "x-scope" not in doc


def test_interactive_docs_are_served(client):
    response = client.get("/docs")
    assert response.status_code == 200
    assert "/openapi.json" in response.get_data(as_text=True)
