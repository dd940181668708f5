"""Time for the operator: an injectable clock and Strimzi's timestamp format.

Auto-restart back-off is counted in "minutes" whose length is a setting (`--minute-seconds`), so tests
and demos can run Strimzi's schedule on a short unit; the default minute is 60 s, as in Strimzi.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware, in UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


def timestamp(moment: datetime) -> str:
    """`2026-11-22T10:15:30.123Z`: Strimzi's ISO-8601 instant in UTC, to the millisecond (Java's
    Instant.parse reads it; whole seconds alone would blur a back-off counted in one-second minutes)."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def parse_timestamp(text: str) -> datetime | None:
    """Reads Strimzi's and our own timestamps (any RFC 3339 instant); None for anything else."""
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
