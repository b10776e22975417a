import marshmallow as ma

from app.api.base import ResponseSchema, Schema
from app.api.enums import Choice, list_of
from app.api.fields import Pattern, Timestamp
from app.services.tenancy.scopes import ALL_SCOPES


class CreateCredentialRequest(Schema):
    # PostgreSQL text cannot hold NUL; without the check the insert failed with a 500.
    name = ma.fields.String(required=True, validate=[
        ma.validate.Length(1, 100),
        Pattern(r"^[^\x00]*$", error="must not contain the NUL character")])
    scopes = ma.fields.List(Choice("Scope", ALL_SCOPES), required=True,
                            validate=ma.validate.Length(min=1))


class RotateCredentialRequest(Schema):
    gracePeriodSeconds = ma.fields.Integer(load_default=0, strict=True, validate=ma.validate.Range(0, 86400))


class CredentialResponse(ResponseSchema):
    id = ma.fields.String(required=True)
    name = ma.fields.String(required=True)
    scopes = ma.fields.Function(lambda c: c.scopes.split(), required=True,
                                metadata=list_of("Scope"))
    prefix = ma.fields.String(required=True)
    createdAt = Timestamp(attribute="created_at", required=True)
    lastUsedAt = Timestamp(attribute="last_used_at", allow_none=True)
    rotatedAt = Timestamp(attribute="rotated_at", allow_none=True)
    revokedAt = Timestamp(attribute="revoked_at", allow_none=True)


class IssuedCredentialResponse(ResponseSchema):
    id = ma.fields.String(required=True)
    name = ma.fields.String(required=True)
    scopes = ma.fields.Function(lambda c: c.scopes.split(), required=True,
                                metadata=list_of("Scope"))
    prefix = ma.fields.String(required=True)
    key = ma.fields.String(required=True, metadata={"description": "Shown once, never again"})
    createdAt = Timestamp(attribute="created_at", required=True)


class CredentialListResponse(ResponseSchema):
    items = ma.fields.List(ma.fields.Nested(CredentialResponse), required=True)
