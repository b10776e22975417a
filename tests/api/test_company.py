"""The company, program and subscription the key belongs to."""


def test_company_program_and_subscription_are_the_keys_own(client, tenant, other_tenant):
    company = client.get("/v1/company", headers=tenant.headers())
    assert company.status_code == 200
    assert company.get_json()["id"] == tenant.company_id
    assert company.get_json()["name"] == "Test Shop"
    assert company.get_json()["createdAt"].endswith("Z")

    program = client.get("/v1/program", headers=tenant.headers()).get_json()
    assert program["currency"] == "RUB"
    assert program["accrualPercent"] == "5.00" and program["maxRedeemPercent"] == "30.00"
    assert program["clawbackPolicy"] == "UNLIMITED" and program["holdTtlSeconds"] == 900

    subscription = client.get("/v1/subscription", headers=other_tenant.headers()).get_json()
    assert subscription["status"] == "ACTIVE"
    assert subscription["activeTerminals"] == 0
    assert client.get("/v1/company", headers=other_tenant.headers()).get_json()["name"] == "Other Shop"
