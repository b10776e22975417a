"""Registers at the shop's counter, over HTTP: whole checkouts (session → quote → hold →
commit), each request retried with its own Idempotency-Key on a 503 or a broken connection,
as a register does, and every answer noted for the scenario's figures."""
from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

import requests

LINES = [
    {"lineId": "1", "sku": "MILK", "quantity": "2", "price": "89.90", "amount": "179.80"},
    {"lineId": "2", "sku": "BREAD", "quantity": "1", "price": "54.99", "amount": "54.99"},
]
BROKEN = "connection error"
RETRY_FOR = 60  # seconds a register keeps retrying one request


class CheckoutFailed(RuntimeError):
    pass


@dataclass
class Answer:
    started: float  # time.monotonic()
    ended: float
    status: int | str  # the HTTP status, or BROKEN
    code: str | None = None  # an error's machine code


@dataclass
class Tally:
    """What the registers saw: every answer, the receipts they committed, what went wrong."""

    answers: list[Answer] = field(default_factory=list)
    committed: dict[str, str] = field(default_factory=dict)  # receipt → sale id
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, answer: Answer) -> None:
        with self.lock:
            self.answers.append(answer)

    def by_status(self) -> dict:
        return dict(sorted(Counter(" ".join(str(part) for part in (a.status, a.code) if part)
                                   for a in self.answers).items()))

    def figures(self) -> dict:
        return {"checkouts": len(self.committed), "requests": len(self.answers),
                "answers": self.by_status(), "failed checkouts": len(self.failures)}

    def recovery_after(self, moment: float) -> dict:
        """Of the requests started after `moment`: seconds to the first success, and to the
        end of the last failure."""
        later = [a for a in self.answers if a.started >= moment]
        ok = [a.ended - moment for a in later if isinstance(a.status, int) and a.status < 300]
        bad = [a.ended - moment for a in later if not (isinstance(a.status, int)
                                                       and a.status < 300)]
        return {"first success s": round(min(ok), 2) if ok else None,
                "last failure s": round(max(bad), 2) if bad else 0.0}


def retry_after(response: requests.Response) -> float:
    """The server's Retry-After in seconds (at most 1: a register is impatient), else 0.2."""
    try:
        return min(float(response.headers.get("Retry-After", "0.2")), 1.0)
    except ValueError:
        return 1.0


def error_code(response: requests.Response) -> str | None:
    try:
        return response.json().get("code")
    except ValueError:
        return "(not JSON)"


class Api:
    """The public API as one tenant's key sees it."""

    def __init__(self, base_url: str, key: str):
        self.base_url = base_url
        self.key = key
        self.http = requests.Session()

    def headers(self, **more) -> dict:
        return {"Authorization": f"Bearer {self.key}", **more}

    def post(self, path: str, body: dict, **headers) -> dict:
        response = self.http.post(self.base_url + path, json=body, timeout=30,
                                  headers=self.headers(**headers))
        assert response.status_code in (200, 201), (path, response.status_code, response.text)
        return response.json()

    def get(self, path: str) -> requests.Response:
        return self.http.get(self.base_url + path, headers=self.headers(), timeout=30)


