"""Apple's Wallet web service (docs/api.md#wallet), outside /v1 and without an API key: a device
registers for a pass's updates, asks which of its passes changed, fetches the latest pass and
sends its logs. The pass's own `ApplePass` token authenticates where Apple says so."""
from __future__ import annotations

import logging
from datetime import datetime, timezone
from email.utils import format_datetime, parsedate_to_datetime

from flask import Response, current_app, jsonify, request
from flask.views import MethodView

from app.api.base import Blueprint
from app.api.cards import PKPASS_MEDIA_TYPE, wallet_signer
from app.web.bodies import chunked_body_exceeds, decode, raw_body
from app.database.engine import request_session, utcnow
from app.models import Company, Customer
from app.services.cards import card_page, passkit
from app.services.errors import DomainError, InvalidField

log = logging.getLogger("app.passkit")
blp = Blueprint("passkit", __name__, url_prefix="/passkit",
                description="Apple Wallet web service: pass registrations and updates")

PASSKIT_ERRORS = ("invalid_pass_token", "wallet_not_configured")
# A device's bodies are a push token or a few log lines: read no more than this of any, however
# it is sent (a chunked body is cut off as one with Content-Length is refused).
BODY_MAX = 64 * 1024
BODY_ERRORS = ("bad_request", "invalid_passkit_request", "payload_too_large")
REGISTRATION = ("/v1/devices/<deviceLibraryIdentifier>/registrations/<passTypeIdentifier>"
                "/<serialNumber>")


def _signer():
    signer = wallet_signer()
    if signer is None:
        raise DomainError("Apple Wallet passes are not configured on this server",
                          code="wallet_not_configured", status=503)
    return signer


def _our_pass_type() -> str | None:
    """Without a pass certificate no pass carries a token or names this service: every request
    for one is unauthorized (401) or finds none (204), as Apple's reference has it."""
    signer = wallet_signer()
    return signer.pass_type_id if signer is not None else None


def _body():
    """The device's JSON body: over `BODY_MAX` a 413, broken chunked framing a 400
    `bad_request`, anything but JSON a 400 `invalid_passkit_request`."""
    request.max_content_length = BODY_MAX  # werkzeug refuses a longer Content-Length
    if request.content_length is None and chunked_body_exceeds(request, BODY_MAX):
        raise DomainError(f"the body is larger than {BODY_MAX} bytes", code="payload_too_large",
                          status=413)
    try:
        return decode(raw_body())
    except InvalidField:
        raise passkit.bad_request("the body is not JSON") from None


def _authorized(pass_type_id: str, serial: str, *, lock: bool = False) -> tuple[str, str]:
    settings = current_app.config["SETTINGS"]
    return passkit.authorized_pass(request_session(), pass_type_id, serial,
                                   request.headers.get("Authorization"),
                                   our_pass_type=_our_pass_type(),
                                   pepper=settings.api_key_pepper, lock=lock)


def _if_modified_since() -> datetime | None:
    """The header's moment in UTC; None (absent) for one that does not parse, has no zone, or
    names a moment a date cannot hold (the year 99999999999)."""
    try:
        moment = parsedate_to_datetime(request.headers.get("If-Modified-Since", ""))
        return moment.astimezone(timezone.utc) if moment.tzinfo is not None else None
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


@blp.route(REGISTRATION)
class Registration(MethodView):
    @blp.operation("registerPassDevice", scope=None, errors=(*BODY_ERRORS, *PASSKIT_ERRORS))
    @blp.response(201, {"type": "string"}, content_type="text/plain",
                  description="The device is registered for the pass's updates")
    @blp.alt_response(200, description="The device was registered already (its push token "
                                       "is brought up to date)")
    def post(self, deviceLibraryIdentifier, passTypeIdentifier, serialNumber):
        """Register a device for a pass's update pushes.

        `Authorization: ApplePass <authenticationToken>` of the pass; anything else, another pass
        type or serial, is a 401. Body `{"pushToken": "…"}` (1 to 200 hexadecimal digits, else
        400), at most 64 KiB (else 413). A pass keeps its 10 latest devices: an 11th takes the
        place of the oldest. Identifiers are at most 128 characters (else 404).
        """
        passkit.check_identifiers(deviceLibraryIdentifier)
        company_id, customer_id = _authorized(passTypeIdentifier, serialNumber, lock=True)
        token = passkit.push_token_of(_body())
        created = passkit.register(request_session(), company_id, customer_id,
                                   deviceLibraryIdentifier, token, now=utcnow())
        return Response("", 201 if created else 200, mimetype="text/plain")

    @blp.operation("unregisterPassDevice", scope=None, errors=PASSKIT_ERRORS)
    @blp.response(200, {"type": "string"}, content_type="text/plain",
                  description="The device no longer receives the pass's pushes")
    def delete(self, deviceLibraryIdentifier, passTypeIdentifier, serialNumber):
        """Unregister a device from a pass's update pushes.

        Authorized as the registration; 200 also when the device was not registered.
        """
        passkit.check_identifiers(deviceLibraryIdentifier)
        company_id, customer_id = _authorized(passTypeIdentifier, serialNumber)
        passkit.unregister(request_session(), company_id, customer_id, deviceLibraryIdentifier)
        return Response("", 200, mimetype="text/plain")


