"""The per-process campaign cache (docs/api.md#tiers), against PostgreSQL under gunicorn with one
worker process, so that every request meets the same cache:

  (a) the first quote after a campaign change, at a company with 100 live campaigns of 1,000
      skus and 100 categories each: each round renames one campaign (PATCH, which moves the
      company's campaigns version), then times the next quote (the worker reads the campaigns'
      small columns again) and the one after it (from the cache); then pauses that campaign,
      quotes, resumes it and times the next quote (its lists are read again, alone). The very
      first quote in the process (every list read) is timed once. Twice: campaigns naming skus
      no other names, and each sku named by two campaigns;
  (b) the worker's RSS before and after quotes at `--companies` companies of 100 such
      campaigns each (about 10 MiB of entry each), two rounds, against the 64 MiB bound.

Quotes go over HTTP from this process, one at a time. Runs on demand only:

    .venv/bin/python bench/campaign_cache.py [--companies 50] [--rounds 20]
"""
from __future__ import annotations

import argparse
import json
import os
import uuid
from dataclasses import dataclass
from datetime import timedelta

# harness also puts the repository on sys.path
from harness import PEPPER, Client, bench_database, gunicorn_process
from sqlalchemy import update

from app import create_app  # noqa: E402
from app.config import Settings  # noqa: E402
from app.database.engine import utcnow  # noqa: E402
from app.models import Campaign, CatalogItem, Customer, Program, Store, Terminal  # noqa: E402
from app.models.base import new_id  # noqa: E402
from app.services.cards import identifiers  # noqa: E402
from app.services.customers import profiles  # noqa: E402
from app.services.rewards import ledger  # noqa: E402
from app.services.tenancy import companies, credentials  # noqa: E402
from app.services.tenancy.scopes import ALL_SCOPES  # noqa: E402
from app.services.unit_of_work import UnitOfWork  # noqa: E402
from testbed.procfile import children, rss_kib  # noqa: E402

CAMPAIGNS, SKUS, CATEGORIES = 100, 1000, 100
LINES = [  # one line by a campaign's sku, one by a campaign's category, two by neither
    {"lineId": "1", "sku": "SKU-030-0500", "quantity": "1", "price": "100.00", "amount": "100.00"},
    {"lineId": "2", "sku": "BREAD", "quantity": "1", "price": "50.00", "amount": "50.00"},
    {"lineId": "3", "sku": "MILK", "quantity": "2", "price": "80.00", "amount": "160.00"},
    {"lineId": "4", "quantity": "1", "price": "30.00", "amount": "30.00"},
]


@dataclass
class Company:
    key: str
    pos_key: str
    customer_id: str
    campaign_id: str | None


