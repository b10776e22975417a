"""Enrolment, search by phone and the customer directory."""
from __future__ import annotations

import json

import pytest
from sqlalchemy import select, update

from app.models import Customer, LedgerEntry, OutboxEvent, RewardAccount
from app.services.cards.identifiers import is_valid_ean13
from app.services.unit_of_work import UnitOfWork

PHONE = "+79123456789"


def enrol(client, tenant, phone=PHONE, first_name="Иван", **more):
    response = client.post("/v1/customers", json={"phone": phone, "firstName": first_name, **more},
                           headers=tenant.headers())
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def credit(client, tenant, customer_id, amount, basis="goodwill"):
    response = client.post(f"/v1/customers/{customer_id}/reward-adjustments",
                           json={"amount": amount, "basis": basis},
                           headers=tenant.headers(Idempotency_Key=f"credit-{customer_id}-{amount}"))
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def _field_error(response, loc):
    assert response.status_code == 422, response.get_json()
    assert [item["loc"] for item in response.get_json()["detail"]] == [loc]


# --- enrolment ---------------------------------------------------------------------------

@pytest.mark.parametrize("spelling", [
    "8 (912) 345-67-89", "+7 912 345 67 89", "9123456789", "89123456789", "+79123456789",
    " 8-912-345-67-89 ",
])
def test_every_usual_spelling_of_a_phone_becomes_e164(client, tenant, spelling):
    assert enrol(client, tenant, phone=spelling)["phone"] == PHONE


@pytest.mark.parametrize("phone", [
    "123", "abc", "", "+1 202 555 0143", "+380 50 123 4567", "+7 912 345 67 8", "9123456789012",
    "+7 701 123 4567",  # +7 7xx is Kazakhstan
    "1" * 200, 79123456789, None,
])
def test_an_invalid_phone_is_422_on_body_phone(client, tenant, phone):
    response = client.post("/v1/customers", json={"phone": phone, "firstName": "Иван"},
                           headers=tenant.headers())
    _field_error(response, ["body", "phone"])


def test_enrolment_answers_the_customer_with_card_and_empty_balance(client, tenant, db):
    customer = enrol(client, tenant, lastName="Петров", birthDate="1990-05-17", email="ivan@example.com")
    assert customer["firstName"] == "Иван" and customer["lastName"] == "Петров"
    assert customer["birthDate"] == "1990-05-17" and customer["email"] == "ivan@example.com"
    assert customer["balance"] == {"available": "0.00", "pending": "0.00", "reserved": "0.00"}
    assert customer["createdAt"].endswith("Z")
    assert is_valid_ean13(customer["cardNumber"]) and customer["cardNumber"].startswith("2")
    stored = db.scalar(select(Customer).where(Customer.id == customer["id"]))
    assert customer["cardUrl"] == f"http://127.0.0.1:8000/cards/{stored.card_token}"
    assert len(stored.card_token) >= 43
    account = db.scalar(select(RewardAccount).where(RewardAccount.customer_id == customer["id"]))
    assert (account.company_id, account.available, account.pending, account.reserved) == (
        tenant.company_id, 0, 0, 0)


def test_each_customer_gets_a_card_of_their_own(client, tenant):
    first = enrol(client, tenant, phone="+79120000001")
    second = enrol(client, tenant, phone="+79120000002")
    assert first["cardNumber"] != second["cardNumber"]
    assert first["cardUrl"] != second["cardUrl"]


def test_card_url_ignores_a_forged_host_header(client, tenant, db):
    """The link reaches the shopper (and the customer.created webhook an SMS gateway relays):
    it is built on PUBLIC_BASE_URL whatever Host the caller sends."""
    forged = {"Host": "evil.example", "X-Forwarded-Host": "evil.example"}
    response = client.post("/v1/customers", json={"phone": PHONE, "firstName": "Иван"},
                           headers=tenant.headers(**forged))
    assert response.status_code == 201
    customer = response.get_json()
    assert customer["cardUrl"].startswith("http://127.0.0.1:8000/cards/")
    found = client.get("/v1/customers/search", query_string={"phone": customer["phone"]},
                       headers=tenant.headers(**forged))
    assert found.get_json()["cardUrl"] == customer["cardUrl"]
    payloads = db.scalars(select(OutboxEvent.payload)).all()
    assert payloads and not any("evil.example" in payload for payload in payloads)
    assert any(customer["cardUrl"] in payload for payload in payloads)


def test_enrolment_emits_customer_created_with_the_resource(client, tenant, db):
    customer = enrol(client, tenant)
    events = db.scalars(select(OutboxEvent).where(OutboxEvent.company_id == tenant.company_id)).all()
    assert [e.type for e in events] == ["customer.created"]
    payload = json.loads(events[0].payload)
    assert payload["type"] == "customer.created"
    assert payload["data"] == customer