@blp.route("/v1/devices/<deviceLibraryIdentifier>/registrations/<passTypeIdentifier>")
class DevicePasses(MethodView):
    @blp.operation("listUpdatedPasses", scope=None, errors=("wallet_not_configured",),
                   query={"passesUpdatedSince": "The `lastUpdated` tag of an earlier answer; "
                          "without it, every pass of the device"})
    @blp.response(200, {"type": "object", "required": ["serialNumbers", "lastUpdated"],
                        "properties": {"serialNumbers": {"type": "array",
                                                         "items": {"type": "string"}},
                                       "lastUpdated": {"type": "string"}}},
                  description="The serial numbers of the device's passes changed since the tag")
    @blp.alt_response(204, description="None of the device's passes changed since the tag")
    def get(self, deviceLibraryIdentifier, passTypeIdentifier):
        """The device's passes changed since `passesUpdatedSince`.

        No authorization, as Apple has it. `passesUpdatedSince` is the `lastUpdated` tag of an
        earlier answer (without it, every pass of the device); 204 when none changed.
        """
        changed, tag = passkit.serials_since(
            request_session(), deviceLibraryIdentifier, passTypeIdentifier,
            request.args.get("passesUpdatedSince"), our_pass_type=_our_pass_type())
        if not changed:
            return Response(status=204)
        return jsonify({"serialNumbers": changed, "lastUpdated": tag})


@blp.route("/v1/passes/<passTypeIdentifier>/<serialNumber>")
class LatestPass(MethodView):
    @blp.operation("getLatestPass", scope=None, errors=PASSKIT_ERRORS)
    @blp.response(200, {"type": "string", "format": "binary"}, content_type=PKPASS_MEDIA_TYPE,
                  description="The pass as it is now, with Last-Modified")
    @blp.alt_response(304, description="Not changed since If-Modified-Since")
    def get(self, passTypeIdentifier, serialNumber):
        """The latest version of a pass.

        `Authorization: ApplePass <authenticationToken>`; anything else is a 401. Answers 304 when
        the pass has not changed since `If-Modified-Since` (a `Last-Modified` it was given).
        """
        company_id, customer_id = _authorized(passTypeIdentifier, serialNumber)
        session = request_session()
        now = utcnow()
        customer = session.get(Customer, (company_id, customer_id))
        card = card_page.card_by_token(session, customer.card_token, now)
        standing = card_page.pass_standing(session, card)
        changed_at = standing.changed_at
        headers = {"Last-Modified": format_datetime(passkit.last_modified(changed_at),
                                                    usegmt=True),
                   "Cache-Control": "no-cache"}
        if not passkit.modified_since(changed_at, _if_modified_since()):
            return Response(status=304, headers=headers)
        settings = current_app.config["SETTINGS"]
        body = card_page.build_wallet_pass(session, card, _signer(),
                                           public_base_url=settings.public_base_url,
                                           pepper=settings.api_key_pepper, now=now,
                                           standing=standing)
        return Response(body, 200, mimetype=PKPASS_MEDIA_TYPE, headers=headers)


@blp.route("/v1/log")
class DeviceLog(MethodView):
    @blp.operation("logPassErrors", scope=None, errors=BODY_ERRORS)
    @blp.response(200, {"type": "string"}, content_type="text/plain",
                  description="The messages are logged")
    def post(self):
        """Messages a device reports about this web service, logged.

        Body `{"logs": ["…"]}`: at most 100 messages (else 400), each logged up to 1,000
        characters, in a body of at most 64 KiB however it is sent (else 413).
        """
        for line in passkit.log_messages(_body()):
            log.warning("wallet device reports: %s", line)
        return Response("", 200, mimetype="text/plain")
