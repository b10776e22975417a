"""The keys rotations replaced, each working until its own grace ends (CONTRACT §3).

Changed only under the credential's row lock (`credentials._credential_to_change`), so a
credential's rotations take turns here too. Authentication reads them in its one lookup
(`credentials.authenticate`), which never matches one past its grace.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
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
    ending = [key for key in kept if key not in live[-MOST_LIVE:]]
    for key in ending:
        session.delete(key)


def end_all(session: Session, credential: ApiCredential) -> None:
    """Revocation: no replaced key of the credential works any more."""
    session.execute(delete(PreviousKey).where(*_of(credential))
                    .execution_options(synchronize_session=False))
