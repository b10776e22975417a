"""Signing in and out of the back office: the form, the one message for a wrong email or
password, the lockout, the session's cookie, its idle and absolute ends."""
from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from app.models import AuditEvent, SignInFailure, StaffSession
from tests.portal.helpers import PASSWORD, add_staff, csrf_token, session_cookie, sign_in


@pytest.fixture
def owner(app, tenant):
    return add_staff(app, tenant.company_id, "owner@example.com", "owner", name="Olga")


def test_the_sign_in_form_has_email_password_and_a_csrf_token(client):
    page = client.get("/portal/login")
    html = page.get_data(as_text=True)
    assert page.status_code == 200
    assert 'name="email"' in html and 'name="password"' in html and csrf_token(page)


def test_a_right_password_signs_in_and_goes_to_the_first_page(client, owner):
    answer = sign_in(client, "OWNER@example.com")
    assert answer.status_code == 303 and answer.headers["Location"] == "/portal/"
    assert client.get("/portal/").status_code == 200


def test_next_is_followed_only_under_the_portal(app, owner):
    assert sign_in(app.test_client(), "owner@example.com", next="/portal/customers?q=1").headers[
        "Location"] == "/portal/customers?q=1"
    for elsewhere in ("https://evil.example/portal/", "//evil.example/portal/", "/v1/company",
                      "/portal/../v1/company", "/portal"):
        answer = sign_in(app.test_client(), "owner@example.com", next=elsewhere)
        assert answer.headers["Location"] == "/portal/", elsewhere


def test_a_wrong_password_and_an_unknown_email_get_the_same_401(client, owner, db):
    wrong = sign_in(client, "owner@example.com", "not the password at all")
    unknown = sign_in(client, "nobody@example.com", PASSWORD)
    assert wrong.status_code == unknown.status_code == 401
    assert _error(wrong) == _error(unknown) == "Неверный email или пароль."
    assert session_cookie(client) is None or client.get("/portal/").status_code == 303
    failed = db.scalars(select(AuditEvent.action).where(AuditEvent.action != "staff.added")).all()
    assert failed == ["staff.sign_in_failed"]  # the unknown email belongs to no company


def _error(page) -> str:
    html = page.get_data(as_text=True)
    return html.split('class="error-summary" role="alert"><p>')[1].split("</p>")[0]


def test_a_page_without_a_session_sends_to_the_sign_in_with_next(client):
    answer = client.get("/portal/customers?q=ann")
    assert answer.status_code == 303
    assert answer.headers["Location"] == "/portal/login?next=/portal/customers?q%3Dann"


@pytest.mark.parametrize("email", ["owner@example.com", "nobody@example.com"])
def test_five_failures_lock_the_email_out_even_for_the_right_password(client, owner, email):
    for _ in range(5):
        assert sign_in(client, email, "a wrong password!").status_code == 401
    locked = sign_in(client, email, PASSWORD)
    assert locked.status_code == 429
    assert 890 <= int(locked.headers["Retry-After"]) <= 901
    if email == "owner@example.com":
        assert sign_in(client, "OWNER@example.com", PASSWORD).status_code == 429


def test_the_lockout_ends_15_minutes_after_the_last_failure(client, owner, db):
    for _ in range(5):
        sign_in(client, "owner@example.com", "a wrong password!")
    for failure in db.scalars(select(SignInFailure)):
        failure.failed_at -= timedelta(minutes=15)
    db.commit()
    assert sign_in(client, "owner@example.com").status_code == 303


def test_the_cookie_is_http_only_lax_and_on_the_portal_path(client, owner):
    cookie = sign_in(client, "owner@example.com").headers["Set-Cookie"]
    assert cookie.startswith("loyalty_portal=")
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/portal" in cookie
    assert "Secure" not in cookie  # the suite's PUBLIC_BASE_URL is http


def test_each_sign_in_starts_a_new_session_and_the_old_cookie_signs_nobody_in(app, owner, db):
    first, second = app.test_client(), app.test_client()
    sign_in(first, "owner@example.com")
    before = session_cookie(first)
    sign_in(second, "owner@example.com")
    assert session_cookie(second) != before
    assert db.scalar(select(StaffSession.token_digest).limit(1)) is not None
    assert len(db.scalars(select(StaffSession)).all()) == 2
    signed_out = first.post("/portal/logout", data={"csrf_token": csrf_token(first.get("/portal/"))})
    assert signed_out.status_code == 303
    assert len(db.scalars(select(StaffSession)).all()) == 1
    replay = app.test_client()
    replay.set_cookie("loyalty_portal", before, path="/portal")
    assert replay.get("/portal/").status_code == 303  # the server ended it
    assert second.get("/portal/").status_code == 200


def _age(db, **back):
    """Every session made as if its moments were `back` (a timedelta each) earlier."""
    db.expire_all()
    for held in db.scalars(select(StaffSession)):
        for column, by in back.items():
            setattr(held, column, getattr(held, column) - by)
    db.commit()


def test_a_session_idle_30_minutes_ends(client, owner, db):
    sign_in(client, "owner@example.com")
    _age(db, last_seen_at=timedelta(minutes=30))
    assert client.get("/portal/").status_code == 303
    assert db.scalars(select(StaffSession)).all() == []


def test_a_session_ends_after_12_hours_however_busy(client, owner, db):
    sign_in(client, "owner@example.com")
    _age(db, created_at=timedelta(hours=12))
    assert client.get("/portal/").status_code == 303


def test_a_session_in_use_goes_on(client, owner, db):
    sign_in(client, "owner@example.com")
    _age(db, last_seen_at=timedelta(minutes=29), created_at=timedelta(hours=11))
    assert client.get("/portal/").status_code == 200
    _age(db, last_seen_at=timedelta(minutes=5))
    assert client.get("/portal/").status_code == 200  # the last page moved the idle end on


def test_signing_in_is_recorded(client, owner, db):
    sign_in(client, "owner@example.com")
    event = db.scalar(select(AuditEvent).where(AuditEvent.action != "staff.added"))
    assert (event.action, event.actor_kind, event.actor_name, event.target_id) == (
        "staff.signed_in", "STAFF", "Olga", owner)
    assert event.address == "127.0.0.1"


def test_the_periodic_job_forgets_ended_sessions_and_old_failures(app, client, owner, db):
    from worker.periodic import run_periodic_tasks

    sign_in(client, "owner@example.com")
    sign_in(app.test_client(), "owner@example.com", "a wrong password!")
    sign_in(app.test_client(), "owner@example.com")
    _age(db, last_seen_at=timedelta(minutes=31))
    sign_in(app.test_client(), "owner@example.com")  # a fresh one stays
    for failure in db.scalars(select(SignInFailure)):
        failure.failed_at -= timedelta(minutes=15)
    db.commit()
    results = run_periodic_tasks(app)
    assert results["forget ended staff sessions and old sign-in failures"] == 3
    db.expire_all()
    assert len(db.scalars(select(StaffSession)).all()) == 1
    assert db.scalars(select(SignInFailure)).all() == []
