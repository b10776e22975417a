"""Companies with their program and subscription: created and tuned by the operator."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.models import Company, Program, Subscription, Terminal
from app.services.errors import NotFound

SUBSCRIPTION_STATUSES = ("TRIAL", "ACTIVE", "PAST_DUE", "SUSPENDED", "CANCELLED")
CLAWBACK_POLICIES = ("UNLIMITED", "WITHIN_BALANCE", "ONLY_PENDING")
TRIAL_DAYS = 30
LONGEST_POINTS_LIFETIME_DAYS = 3650
LONGEST_EXPIRY_REMINDER_DAYS = 90
# A change to null (a setting that may be null), where None means "leave it as it is".
NULL = object()


@dataclass(frozen=True)
class ProgramSettings:
    """Defaults are the demo's (docs/api.md#operators)."""

    accrual_bp: int = 500
    max_redeem_bp: int = 3000
    accrual_delay_days: int = 0
    hold_ttl_seconds: int = 900
    enrollment_requires_otp: bool = False
    clawback_policy: str = "UNLIMITED"


def create_company(session: Session, name: str, *, now: datetime, tariff: str = "trial",
                   register_limit: int = 1, status: str = "TRIAL",
                   program: ProgramSettings = ProgramSettings()) -> Company:
    company = Company(name=name, created_at=now)
    session.add(company)
    session.flush()
    session.add(Program(company_id=company.id, name=f"{name} bonuses", created_at=now,
                        **program.__dict__))
    session.add(Subscription(company_id=company.id, tariff=tariff, register_limit=register_limit,
                             status=status, access_from=now,
                             access_until=now + timedelta(days=TRIAL_DAYS), created_at=now))
    session.flush()
    return company


def list_companies(session: Session) -> list[tuple[Company, Subscription]]:
    """Every company with its subscription, oldest first (the operator's list)."""
    return [(company, subscription) for company, subscription in session.execute(
        select(Company, Subscription).join(Subscription, Subscription.company_id == Company.id)
        .order_by(Company.created_at, Company.id))]


def get_company(session: Session, company_id: str) -> Company:
    company = session.get(Company, company_id)
    if company is None:
        raise NotFound("company")
    return company


def get_program(session: Session, company_id: str) -> Program:
    program = session.scalar(select(Program).where(Program.company_id == company_id))
    if program is None:
        raise NotFound("program")
    return program


def get_subscription(session: Session, company_id: str, *, for_update: bool = False) -> Subscription:
    query = select(Subscription).where(Subscription.company_id == company_id)
    if for_update:
        query = query.with_for_update()
    subscription = session.scalar(query)
    if subscription is None:
        raise NotFound("subscription")
    return subscription


def count_active_terminals(session: Session, company_id: str) -> int:
    return session.scalar(select(func.count()).select_from(Terminal).where(
        Terminal.company_id == company_id, Terminal.state == "ACTIVE")) or 0


def update_program(session: Session, company_id: str, program: Program | None = None,
                   **changes) -> Program:
    """Change the program's settings given (docs/api.md#operators, #expiry); a later change of the
    points' lifetime touches only later lots. `program`: the company's, when the caller has read
    it."""
    program = program or get_program(session, company_id)
    for name, most in (("points_lifetime_days", LONGEST_POINTS_LIFETIME_DAYS),
                       ("expiry_reminder_days", LONGEST_EXPIRY_REMINDER_DAYS)):
        value = changes.get(name)
        if value not in (None, NULL) and not 1 <= value <= most:
            raise ValueError(f"{name} must be from 1 to {most}, or null")
    if changes.get("clawback_policy") not in (None, *CLAWBACK_POLICIES):
        raise ValueError(f"clawback policy must be one of {', '.join(CLAWBACK_POLICIES)}")
    return _changed(session, program, changes)


def update_subscription(session: Session, company_id: str, **changes) -> Subscription:
    subscription = get_subscription(session, company_id, for_update=True)
    if changes.get("status") not in (None, *SUBSCRIPTION_STATUSES):
        raise ValueError(f"status must be one of {', '.join(SUBSCRIPTION_STATUSES)}")
    return _changed(session, subscription, changes)


def _changed(session: Session, row, changes: dict):
    """`row` with every change that is not None set (None means: leave as it is; NULL sets
    a setting that may be null to null)."""
    for name, value in changes.items():
        if value is not None:
            setattr(row, name, None if value is NULL else value)
    session.flush()
    return row
