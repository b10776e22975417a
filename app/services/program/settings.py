"""Changing the program (docs/api.md#tiers): `PATCH /v1/program` and `flask programs set` both come
here, so every change emits `program.updated`."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from app.models import Program
from app.services.audit import events as audit
from app.services.rewards import tiers
from app.services.tenancy import companies
from app.services.webhooks.outbox import record_event
from app.wire import format_amount, format_percent

# None in a change means "leave it"; the tier window may be set to null (all time), so for it
# "leave it" is this instead.
UNCHANGED = object()


def program_as_json(program: Program) -> dict:
    """The program as ProgramResponse (and `program.updated`) shows it."""
    return {"id": program.id, "name": program.name, "currency": "RUB",
            "accrualPercent": format_percent(program.accrual_bp),
            "maxRedeemPercent": format_percent(program.max_redeem_bp),
            "accrualDelayDays": program.accrual_delay_days,
            "holdTtlSeconds": program.hold_ttl_seconds,
            "enrollmentRequiresOtp": program.enrollment_requires_otp,
            "clawbackPolicy": program.clawback_policy,
            "welcomeBonus": format_amount(program.welcome_bonus),
            "birthdayBonus": format_amount(program.birthday_bonus),
            "tiers": tiers.as_json(tiers.from_stored(program.tiers)),
            "tierWindowDays": program.tier_window_days,
            "pointsLifetimeDays": program.points_lifetime_days,
            "expiryReminderDays": program.expiry_reminder_days,
            "offlineSaleWindowDays": program.offline_sale_window_days}


def change_program(session: Session, company_id: str, *, now: datetime,
                   tier_list: list[tiers.Tier] | None = None,
                   tier_window_days: int | None | object = UNCHANGED,
                   actor: audit.Actor | None = None, **changes) -> Program:
    """Apply the changes given (None: unchanged), `program.updated`. A new window moves its
    version: each customer's spend is recounted over it on the next touch or by the periodic
    job (app/services/rewards/spend.py), so no account is locked here."""
    problem = None if tier_list is None else tiers.tiers_problem(tier_list)
    if problem:
        raise ValueError(problem)
    if tier_list is not None:
        changes["tiers"] = tiers.stored(tier_list)
    program = companies.get_program(session, company_id)
    tiers_before = program.tiers
    companies.update_program(session, company_id, program, **changes)
    if program.tiers != tiers_before:
        # Each wallet pass shows its tier: every pass of the company may have changed now.
        program.tiers_changed_at = now
        session.flush()
    if tier_window_days is not UNCHANGED and tier_window_days != program.tier_window_days:
        program.tier_window_days = tier_window_days
        program.tier_window_version += 1
        session.flush()
    record_event(session, company_id, "program.updated", program_as_json(program))
    audit.record(session, company_id, actor, "program.updated", "program", company_id, at=now)
    return program
