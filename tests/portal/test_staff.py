"""Staff: the operator's `flask staff` commands, the welcome link, and the owner's staff page;
removing a member or changing their role ends their sessions at once."""
from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from app.models import AuditEvent, StaffInvitation, StaffMember, StaffSession
from tests.portal.helpers import PASSWORD, add_staff, csrf_token, post_form, sign_in


@pytest.fixture
def cli(app):
    return app.test_cli_runner()


def test_add_prints_a_one_time_welcome_link_that_sets_the_password(app, cli, tenant, db):
    result = cli.invoke(args=["staff", "add", "New.Person@Example.com", "--company",
                              tenant.company_id, "--role", "manager", "--name", "Nina"])
    assert result.exit_code == 0, result.output
    link = result.output.strip().splitlines()[-1]
    assert link.startswith("http://127.0.0.1:8000/portal/welcome/")
    path = link.removeprefix("http://127.0.0.1:8000")
    client = app.test_client()
    page = client.get(path)
    assert page.status_code == 200 and "new.person@example.com" in page.get_data(as_text=True)
    short = client.post(path, data={"password": "too short", "csrf_token": csrf_token(page)})
    assert short.status_code == 422
    as_email = client.post(path, data={"password": "new.person@example.com",
                                       "csrf_token": csrf_token(page)})
    assert as_email.status_code == 422
    done = client.post(path, data={"password": PASSWORD, "csrf_token": csrf_token(page)})
    assert done.status_code == 303 and done.headers["Location"] == "/portal/"
    assert client.get("/portal/").status_code == 200
    assert app.test_client().get(path).status_code == 404  # used once
    stored = db.scalar(select(StaffMember.password_hash))
    assert stored.startswith("$argon2id$") and PASSWORD not in stored
    assert sign_in(app.test_client(), "new.person@example.com").status_code == 303


def test_a_welcome_link_lasts_72_hours(app, cli, tenant, db):
    link = cli.invoke(args=["staff", "add", "late@example.com", "--company", tenant.company_id,
                            "--role", "support"]).output.strip().splitlines()[-1]
    for invitation in db.scalars(select(StaffInvitation)):
        invitation.expires_at -= timedelta(hours=72)
    db.commit()
    assert app.test_client().get(link.removeprefix("http://127.0.0.1:8000")).status_code == 404


def test_password_stdin_sets_it_and_prints_the_id(app, cli, tenant, db):
    result = cli.invoke(args=["staff", "add", "a@example.com", "--company", tenant.company_id,
                              "--role", "owner", "--password-stdin"], input=PASSWORD + "\n")
    assert result.exit_code == 0, result.output
    staff_id = result.output.strip().splitlines()[-1]
    assert db.get(StaffMember, (tenant.company_id, staff_id)).email == "a@example.com"
    assert sign_in(app.test_client(), "a@example.com").status_code == 303
    assert PASSWORD not in result.output


@pytest.mark.parametrize("arguments, input_, message", [
    (["--role", "owner", "--password-stdin"], "short\n", "at least 12 characters"),
    (["--role", "owner", "--password-stdin"], "dup@example.com\n", "not be the email"),
    (["--role", "boss"], None, "Invalid value for '--role'"),
])
def test_add_refuses_what_cannot_be(cli, tenant, db, arguments, input_, message):
    result = cli.invoke(args=["staff", "add", "dup@example.com", "--company", tenant.company_id,
                              *arguments], input=input_)
    assert result.exit_code == 2 and message in result.output
    assert db.scalars(select(StaffMember)).all() == []


def test_an_email_is_anyones_once_whatever_its_case(app, cli, tenant, other_tenant):
    add_staff(app, tenant.company_id, "one@example.com", "owner")
    result = cli.invoke(args=["staff", "add", "ONE@example.com", "--company",
                              other_tenant.company_id, "--role", "owner"])
    assert result.exit_code == 2 and "already" in result.output


def test_list_and_remove(app, cli, tenant, db):
    staff_id = add_staff(app, tenant.company_id, "gone@example.com", "support", name="Gone")
    client = app.test_client()
    sign_in(client, "gone@example.com")
    listed = cli.invoke(args=["staff", "list", tenant.company_id]).output
    assert f"{staff_id}\tsupport\tgone@example.com\tGone" in listed
    result = cli.invoke(args=["staff", "remove", "Gone@example.com"])
    assert result.exit_code == 0 and result.output.strip() == "removed gone@example.com"
    assert client.get("/portal/").status_code == 303  # signed out at once
    assert db.scalars(select(StaffSession)).all() == []
    event = db.scalar(select(AuditEvent).where(AuditEvent.action == "staff.removed"))
    assert (event.actor_kind, event.target_id) == ("OPERATOR", staff_id)
    assert cli.invoke(args=["staff", "remove", "gone@example.com"]).exit_code == 2


def test_the_owner_invites_changes_a_role_and_removes(app, tenant, db):
    add_staff(app, tenant.company_id, "owner@example.com", "owner")
    desk = add_staff(app, tenant.company_id, "desk@example.com", "support")
    desk_client = app.test_client()
    sign_in(desk_client, "desk@example.com")
    owner = app.test_client()
    sign_in(owner, "owner@example.com")

    invited = post_form(owner, "/portal/staff", "/portal/staff",
                        {"email": "fresh@example.com", "name": "Fresh", "role": "accountant"})
    assert invited.status_code == 201
    assert "/portal/welcome/" in invited.get_data(as_text=True)
    again = post_form(owner, "/portal/staff", "/portal/staff",
                      {"email": "fresh@example.com", "role": "accountant"})
    assert again.status_code == 409

    changed = post_form(owner, "/portal/staff", f"/portal/staff/{desk}/role", {"role": "manager"})
    assert changed.status_code == 303
    assert db.get(StaffMember, (tenant.company_id, desk)).role == "manager"
    assert desk_client.get("/portal/").status_code == 303  # the role's change ended the session

    removed = post_form(owner, "/portal/staff", f"/portal/staff/{desk}/remove", {})
    assert removed.status_code == 303
    db.expire_all()
    assert db.get(StaffMember, (tenant.company_id, desk)) is None
    actions = db.scalars(select(AuditEvent.action).where(AuditEvent.actor_kind == "STAFF")
                         .order_by(AuditEvent.created_at)).all()
    assert actions[-3:] == ["staff.added", "staff.role_changed", "staff.removed"]


def test_an_owner_cannot_touch_another_companys_staff(app, tenant, other_tenant, db):
    add_staff(app, tenant.company_id, "owner@example.com", "owner")
    stranger = add_staff(app, other_tenant.company_id, "them@example.com", "support")
    owner = app.test_client()
    sign_in(owner, "owner@example.com")
    assert post_form(owner, "/portal/staff", f"/portal/staff/{stranger}/remove", {}).status_code == 404
    assert post_form(owner, "/portal/staff", f"/portal/staff/{stranger}/role",
                     {"role": "owner"}).status_code == 404
    assert db.get(StaffMember, (other_tenant.company_id, stranger)).role == "support"
    assert "them@example.com" not in owner.get("/portal/staff").get_data(as_text=True)
