"""Sales points and the public place directory built from them."""
from __future__ import annotations

from flask import g
from flask.views import MethodView

from app.api.base import Blueprint
from app.api.paging import PageArgs
from app.api.stores_schemas import (CreateStoreRequest, PlaceDirectoryResponse, StoreListResponse,
                                    StoreResponse)
from app.web.actors import key_actor
from app.database.engine import request_session, utcnow
from app.services.locations import stores

blp = Blueprint("stores", __name__, url_prefix="/v1", description="Stores and the place directory")


@blp.route("/stores")
class Stores(MethodView):
    @blp.operation("createStore", scope="locations:write")
    @blp.arguments(CreateStoreRequest)
    @blp.response(201, StoreResponse)
    def post(self, body):
        """Add a sales point; it is active at once and published to the given channels.

        Latitude -90..90 and longitude -180..180; `channels` is a subset of ["MINIAPP"] (a MINIAPP
        store appears in the place directory and on the card page and pass); `timezone` is an IANA
        name, default Europe/Moscow. The store is active at once.
        """
        return stores.create_store(request_session(), g.company_id, now=utcnow(),
                                   actor=key_actor(), **body)

    @blp.operation("listStores", scope="locations:read")
    @blp.arguments(PageArgs, location="query")
    @blp.response(200, StoreListResponse)
    def get(self, args):
        """The company's stores, oldest first.

        An offset page (`page`, `pageSize`) of every store of the company, oldest first. Changes
        nothing.
        """
        return stores.list_stores(request_session(), g.company_id, page=args["page"],
                                  page_size=args["page_size"])


@blp.route("/place-directory")
class PlaceDirectory(MethodView):
    @blp.operation("getPlaceDirectory", scope="locations:read")
    @blp.response(200, PlaceDirectoryResponse)
    def get(self):
        """Cities with the active stores published to MINIAPP.

        For the shopper's mini-app: only active stores published to MINIAPP, grouped by city; a city
        appears only with at least one such store. Changes nothing.
        """
        return {"cities": stores.place_directory(request_session(), g.company_id)}