@dataclass
class Register:
    api: Api
    pos_key: str
    customer_id: str

    def send(self, path: str, body: dict, tally: Tally) -> dict:
        """POST with one Idempotency-Key, retried on 503 and broken connections until it
        answers otherwise (and while the key is still in use by a request the server has not
        finished); any other failure ends the checkout."""
        headers = self.api.headers(**{"Idempotency-Key": uuid.uuid4().hex,
                                      "X-Loyalty-Pos-Key": self.pos_key})
        give_up = time.monotonic() + RETRY_FOR
        while True:
            started = time.monotonic()
            try:
                # A fresh connection each time, as a register that keeps none makes them.
                response = requests.post(self.api.base_url + path, json=body, headers=headers,
                                         timeout=35)
                status, wait = response.status_code, retry_after(response)
            except requests.ConnectionError:
                status, wait = BROKEN, 0.2
            code = error_code(response) if status != BROKEN and status >= 300 else None
            if status == 503:
                code = f"{code}, Retry-After {response.headers.get('Retry-After')}"
            tally.note(Answer(started, time.monotonic(), status, code))
            if status in (200, 201):
                return response.json()
            in_use = code == "idempotency_key_in_use"
            if not (status in (503, BROKEN) or in_use) or time.monotonic() > give_up:
                detail = response.text[:300] if status != BROKEN else ""
                raise CheckoutFailed(f"{path}: {status} {detail}")
            time.sleep(wait)

    def quoted(self, receipt: str, tally: Tally) -> tuple[str, dict]:
        """A session for the receipt and its quote, redeeming some bonuses."""
        opened = self.send("/v1/checkout-sessions",
                           {"externalReceiptId": receipt, "customerId": self.customer_id}, tally)
        base = f"/v1/checkout-sessions/{opened['id']}"
        return base, self.send(f"{base}/quote", {"lines": LINES, "redeemAmount": "10.00"}, tally)

    def place_hold(self, receipt: str, tally: Tally) -> str:
        """A receipt left at its hold (the payment never comes); the hold's id."""
        base, quote = self.quoted(receipt, tally)
        return self.send(f"{base}/hold", {"quoteId": quote["id"]}, tally)["id"]

    def checkout(self, receipt: str, tally: Tally) -> str:
        """One receipt paid partly with bonuses; the committed sale's id."""
        base, quote = self.quoted(receipt, tally)
        if quote["discount"] != "0.00":
            self.send(f"{base}/hold", {"quoteId": quote["id"]}, tally)
        sale = self.send(f"{base}/commit", {"quoteId": quote["id"]}, tally)
        with tally.lock:
            tally.committed[receipt] = sale["id"]
        return sale["id"]


class CheckoutStream:
    """Every register checking out back to back, `pause` seconds apart, until stopped."""

    def __init__(self, registers: list[Register], prefix: str, pause: float = 0.25):
        self.registers = registers
        self.prefix = prefix
        self.pause = pause
        self.tally = Tally()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(r,), daemon=True)
                        for r in registers]

    def _run(self, register: Register) -> None:
        while not self.stopping.is_set():
            receipt = f"{self.prefix}-{uuid.uuid4().hex[:12]}"
            try:
                register.checkout(receipt, self.tally)
            except Exception as error:  # noted; the scenario asserts there were none
                with self.tally.lock:
                    self.tally.failures.append(f"{receipt}: {error}")
            self.stopping.wait(self.pause)

    def __enter__(self) -> "CheckoutStream":
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(RETRY_FOR + 40)


def open_shop(api: Api, registers: int, webhook_url: str) -> list[Register]:
    """The tenant's set-up through the API: a webhook endpoint for every event, a store, and
    per register a terminal and a customer with bonuses to spend."""
    api.post("/v1/webhook-endpoints", {"url": webhook_url, "events": ["*"]})
    store = api.post("/v1/stores", {"name": "Corner shop", "address": "Lenina 1",
                                    "city": "Moscow", "latitude": 55.75, "longitude": 37.61})
    made = []
    for index in range(registers):
        pos_key = f"register-{index}-{uuid.uuid4().hex[:6]}"
        api.post("/v1/terminals", {"storeId": store["id"], "name": f"Register {index}",
                                   "posKey": pos_key})
        customer = api.post("/v1/customers", {"phone": f"+7912{uuid.uuid4().int % 10**7:07d}",
                                              "firstName": "Anna"})
        api.post(f"/v1/customers/{customer['id']}/reward-adjustments",
                 {"amount": "100000.00", "basis": "opening balance"},
                 **{"Idempotency-Key": uuid.uuid4().hex})
        made.append(Register(api, pos_key, customer["id"]))
    return made
