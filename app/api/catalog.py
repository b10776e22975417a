"""Catalog sync: the complete product snapshot of one store, reconciled atomically."""
from __future__ import annotations

from flask import g
from flask.views import MethodView

from app.api.base import Blueprint
from app.api.catalog_schemas import CatalogSyncRequest, CatalogSyncResponse
from app.database.engine import request_session, utcnow
from app.services.locations import catalog

blp = Blueprint("catalog", __name__, url_prefix="/v1", description="Product catalog")


@blp.route("/catalog-syncs")
class CatalogSyncs(MethodView):
    @blp.operation("syncCatalog", scope="products:write", idempotency=(1, 128),
                   errors=("not_found",))
    @blp.arguments(CatalogSyncRequest)
    @blp.response(201, CatalogSyncResponse)
    def post(self, body):
        """Replace the store's catalog with this snapshot: listed items are created or updated,
        absent ones removed; the counts say which.

        The snapshot is complete: items not in it are removed, so an empty one is refused unless
        `allowEmpty` is true. At most 100,000 items, each sku once (else 422); the counts (created,
        updated, removed, unchanged) say what changed. The catalog's `redeemable` and `accruable`
        flags and categories apply to quotes of sessions at that store. The Idempotency-Key is
        required (1..128); emits `catalog.synced`.
        """
        session = request_session()
        return catalog.sync_catalog(session, g.company_id, body["storeId"], body["items"],
                                    allow_empty=body["allowEmpty"], now=utcnow())