def test_a_phone_enrolled_twice_is_409_customer_exists_with_its_id(client, tenant, other_tenant, db):
    customer = enrol(client, tenant, phone="8 912 345 67 89")
    response = client.post("/v1/customers", json={"phone": "+7 (912) 345-67-89", "firstName": "Пётр"},
                           headers=tenant.headers())
    assert response.status_code == 409
    assert response.get_json() == {"detail": response.get_json()["detail"], "code": "customer_exists",
                                   "customerId": customer["id"]}
    assert len(db.scalars(select(Customer)).all()) == 1
    # The same phone in another company is another customer.
    assert enrol(client, other_tenant, phone=PHONE)["id"] != customer["id"]


@pytest.mark.parametrize("body, loc", [
    ({"phone": PHONE}, ["body", "firstName"]),
    ({"phone": PHONE, "firstName": "   "}, ["body", "firstName"]),
    ({"phone": PHONE, "firstName": "И" * 101}, ["body", "firstName"]),
    ({"firstName": "Иван"}, ["body", "phone"]),
    ({"phone": PHONE, "firstName": "Иван", "email": "not-an-email"}, ["body", "email"]),
    ({"phone": PHONE, "firstName": "Иван", "birthDate": "1990-13-01"}, ["body", "birthDate"]),
    ({"phone": PHONE, "firstName": "Иван", "birthDate": "2999-01-01"}, ["body", "birthDate"]),
    ({"phone": PHONE, "firstName": "Иван", "birthDate": "19900101"}, ["body", "birthDate"]),
    ({"phone": PHONE, "firstName": "Иван", "birthDate": "1990-W01-1"}, ["body", "birthDate"]),
    ({"phone": PHONE, "firstName": "Иван", "companyId": "x"}, ["body", "companyId"]),
])
def test_enrolment_body_is_validated(client, tenant, body, loc):
    _field_error(client.post("/v1/customers", json=body, headers=tenant.headers()), loc)


def test_names_are_trimmed(client, tenant):
    customer = enrol(client, tenant, first_name="  Иван ", lastName=" Петров ")
    assert (customer["firstName"], customer["lastName"]) == ("Иван", "Петров")


def test_enrolment_needs_customers_write(client, tenant):
    key = tenant.key_with("customers:read")
    response = client.post("/v1/customers", json={"phone": PHONE, "firstName": "Иван"},
                           headers=tenant.headers(key=key))
    assert response.status_code == 403 and response.get_json()["code"] == "insufficient_scope"


# --- search by phone --------------------------------------------------------------------

@pytest.mark.parametrize("spelling", ["8 (912) 345-67-89", "+7 912 345 67 89", "9123456789", PHONE])
def test_search_finds_the_customer_in_any_phone_spelling(client, tenant, spelling):
    customer = enrol(client, tenant)
    credit(client, tenant, customer["id"], "150.50")
    response = client.get("/v1/customers/search", query_string={"phone": spelling},
                          headers=tenant.headers())
    assert response.status_code == 200
    found = response.get_json()
    assert found["id"] == customer["id"]
    assert found["balance"] == {"available": "150.50", "pending": "0.00", "reserved": "0.00"}
    assert found["cardNumber"] == customer["cardNumber"]


def test_search_for_an_unknown_phone_is_404(client, tenant):
    enrol(client, tenant)
    response = client.get("/v1/customers/search", query_string={"phone": "+79120000000"},
                          headers=tenant.headers())
    assert response.status_code == 404 and response.get_json()["code"] == "not_found"


@pytest.mark.parametrize("query", [{"phone": "12345"}, {"phone": ""}, {}])
def test_search_with_an_invalid_or_missing_phone_is_422_on_query_phone(client, tenant, query):
    response = client.get("/v1/customers/search", query_string=query, headers=tenant.headers())
    _field_error(response, ["query", "phone"])


def test_search_shows_matured_accruals_as_available(client, tenant, db, app):
    customer = enrol(client, tenant)
    _pending_accrual(app, tenant.company_id, customer["id"], 5000, matured=True)
    found = client.get("/v1/customers/search", query_string={"phone": PHONE},
                       headers=tenant.headers()).get_json()
    assert found["balance"] == {"available": "50.00", "pending": "0.00", "reserved": "0.00"}
    # The touch matured it for good.
    entry = db.scalar(select(LedgerEntry).where(LedgerEntry.customer_id == customer["id"]))
    assert entry.status == "ACTIVE"


