"""The keys rotations replaced, each working until its own grace ends (docs/api.md#keys).

Changed only under the credential's row lock (`credentials._credential_to_change`), so a
credential's rotations take turns here too. Authentication reads them in its one lookup
(`credentials.authenticate`), which never matches one past its grace.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select, tuple_
from sqlalchemy.orm import Session

from app.models import ApiCredential, PreviousKey

# Replaced keys of one credential in their grace at once; one more ends the oldest's.
MOST_LIVE = 10


def _of(credential: ApiCredential):
    return (PreviousKey.company_id == credential.company_id,
            PreviousKey.credential_id == credential.id)


def keep(session: Session, credential: ApiCredential, *, valid_until: datetime | None,
         now: datetime) -> None:
    """The credential's current key is being replaced: kept until `valid_until` (None: it
    ends now). Those whose grace has ended go, and beyond MOST_LIVE the oldest."""
    kept = list(session.scalars(select(PreviousKey).where(*_of(credential))
                                .order_by(PreviousKey.sequence)))
    live = [key for key in kept if key.valid_until > now]
    if valid_until is not None and valid_until > now:
        replaced = PreviousKey(company_id=credential.company_id, credential_id=credential.id,
                               sequence=kept[-1].sequence + 1 if kept else 1,
                               key_digest=credential.key_digest, valid_until=valid_until)
        session.add(replaced)
        live.append(replaced)
    ending = [key.sequence for key in kept if key not in live[-MOST_LIVE:]]
    if ending:
        # By condition, not by ORM object: the periodic purge may have taken some already.
        session.execute(delete(PreviousKey).where(*_of(credential), PreviousKey.sequence.in_(ending))
                        .execution_options(synchronize_session=False))


def purge_ended(session: Session, *, now: datetime, limit: int) -> int:
    """Periodic retention: delete up to `limit` replaced keys whose grace has ended (never
    accepted since, whether deleted or not); how many went."""
    chosen = [tuple(row) for row in session.execute(
        select(PreviousKey.company_id, PreviousKey.credential_id, PreviousKey.sequence)
        .where(PreviousKey.valid_until <= now).limit(limit))]
    if not chosen:
        return 0
    return session.execute(
        delete(PreviousKey)
        .where(tuple_(PreviousKey.company_id, PreviousKey.credential_id, PreviousKey.sequence)
               .in_(chosen), PreviousKey.valid_until <= now)
        .execution_options(synchronize_session=False)).rowcount


def end_all(session: Session, credential: ApiCredential) -> None:
    """Revocation: no replaced key of the credential works any more."""
    session.execute(delete(PreviousKey).where(*_of(credential))
                    .execution_options(synchronize_session=False))