def _skus(campaign: int, overlapping: bool) -> list[str]:
    """Each campaign's own 1,000 skus, or (overlapping) half shared with the next campaign."""
    first = campaign * (SKUS // 2 if overlapping else SKUS)
    return [f"SKU-{(first + i) // SKUS:03d}-{(first + i) % SKUS:04d}" for i in range(SKUS)]


def seed_company(session, index: int, campaigns: int, overlapping: bool = False) -> Company:
    """A company with a store, its register, a customer, a catalog of the receipt's items and
    `campaigns` live campaigns (inserted whole, then the version moved once)."""
    now = utcnow()
    company = companies.create_company(session, f"Shop {index}", now=now, tariff="standard",
                                       register_limit=2, status="ACTIVE")
    _, key = credentials.issue_credential(session, company.id, "bench", list(ALL_SCOPES),
                                          pepper=PEPPER, now=now)
    store = Store(company_id=company.id, name="Shop", address="Lenina 1", city="Moscow",
                  latitude=55.75, longitude=37.61, created_at=now)
    session.add(store)
    session.flush()
    pos_key = f"bench-{index}"
    session.add(Terminal(company_id=company.id, store_id=store.id, name="Register",
                         state="ACTIVE", pos_key=pos_key, created_at=now, updated_at=now))
    customer = Customer(company_id=company.id, phone=f"+7900{index:07d}", first_name="Bench",
                        card_number=identifiers.new_card_number(),
                        card_token=identifiers.new_card_token(), created_at=now)
    session.add(customer)
    session.flush()
    profiles.record_names(session, company.id, [customer.id])
    ledger.open_account(UnitOfWork.of(session), company.id, customer.id, now)
    session.execute(CatalogItem.__table__.insert(), [
        {"company_id": company.id, "store_id": store.id, "sku": sku, "name": sku, "price": 100,
         "redeemable": True, "accruable": True, "category": category, "updated_at": now}
        for sku, category in (("SKU-030-0500", "food"), ("BREAD", "category-070-0007"),
                              ("MILK", "dairy"))])
    rows = [{"company_id": company.id, "id": new_id(), "name": f"Campaign {c}",
             "starts_at": now - timedelta(hours=1), "ends_at": now + timedelta(days=30),
             "accrual_bp": 600 + c * 10, "skus": json.dumps(_skus(c, overlapping)),
             "categories": json.dumps([f"category-{c:03d}-{j:04d}" for j in range(CATEGORIES)]),
             "store_ids": "[]", "active": True, "created_at": now + timedelta(microseconds=c)}
            for c in range(campaigns)]
    if rows:
        session.execute(Campaign.__table__.insert(), rows)
        session.execute(update(Program).where(Program.company_id == company.id)
                        .values(campaigns_version=1))
    session.commit()
    return Company(key, pos_key, customer.id, rows[0]["id"] if rows else None)


class Register(Client):
    def __init__(self, port: int, company: Company):
        super().__init__(port, {"Authorization": f"Bearer {company.key}",
                                "X-Loyalty-Pos-Key": company.pos_key})
        self.company = company
        status, body = self.call("open", "POST", "/v1/checkout-sessions", {
            "externalReceiptId": f"R-{uuid.uuid4().hex[:12]}", "customerId": company.customer_id},
            {"Idempotency-Key": uuid.uuid4().hex})
        assert status == 201, body
        self.session_id = body["id"]

    def quote(self, name: str) -> dict:
        status, body = self.call(name, "POST", f"/v1/checkout-sessions/{self.session_id}/quote",
                                 {"lines": LINES}, {"Idempotency-Key": uuid.uuid4().hex})
        assert status == 201, body
        return body

    def rename_campaign(self, name: str) -> None:
        self.change_campaign({"name": name})

    def change_campaign(self, fields: dict) -> None:
        status, body = self.call("change", "PATCH", f"/v1/campaigns/{self.company.campaign_id}",
                                 fields)
        assert status == 200, body


def _milliseconds(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"p50": round(ordered[len(ordered) // 2], 1),
            "p90": round(ordered[int(len(ordered) * 0.9)], 1), "max": round(ordered[-1], 1)}


def _worker(master) -> int:
    (worker,) = children(master.pid)
    return worker


def _cpu_ms(pid: int) -> float:
    """The process's CPU time so far (user + system), ms: load on the machine lengthens a
    request's wall time, hardly its CPU time."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def first_quotes(port: int, master, company: Company, rounds: int) -> dict:
    register, worker = Register(port, company), _worker(master)
    quote = register.quote("first in the process")
    given = [line["campaignId"] is not None for line in quote["lines"]]
    cpu = {"first after a rename": 0.0, "next, cached": 0.0, "first after a resume": 0.0}
    for round_ in range(rounds):
        register.rename_campaign(f"Campaign 0, round {round_}")
        for name in ("first after a rename", "next, cached"):
            cpu[name] += _timed_quote(register, worker, name)
        register.change_campaign({"active": False})
        register.quote("first after a pause")
        register.change_campaign({"active": True})  # its lists are read again, alone
        cpu["first after a resume"] += _timed_quote(register, worker, "first after a resume")
    return {"lines given a campaign": given,
            "first in the process ms": _milliseconds(register.latencies["first in the process"])
            } | {f"{name} ms": _milliseconds(register.latencies[name])
                 | {"worker cpu mean": round(cpu[name] / rounds, 1)} for name in cpu}


def _timed_quote(register: Register, worker: int, name: str) -> float:
    """The worker's CPU ms for one quote."""
    before = _cpu_ms(worker)
    register.quote(name)
    return _cpu_ms(worker) - before


def _worker_rss_mib(master) -> dict:
    worker = _worker(master)
    status = open(f"/proc/{worker}/status").read()
    peak = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
    return {"rss": round(rss_kib(worker) / 1024, 1), "peak": round(peak / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--companies", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    with bench_database() as url:
        app = create_app(Settings(database_url=url, api_key_pepper=PEPPER, log_level="WARNING",
                                  development=False))
        session = app.extensions["session_factory"]()
        plain = seed_company(session, 0, 0)
        disjoint = seed_company(session, 1, CAMPAIGNS)
        overlapping = seed_company(session, 2, CAMPAIGNS, overlapping=True)
        many = [seed_company(session, 10 + i, CAMPAIGNS) for i in range(args.companies)]
        session.close()
        app.extensions["engine"].dispose()
        report = {}
        with gunicorn_process(url, workers=1) as (port, master):
            report["(a) disjoint skus"] = first_quotes(port, master, disjoint, args.rounds)
            report["(a) each sku in two campaigns"] = first_quotes(port, master, overlapping,
                                                                   args.rounds)
        with gunicorn_process(url, workers=1) as (port, master):
            Register(port, plain).quote("warm")
            memory = {"before (one quote, no campaigns)": _worker_rss_mib(master)}
            for round_ in (1, 2):
                for company in many:
                    Register(port, company).quote("company")
                memory[f"after round {round_} of {args.companies} companies"] = (
                    _worker_rss_mib(master))
            report[f"(b) worker MiB, {args.companies} companies x {CAMPAIGNS} campaigns x "
                   f"{SKUS} skus"] = memory
        print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