def _pending_accrual(app, company_id, customer_id, amount, *, matured):
    """An accrual PENDING for a day; `matured` moves its availableAt into the past."""
    from datetime import timedelta

    from app.database.engine import utcnow
    from app.services.rewards import ledger

    session = app.extensions["session_factory"]()
    now = utcnow()
    account = ledger.lock(UnitOfWork.of(session), company_id, customer_id, now)
    ledger.post(account, type="ACCRUAL", amount=amount, now=now, status="PENDING",
                available_at=now + timedelta(days=1))
    session.flush()
    if matured:
        past = now - timedelta(seconds=1)
        session.execute(update(LedgerEntry).where(LedgerEntry.customer_id == customer_id,
                                                  LedgerEntry.status == "PENDING")
                        .values(available_at=past))
        account.next_maturity_at = past
    session.commit()
    session.close()


# --- the directory ----------------------------------------------------------------------

@pytest.fixture
def people(client, tenant):
    """Four customers, in enrolment order, with different balances."""
    made = [
        enrol(client, tenant, phone="+79161112233", first_name="Иван", lastName="Петров"),
        enrol(client, tenant, phone="+79262223344", first_name="Мария", lastName="Иванова"),
        enrol(client, tenant, phone="+79033334455", first_name="John", lastName="Smith"),
        enrol(client, tenant, phone="+74951234567", first_name="Олег", lastName=None),
    ]
    credit(client, tenant, made[0]["id"], "100.00")
    credit(client, tenant, made[1]["id"], "250.50")
    credit(client, tenant, made[2]["id"], "0.01")
    return made


def directory(client, tenant, **query):
    response = client.get("/v1/customers", query_string=query, headers=tenant.headers())
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def _ids(page):
    return [item["id"] for item in page["items"]]


def test_directory_lists_every_customer_in_enrolment_order_with_balances(client, tenant, people):
    page = directory(client, tenant)
    assert (page["offset"], page["limit"], page["total"]) == (0, 20, 4)
    assert _ids(page) == [p["id"] for p in people]
    assert page["items"][1]["balance"] == {"available": "250.50", "pending": "0.00", "reserved": "0.00"}
    assert page["items"][0]["cardUrl"] == people[0]["cardUrl"]


@pytest.mark.parametrize("query, expected", [
    ("иван", [0, 1]),          # first name of one, last name of the other, any case
    ("ИВАН", [0, 1]),
    ("Петр", [0]),
    ("иван петров", [0]),      # "first last"
    ("smith", [2]),
    ("SMI", [2]),
    ("олег", [3]),
    ("1112233", [0]),          # digits anywhere in the phone
    ("926", [1]),
    ("+7 (903) 333", [2]),     # written as a phone
    ("8 916 111 22 33", [0]),  # a whole number in national spelling
    ("495", [3]),
    ("nobody", []),
    ("%", []),                 # LIKE wildcards are literal
    ("_", []),
])
def test_directory_query_matches_phone_digits_or_names(client, tenant, people, query, expected):
    page = directory(client, tenant, query=query)
    assert _ids(page) == [people[i]["id"] for i in expected]
    assert page["total"] == len(expected)


@pytest.mark.parametrize("minimum, expected", [
    ("100", [0, 1]), ("100.00", [0, 1]), ("100.5", [1]), ("250.50", [1]), ("250.51", []),
    ("0", [0, 1, 2, 3]), ("0.01", [0, 1, 2]), (0, [0, 1, 2, 3]), ("999999999999999999.99", []),
])
def test_directory_minimum_available_as_number_or_decimal_string(client, tenant, people, minimum, expected):
    page = directory(client, tenant, minimumAvailable=minimum)
    assert _ids(page) == [people[i]["id"] for i in expected]
    assert page["total"] == len(expected)


def test_directory_combines_query_and_minimum_available(client, tenant, people):
    assert _ids(directory(client, tenant, query="иван", minimumAvailable="200")) == [people[1]["id"]]


@pytest.mark.parametrize("query, loc", [
    ({"minimumAvailable": "-1"}, ["query", "minimumAvailable"]),
    ({"minimumAvailable": "1.001"}, ["query", "minimumAvailable"]),
    ({"minimumAvailable": "1e3"}, ["query", "minimumAvailable"]),
    ({"minimumAvailable": "abc"}, ["query", "minimumAvailable"]),
    ({"minimumAvailable": "1" * 19}, ["query", "minimumAvailable"]),
    ({"query": "x" * 101}, ["query", "query"]),
    ({"limit": 0}, ["query", "limit"]),
    ({"limit": 101}, ["query", "limit"]),
    ({"offset": -1}, ["query", "offset"]),
    ({"offset": 1_000_001}, ["query", "offset"]),
])
def test_directory_parameters_out_of_bounds_are_422(client, tenant, query, loc):
    response = client.get("/v1/customers", query_string=query, headers=tenant.headers())
    _field_error(response, loc)


