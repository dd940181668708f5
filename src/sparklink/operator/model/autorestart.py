"""Automatic restarts of FAILED connectors and tasks: Strimzi's back-off schedule, on an injected clock.

After the n-th restart the next one waits min(n*n + n, 60) minutes (2, 6, 12, 20, 30, 42, 56, 60, ...),
counted in whole minutes as Java's ChronoUnit.MINUTES does; the first restart is immediate. With
`maxRestarts` set, no restart follows the last one. A connector that is healthy at a reconcile more than
one back-off interval after the last restart has its count reset. The "minute" is a setting so tests
can run the schedule on seconds. Used by `sparklink.operator.reconcile.connector`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sparklink.operator.clock import parse_timestamp
from sparklink.operator.model.rendering import JsonObject, json_name, render

MAX_BACKOFF_MINUTES = 60


@dataclass(frozen=True)
class AutoRestartSpec:
    """`spec.autoRestart`: present means on unless `enabled: false`; `maxRestarts` None is unlimited."""

    enabled: bool = True
    max_restarts: int | None = None

    @classmethod
    def from_json(cls, raw: Any) -> AutoRestartSpec | None:
        if not isinstance(raw, dict):
            return None
        max_restarts = raw.get("maxRestarts")
        return cls(enabled=raw.get("enabled", True) is not False, max_restarts=_int_or_none(max_restarts))


@dataclass(frozen=True)
class AutoRestartStatus:
    """`status.autoRestart` (KafkaConnector) or one entry of `status.autoRestartStatuses` (MM2)."""

    count: int
    last_restart: datetime | None = field(metadata=json_name("lastRestartTimestamp"))
    connector_name: str | None = None

    @classmethod
    def from_json(cls, raw: Any) -> AutoRestartStatus | None:
        if not isinstance(raw, dict):
            return None
        last = raw.get("lastRestartTimestamp")
        return cls(
            count=_int_or_none(raw.get("count")) or 0,
            last_restart=parse_timestamp(last) if isinstance(last, str) else None,
            connector_name=raw.get("connectorName") if isinstance(raw.get("connectorName"), str) else None,
        )

    def to_json(self) -> JsonObject:
        return render(self)


@dataclass(frozen=True)
class BackOff:
    minute: timedelta = timedelta(minutes=1)

    @staticmethod
    def interval(count: int) -> int:
        """Minutes to wait after the `count`-th restart."""
        return min(count * count + count, MAX_BACKOFF_MINUTES)

    def minutes_since(self, moment: datetime, now: datetime) -> int:
        return int((now - moment) // self.minute)

    def should_restart(self, status: AutoRestartStatus | None, max_restarts: int | None, now: datetime) -> bool:
        if status is None or status.last_restart is None:
            return True
        if max_restarts is not None and status.count >= max_restarts:
            return False
        return self.minutes_since(status.last_restart, now) >= self.interval(status.count)

    def should_reset(self, status: AutoRestartStatus | None, now: datetime) -> bool:
        if status is None or status.last_restart is None or status.count <= 0:
            return False
        return self.minutes_since(status.last_restart, now) > self.interval(status.count)

    def next_restart_due(self, status: AutoRestartStatus) -> datetime | None:
        """When the next restart may happen (None before the first restart or without a timestamp)."""
        if status.last_restart is None:
            return None
        return status.last_restart + self.minute * self.interval(status.count)

    def reset_due(self, status: AutoRestartStatus) -> datetime | None:
        """The first moment a healthy connector's count may be reset (strictly more than one interval)."""
        if status.last_restart is None:
            return None
        return status.last_restart + self.minute * (self.interval(status.count) + 1)

    @staticmethod
    def incremented(status: AutoRestartStatus | None, now: datetime) -> AutoRestartStatus:
        count = 1 if status is None else status.count + 1
        return AutoRestartStatus(count, now, status.connector_name if status else None)


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None
