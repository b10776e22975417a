"""Domain errors raised by the services; `app/web/errors.py` turns them into HTTP responses."""
from __future__ import annotations


class DomainError(Exception):
    status = 400
    code = "bad_request"

    def __init__(self, detail: str, *, code: str | None = None, status: int | None = None, **extra):
        super().__init__(detail)
        self.detail = detail
        if code:
            self.code = code
        if status:
            self.status = status
        self.extra = extra  # more fields of the error body, e.g. customerId


class NotFound(DomainError):
    status = 404
    code = "not_found"

    def __init__(self, what: str = "resource"):
        super().__init__(f"{what} not found")


class Conflict(DomainError):
    """409: the operation is not allowed in the current state."""

    status = 409
    code = "invalid_state"


class Forbidden(DomainError):
    status = 403
    code = "forbidden"


class RateLimited(DomainError):
    status = 429
    code = "rate_limited"

    def __init__(self, detail: str, retry_after: int):
        super().__init__(detail)
        self.retry_after = max(1, int(retry_after))


class InvalidField(DomainError):
    """A 422 found by a rule rather than by a schema, in the HTTPValidationError shape."""

    status = 422
    code = "validation_error"

    def __init__(self, loc: list, msg: str, type_: str = "value_error"):
        super().__init__(msg)
        self.loc = loc
        self.type = type_


# A write deferred to the commit (UnitOfWork.defer) finds its unique violation there, not at its
# own statement: the constraints whose violation is a Conflict of the domain, registered by the
# service that defers the write, answer as that statement's caller would have (app/web/errors.py).
_CONFLICT_OF_CONSTRAINT: dict = {}  # constraint's name → the Conflict's maker


def conflict_of_constraint(constraint: str):
    """Register the decorated maker of a Conflict as what a violation of `constraint` means."""
    def register(make):
        _CONFLICT_OF_CONSTRAINT[constraint] = make
        return make
    return register


def conflict_at_commit(error: Exception) -> Conflict | None:
    """The registered Conflict a database error (SQLAlchemy's, from psycopg2) means, if any."""
    diag = getattr(getattr(error, "orig", None), "diag", None)
    make = _CONFLICT_OF_CONSTRAINT.get(getattr(diag, "constraint_name", None) or "")
    return None if make is None else make()
