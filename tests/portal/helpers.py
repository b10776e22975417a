"""Staff members made as the operator's command makes them, and a browser-like client that
signs in through the sign-in form, carrying the CSRF token each page gives."""
from __future__ import annotations

import re

from app.database.engine import utcnow
from app.services.audit import events as audit
from app.services.staff import members

PASSWORD = "correct horse battery staple"
_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def add_staff(app, company_id: str, email: str, role: str, *, name: str | None = None,
              password: str | None = PASSWORD) -> str:
    session = app.extensions["session_factory"]()
    try:
        member = members.add_member(session, company_id, email=email, role=role, name=name,
                                    actor=audit.operator(), now=utcnow())
        if password is not None:
            members.set_password(session, member, password)
        session.commit()
        return member.id
    finally:
        session.close()


def csrf_token(page) -> str:
    found = _TOKEN.search(page.get_data(as_text=True))
    assert found, "the page has no form with a CSRF token"
    return found.group(1)


def sign_in(client, email: str, password: str = PASSWORD, **extra):
    """The sign-in form sent as a browser sends it; returns the answer."""
    token = csrf_token(client.get("/portal/login"))
    return client.post("/portal/login", data={"email": email, "password": password,
                                              "csrf_token": token, **extra})


def post_form(client, page_path: str, action: str, data: dict):
    """A form posted from the page at `page_path`, with that page's CSRF token."""
    token = csrf_token(client.get(page_path))
    return client.post(action, data={**data, "csrf_token": token})


def session_cookie(client) -> str | None:
    cookie = client.get_cookie("loyalty_portal", path="/portal")
    return cookie.value if cookie else None
