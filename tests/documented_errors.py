"""Every error the suite's requests were answered with, held against the interface document
at the end of the session: an operation that answered a status, or a `code`, its document
does not list fails the run. The document's lists are written from declarations
(`app.api.document`); this is what keeps those declarations complete."""
from __future__ import annotations

from flask import request

from app.api.base import operations
from app.web.views import declared_operation
from app.api.document import document_path

# (method, rule) → every (status, code) answered
ANSWERED: dict[tuple[str, str], set[tuple[int, str | None]]] = {}


def record_error_answers(app) -> None:
    @app.after_request
    def record(response):
        rule = request.url_rule
        # A path with a doubled slash is refused at the edge as an unmatched one, whatever rule
        # werkzeug matched it to once it stripped the leading slashes.
        if "//" in request.environ.get("PATH_INFO", ""):
            return response
        if response.status_code >= 400 and rule is not None and declared_operation(
                app, rule.endpoint, request.method) is not None:
            body = response.get_json(silent=True) if response.is_json else None
            code = body.get("code") if isinstance(body, dict) else None
            ANSWERED.setdefault((request.method, rule.rule), set()).add(
                (response.status_code, code))
        return response


def undocumented(app) -> list[str]:
    """Each answer whose status, or whose code, the operation's document does not list (an
    answer that is not JSON, such as the card's 404 page, needs a documented non-JSON body)."""
    document = app.test_client().get("/openapi.json").get_json()
    found = []
    for method, rule, _ in operations(app):
        responses = document["paths"][document_path(rule)][method.lower()]["responses"]
        for status, code in sorted(ANSWERED.get((method, rule), ()), key=str):
            documented = responses.get(str(status))
            if status == 500:
                continue  # the document's `default`; any 500 fails its own test anyway
            if documented is None:
                found.append(f"{method} {rule} answered {status}, not in its document")
            elif code is None and status != 422 and set(documented["content"]) == {"application/json"}:
                found.append(f"{method} {rule} answered {status} without a JSON body")
            elif code is not None and code not in documented.get("x-error-codes", ()):
                found.append(f"{method} {rule} answered {status} {code}, not in its document")
    return found