def test_directory_pages_with_offset_and_limit_and_counts_all(client, tenant, people):
    first = directory(client, tenant, limit=3)
    second = directory(client, tenant, offset=3, limit=3)
    beyond = directory(client, tenant, offset=10, limit=3)
    assert (first["total"], second["total"], beyond["total"]) == (4, 4, 4)
    assert _ids(first) + _ids(second) == [p["id"] for p in people]
    assert beyond["items"] == []
    filtered = directory(client, tenant, query="иван", offset=1, limit=1)
    assert (_ids(filtered), filtered["total"]) == ([people[1]["id"]], 2)


def test_directory_shows_due_accruals_as_available(client, tenant, people, app):
    _pending_accrual(app, tenant.company_id, people[3]["id"], 700, matured=True)
    _pending_accrual(app, tenant.company_id, people[2]["id"], 900, matured=False)
    items = directory(client, tenant)["items"]
    assert items[3]["balance"] == {"available": "7.00", "pending": "0.00", "reserved": "0.00"}
    assert items[2]["balance"] == {"available": "0.01", "pending": "9.00", "reserved": "0.00"}


def test_directory_never_lists_another_companys_customers(client, tenant, other_tenant, people):
    stranger = enrol(client, other_tenant, phone="+79161112233", first_name="Иван")
    assert stranger["id"] not in _ids(directory(client, tenant, query="иван"))
    page = directory(client, other_tenant)
    assert (_ids(page), page["total"]) == ([stranger["id"]], 1)
    response = client.get("/v1/customers/search", query_string={"phone": "+79262223344"},
                          headers=other_tenant.headers())
    assert response.status_code == 404


def test_a_card_number_clash_is_retried_with_a_new_number(client, tenant, monkeypatch):
    from app.services.cards import identifiers

    first = enrol(client, tenant, phone="+79120000001")
    given = iter([first["cardNumber"], first["cardNumber"], "2000000000008"])
    monkeypatch.setattr(identifiers, "new_card_number", lambda: next(given))
    second = enrol(client, tenant, phone="+79120000002")
    assert second["cardNumber"] == "2000000000008"
    assert len(directory(client, tenant)["items"]) == 2


@pytest.mark.postgres
def test_simultaneous_enrolments_of_one_phone_make_one_customer(app, tenant, db):
    from tests.api.test_rewards_concurrency import together

    def attempt(client, i):
        response = client.post("/v1/customers", json={"phone": PHONE, "firstName": f"Иван {i}"},
                               headers=tenant.headers())
        return response.status_code, response.get_json()

    # Use the key once first: its at-most-once-a-minute lastUsedAt write would queue the requests.
    assert app.test_client().get("/v1/customers", headers=tenant.headers()).status_code == 200
    answers = together(app, 8, attempt)
    created = [body for status, body in answers if status == 201]
    refused = [body for status, body in answers if status == 409]
    assert len(created) == 1 and len(refused) == 7
    assert {body["code"] for body in refused} == {"customer_exists"}
    assert {body["customerId"] for body in refused} == {created[0]["id"]}
    assert len(db.scalars(select(Customer)).all()) == 1
    assert len(db.scalars(select(RewardAccount)).all()) == 1


def test_optional_fields_left_blank_are_null(client, tenant):
    customer = enrol(client, tenant, lastName="", birthDate=" ", email="", enrollmentChallengeId="")
    assert (customer["lastName"], customer["birthDate"], customer["email"]) == (None, None, None)


def test_a_nul_character_anywhere_is_refused_not_a_server_error(client, tenant):
    """PostgreSQL text cannot hold NUL; the driver would fail with a 500."""
    customer = enrol(client, tenant)
    body = client.post("/v1/customers", json={"phone": "+79120000009", "firstName": "a\x00b"},
                       headers=tenant.headers())
    assert body.status_code == 422 and body.get_json()["detail"][0]["loc"] == ["body", "firstName"]
    challenge = client.post("/v1/customers", json={"phone": "+79120000009", "firstName": "Ян",
                                                   "enrollmentChallengeId": "\x00"},
                            headers=tenant.headers())
    assert challenge.status_code == 422
    query = client.get("/v1/customers", query_string={"query": "a\x00b"}, headers=tenant.headers())
    assert query.status_code == 422 and query.get_json()["detail"] == [{
        "loc": ["query", "query"], "msg": "must not contain the NUL character", "type": "string_nul"}]
    path = client.get("/v1/customers/a\x00b/reward-account", headers=tenant.headers())
    assert path.status_code == 404
    adjustment = client.post(f"/v1/customers/{customer['id']}/reward-adjustments",
                             json={"amount": "1.00", "basis": "\x00"},
                             headers=tenant.headers(Idempotency_Key="nul-basis-1"))
    assert adjustment.status_code == 422
    assert adjustment.get_json()["detail"][0]["loc"] == ["body", "basis"]
    # Without a key the answer is still 401: authentication comes first.
    assert client.get("/v1/customers", query_string={"query": "\x00"}).status_code == 401
