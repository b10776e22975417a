"""The operator's flask commands: each prints its result as the last line, alone."""
from __future__ import annotations

from sqlalchemy import func, select

from app.models import ApiCredential, Company, Program, Store, Subscription, Terminal
from app.services.tenancy import keys


def _last_line(result) -> str:
    assert result.exit_code == 0, result.output
    return result.output.strip().splitlines()[-1]


def test_company_credentials_programs_and_subscriptions(app, client, db):
    runner = app.test_cli_runner()
    company_id = _last_line(runner.invoke(args=["companies", "create", "Bakery", "--register-limit", "3"]))
    subscription = db.scalar(select(Subscription).where(Subscription.company_id == company_id))
    assert (subscription.tariff, subscription.register_limit, subscription.status) == ("trial", 3, "TRIAL")
    assert (subscription.access_until - subscription.access_from).days == 30

    key = _last_line(runner.invoke(args=["credentials", "issue", company_id, "--name", "till",
                                         "--scopes", "company:read,program:read"]))
    assert keys.is_well_formed(key)
    assert client.get("/v1/company", headers={"Authorization": f"Bearer {key}"}).get_json()["name"] == "Bakery"
    assert client.get("/v1/subscription", headers={"Authorization": f"Bearer {key}"}).status_code == 403

    result = runner.invoke(args=["programs", "set", company_id, "--accrual-percent", "7.5",
                                 "--max-redeem-percent", "50", "--clawback-policy", "WITHIN_BALANCE",
                                 "--enrollment-requires-otp"])
    assert result.exit_code == 0, result.output
    program = client.get("/v1/program", headers={"Authorization": f"Bearer {key}"}).get_json()
    assert (program["accrualPercent"], program["maxRedeemPercent"]) == ("7.50", "50.00")
    assert program["clawbackPolicy"] == "WITHIN_BALANCE" and program["enrollmentRequiresOtp"] is True

    result = runner.invoke(args=["subscriptions", "set", company_id, "--status", "SUSPENDED",
                                 "--access-until", "2030-01-31T00:00:00Z"])
    assert _last_line(result).startswith("SUSPENDED")
    db.expire_all()
    subscription = db.scalar(select(Subscription).where(Subscription.company_id == company_id))
    assert subscription.status == "SUSPENDED" and subscription.access_until.year == 2030

    listing = runner.invoke(args=["credentials", "list", company_id])
    assert key not in listing.output and key[:16] in listing.output

    credential_id = db.scalar(select(ApiCredential.id).where(ApiCredential.company_id == company_id))
    new_key = _last_line(runner.invoke(args=["credentials", "rotate", credential_id]))
    assert client.get("/v1/company", headers={"Authorization": f"Bearer {key}"}).status_code == 401
    assert client.get("/v1/company", headers={"Authorization": f"Bearer {new_key}"}).status_code == 200
    assert runner.invoke(args=["credentials", "revoke", credential_id]).exit_code == 0
    assert client.get("/v1/company", headers={"Authorization": f"Bearer {new_key}"}).status_code == 401


def test_bad_operator_input_changes_nothing(app, db):
    runner = app.test_cli_runner()
    company_id = _last_line(runner.invoke(args=["companies", "create", "Bakery"]))
    bad = runner.invoke(args=["programs", "set", company_id, "--accrual-percent", "150"])
    assert bad.exit_code != 0
    assert db.scalar(select(Program.accrual_bp).where(Program.company_id == company_id)) == 500
    bad_scope = runner.invoke(args=["credentials", "issue", company_id, "--name", "x", "--scopes", "root"])
    assert bad_scope.exit_code != 0
    assert db.scalar(select(ApiCredential).where(ApiCredential.company_id == company_id)) is None


def test_demo_prints_a_key_with_every_scope(app, client, db):
    key = _last_line(app.test_cli_runner().invoke(args=["demo"]))
    headers = {"Authorization": f"Bearer {key}"}
    assert client.get("/v1/company", headers=headers).status_code == 200
    subscription = client.get("/v1/subscription", headers=headers).get_json()
    assert (subscription["status"], subscription["registerLimit"], subscription["activeTerminals"]) == ("ACTIVE", 5, 1)
    program = client.get("/v1/program", headers=headers).get_json()
    assert (program["accrualPercent"], program["maxRedeemPercent"], program["accrualDelayDays"],
            program["holdTtlSeconds"], program["enrollmentRequiresOtp"]) == ("5.00", "30.00", 0, 900, False)
    assert db.scalar(select(Store.channels)) == "MINIAPP"
    assert db.scalar(select(Terminal.state)) == "ACTIVE"
    scopes = client.get("/v1/api-credentials", headers=headers).get_json()["items"][0]["scopes"]
    assert len(scopes) == 17 and "reports:read" in scopes and "audit:read" in scopes


def test_demo_again_reuses_its_company_and_reissues_the_key(app, client, db):
    runner = app.test_cli_runner()
    first = _last_line(runner.invoke(args=["demo"]))
    again = runner.invoke(args=["demo"])
    second = _last_line(again)
    assert first != second
    # The earlier key is named (by its display prefix) as revoked, never silently.
    assert f"revoked the earlier demo key {first[:16]}" in again.stderr
    assert client.get("/v1/company", headers={"Authorization": f"Bearer {first}"}).status_code == 401
    assert client.get("/v1/company", headers={"Authorization": f"Bearer {second}"}).status_code == 200
    assert db.scalar(select(func.count()).select_from(Company)) == 1
    assert db.scalar(select(func.count()).select_from(Store)) == 1
    assert db.scalar(select(func.count()).select_from(Terminal)) == 1


def test_idempotency_purge_reports_a_count(app):
    assert _last_line(app.test_cli_runner().invoke(args=["idempotency", "purge"])).startswith("purged ")
