"""API keys: issue (the secret shown once), list (metadata only), rotate, revoke."""
from __future__ import annotations

from flask import current_app, g
from flask.views import MethodView

from app.api.base import Blueprint
from app.api.credentials_schemas import (CreateCredentialRequest, CredentialListResponse,
                                         IssuedCredentialResponse, RotateCredentialRequest)
from app.web.actors import key_actor
from app.database.engine import request_session, utcnow
from app.web.idempotency import SECRET_SHOWN_ONCE
from app.services.tenancy import credentials

blp = Blueprint("credentials", __name__, url_prefix="/v1", description="API credentials")


def _issued(credential, key):
    credential.key = key  # transient: dumped once in this response, stored nowhere
    return credential


@blp.route("/api-credentials")
class Credentials(MethodView):
    @blp.operation("issueCredential", scope="credentials:write", key_refused=SECRET_SHOWN_ONCE)
    @blp.arguments(CreateCredentialRequest)
    @blp.response(201, IssuedCredentialResponse)
    def post(self, body):
        """Issue a key with the given scopes (never more than the caller's own).

        The answer's `key` is the secret, shown this once and stored only as a digest: keep it.
        Scopes must be a subset of the caller's own (403 `insufficient_scope`), so no key can make a
        stronger one. An Idempotency-Key is refused (422): a replay would have to show the secret
        again.
        """
        credential, key = credentials.issue_credential(
            request_session(), g.company_id, body["name"], body["scopes"],
            pepper=current_app.config["SETTINGS"].api_key_pepper, now=utcnow(), actor=key_actor(),
            granted_by=g.principal.scopes)
        return _issued(credential, key)

    @blp.operation("listCredentials", scope="credentials:read")
    @blp.response(200, CredentialListResponse)
    def get(self):
        """The company's keys: metadata only, revoked ones included.

        Names, scopes, the display prefix (the key's first 16 characters) and dates; never a key or
        its digest. Revoked keys stay listed with `revokedAt`; `lastUsedAt` is written at most once
        a minute per key.
        """
        return {"items": credentials.list_credentials(request_session(), g.company_id)}


@blp.route("/api-credentials/<credential_id>/rotate")
class CredentialRotation(MethodView):
    @blp.operation("rotateCredential", scope="credentials:write", key_refused=SECRET_SHOWN_ONCE)
    @blp.arguments(RotateCredentialRequest, required=False)
    @blp.response(201, IssuedCredentialResponse)
    def post(self, body, credential_id):
        """A new key for the same credential; the old one works until the grace period ends.

        Answers 201 with the same id and a new `key`, shown once. The key it replaces keeps working
        for `gracePeriodSeconds` (0..86400, default 0), then is a 401; up to 10 replaced keys of one
        credential live at once. The caller's scopes must cover the credential's (403
        `insufficient_scope`); another company's id is a 404. No Idempotency-Key (it would replay a
        secret).
        """
        credential, key = credentials.rotate_credential(
            request_session(), g.company_id, credential_id,
            grace_seconds=body.get("gracePeriodSeconds", 0),
            pepper=current_app.config["SETTINGS"].api_key_pepper, now=utcnow(), actor=key_actor(),
            changed_by=g.principal.scopes)
        return _issued(credential, key)


@blp.route("/api-credentials/<credential_id>")
class CredentialById(MethodView):
    @blp.operation("revokeCredential", scope="credentials:write")
    @blp.response(204)
    def delete(self, credential_id):
        """Revoke at once.

        204: the key is refused (401 `invalid_api_key`) from the next request on, with every key a
        rotation of it left in its grace period. The caller's scopes must cover the credential's
        (403 `insufficient_scope`); a key may revoke itself. It stays listed with `revokedAt`.
        """
        credentials.revoke_credential(request_session(), g.company_id, credential_id,
                                      now=utcnow(), actor=key_actor(),
                                      changed_by=g.principal.scopes)
