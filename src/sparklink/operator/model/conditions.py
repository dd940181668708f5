"""Status conditions as Strimzi writes them, and the status comparison that decides whether to write.

A reconcile yields one Ready or NotReady condition plus any Warning conditions. NotReady carries the
failure's reason (Strimzi uses the Java exception's class name, kept here for users' alerts) and its
message. Strimzi stamps every condition with the reconcile's time and skips the write when nothing but
timestamps changed; we do the same, and keep a condition's `lastTransitionTime` while its type, status,
reason and message stay the same, as Kubernetes conventions ask.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from sparklink.operator.model.rendering import JsonObject, render

# Strimzi's reasons are Java exception class names; these are the ones its connector paths produce.
REASON_CONNECTOR_FAILED = "Throwable"  # `new Throwable("Connector has failed, ...")`
REASON_FAILED_FUTURE = "NoStackTraceThrowable"  # Vert.x `Future.failedFuture("<message>")`
REASON_REST = "ConnectRestException"
REASON_NO_SUCH_RESOURCE = "NoSuchResourceException"
REASON_INVALID_RESOURCE = "InvalidResourceException"
REASON_RUNTIME = "RuntimeException"


@dataclass(frozen=True)
class Condition:
    type: str
    status: str = "True"
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None

    def to_json(self) -> JsonObject:
        return render(self)

    def same_as(self, other: Mapping[str, Any]) -> bool:
        return (
            other.get("type") == self.type
            and other.get("status") == self.status
            and other.get("reason") == self.reason
            and other.get("message") == self.message
        )


class ReconcileFailure(Exception):
    """A failure that makes the resource NotReady, with the reason and message users will see."""

    def __init__(self, message: str, reason: str = REASON_FAILED_FUTURE, retriable: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.retriable = retriable  # worth another try soon (worker unreachable, starting or rebalancing)


def ready() -> Condition:
    return Condition("Ready")


def not_ready(reason: str, message: str) -> Condition:
    return Condition("NotReady", "True", reason, message)


def warning(reason: str, message: str) -> Condition:
    return Condition("Warning", "True", reason, message)


def stamped(conditions: Iterable[Condition], previous: Iterable[Mapping[str, Any]], now: str) -> list[Condition]:
    """The conditions stamped with `now`, each keeping its previous transition time when it did not change."""
    before = list(previous)
    out = []
    for condition in conditions:
        kept = next((p.get("lastTransitionTime") for p in before if condition.same_as(p)), None)
        stamp = kept if isinstance(kept, str) else now
        out.append(replace(condition, last_transition_time=stamp))
    return out


def without_timestamps(status: Mapping[str, Any] | None) -> dict[str, Any]:
    """A status with condition timestamps dropped, for deciding whether anything really changed."""
    if not status:
        return {}
    out = dict(status)
    if isinstance(out.get("conditions"), list):
        out["conditions"] = [
            {k: v for k, v in c.items() if k != "lastTransitionTime"} if isinstance(c, dict) else c
            for c in out["conditions"]
        ]
    return out
