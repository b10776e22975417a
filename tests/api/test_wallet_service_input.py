"""Whatever a request to the Wallet web service holds, it is answered 2xx, 304, 400, 401, 404
or 413, never 500, and no traceback is logged: tags, dates and tokens beyond what a parser or a
date can hold, bodies over the bound however sent, push tokens in other scripts."""
from __future__ import annotations

import io
from datetime import timedelta

import pytest
from gunicorn.http.errors import InvalidChunkSize
from sqlalchemy import update

from app.database.engine import utcnow
from app.models import RewardAccount, WalletRegistration
from testbed.cards import PASS_TYPE_ID, make_customer
from testbed.phone import Phone
from tests.api.test_passkit import certificates, wallet_client  # noqa: F401 - fixtures
from tests.api.wallet_helpers import settled
from tests.log_lines import lines_of, written_log


@pytest.fixture
def phone(wallet_client, tenant, db):  # noqa: F811
    customer = make_customer(db, tenant.company_id, available=10000)
    settled(db, customer)
    phone = Phone.adding(wallet_client, customer)
    assert phone.register().status_code == 201
    return phone


def _no_traceback(written: io.StringIO) -> None:
    assert not [line for line in lines_of(written)
                if line["level"] == "ERROR" or "exception" in line], written.getvalue()


@pytest.mark.parametrize("tag", ["300000000000000000", "99999999999999999999", "1%00"])
def test_a_tag_the_service_never_gave_reads_as_absent(phone, tag):
    with written_log() as written:
        listed = phone.updated_since(tag)
    assert listed.status_code == 200, listed.get_data(as_text=True)
    assert listed.get_json()["serialNumbers"] == [phone.serial]  # every pass of the device
    _no_traceback(written)


@pytest.mark.parametrize("authorization", ["ApplePass é", "ApplePass " + "ü" * 43,
                                           "applepass \x7f\x80"])
def test_an_authorization_of_any_bytes_is_401(phone, wallet_client, authorization):  # noqa: F811
    with written_log() as written:
        answers = [wallet_client.get(f"{phone.base}/passes/{PASS_TYPE_ID}/{phone.serial}",
                                     headers={"Authorization": authorization}),
                   wallet_client.post(phone.registration(device="other"),
                                      json={"pushToken": "abc"},
                                      headers={"Authorization": authorization})]
    for answer in answers:
        assert (answer.status_code, answer.get_json()["code"]) == (401, "invalid_pass_token")
    _no_traceback(written)


@pytest.mark.parametrize("date", ["Mon, 01 Jan 99999999999 00:00:00 GMT",
                                  "Fri, 31 Dec 9999 23:59:59 -2359"])
def test_an_if_modified_since_that_names_no_moment_reads_as_absent(phone, date):
    with written_log() as written:
        fetched = phone.latest(date)
    assert fetched.status_code == 200 and fetched.mimetype == "application/vnd.apple.pkpass"
    _no_traceback(written)


def test_a_pass_fetched_again_with_its_own_last_modified_is_304(phone, db):
    """The header holds whole seconds and the change is dated to the microsecond. The change
    here is dated a moment ahead, so the pass is always answered within its change's second."""
    db.execute(update(RewardAccount).where(RewardAccount.customer_id == phone.serial)
               .values(updated_at=(utcnow() + timedelta(seconds=2)).replace(microsecond=654321)))
    db.commit()
    fetched = phone.latest()
    assert fetched.status_code == 200
    again = phone.latest(fetched.headers["Last-Modified"])
    assert again.status_code == 304, again.headers


@pytest.mark.parametrize("push_token", ["ａｂｃ１２３", "abc١٢٣", "ß", "abcxyz", "0x12"])
def test_a_push_token_is_ascii_hexadecimal_digits(phone, wallet_client, db,  # noqa: F811
                                                  push_token):
    answer = wallet_client.post(phone.registration(device="other"),
                                json={"pushToken": push_token}, headers=phone.auth())
    assert (answer.status_code, answer.get_json()["code"]) == (400, "invalid_passkit_request")
    assert db.query(WalletRegistration).count() == 1  # the fixture's phone alone


def _sent_chunked(client, path: str, body: bytes):
    """Without Content-Length, in the environ of a server that ends the input (as gunicorn's
    does): only the body itself can be measured."""
    return client.post(path, input_stream=io.BytesIO(body), content_type="application/json",
                       headers={"Transfer-Encoding": "chunked"},
                       environ_overrides={"wsgi.input_terminated": True})


@pytest.mark.parametrize("chunked", [False, True], ids=["with Content-Length", "chunked"])
def test_a_log_body_over_64_kib_is_413_however_sent(phone, wallet_client, chunked):  # noqa: F811
    path = f"{phone.base}/log"
    too_big = b'{"logs": ["' + b"x" * (64 * 1024) + b'"]}'
    fits = b'{"logs": ["' + b"x" * (60 * 1024) + b'"]}'
    if chunked:
        refused, taken = (_sent_chunked(wallet_client, path, body) for body in (too_big, fits))
    else:
        refused, taken = (wallet_client.post(path, data=body, content_type="application/json")
                          for body in (too_big, fits))
    assert (refused.status_code, refused.get_json()["code"]) == (413, "payload_too_large")
    assert taken.status_code == 200


class _BrokenFraming(io.BytesIO):
    """A chunked body whose framing breaks after its first bytes, told as gunicorn's reader
    tells it (a chunk size that is not hexadecimal)."""

    def read(self, size=-1):
        if self.tell():
            raise InvalidChunkSize(b"zz")
        return super().read(min(size, 2) if size and size > 0 else 2)

    def readinto(self, buffer):
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


def test_a_log_body_with_broken_chunked_framing_is_400(phone, wallet_client):  # noqa: F811
    with written_log() as written:
        answer = wallet_client.post(f"{phone.base}/log", input_stream=_BrokenFraming(b'{"logs"'),
                                    content_type="application/json",
                                    headers={"Transfer-Encoding": "chunked"},
                                    environ_overrides={"wsgi.input_terminated": True})
    assert (answer.status_code, answer.get_json()["code"]) == (400, "bad_request")
    _no_traceback(written)
