"""Whether a task's query died of a Kafka outage, and when the worker starts it again. Caller: tasks.py.

A Connect sink task waits an outage out: its consumer retries for as long as the brokers are away, and
the task stays RUNNING. A Spark query does not: Spark's Kafka source and writer, and a batch function
that commits offsets, give up when their clients time out, and the query dies. So the registry restarts
such a task itself with a fresh run that resumes from the stored offsets (nothing is lost), after
Connect's back-off (RetryWithToleranceOperator: 300 ms doubling each restart; past
`errors.retry.delay.max.ms`, a random delay below it). Meanwhile the task's status stays RUNNING, as a
Connect task's does while its clients retry, and each restart is logged.

A failure is an outage when Kafka calls one of its causes retriable: a Java exception in the query's
failure (its `Caused by:` chain, or the chain of an error raised in Python) whose class is a subclass
of Kafka's RetriableException (broker down, leader moving, timeouts, coordinator not available,
network errors), asked of the JVM itself; or a Python Kafka client error librdkafka or sparklink's
stores call retriable (storage/retry.py).

How long, from the connector's `errors.retry.timeout` (its one definition, connector_config.py):
- 0 (Connect's default) or -1: until Kafka is back. Connect's sink tasks wait an outage out whatever
  that setting says (it bounds the retries of one operation, not the consumer's), and a standalone
  worker has nobody else to restart its tasks;
- more than 0: that long from the outage's first failure; then the task is FAILED, its trace saying
  what happened and how many restarts were made.
An outage is over once a restarted run has written a batch or run for `SETTLED_S` without failing.
"""

from __future__ import annotations

import logging
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparklink.worker.storage import retry
from sparklink.worker.transforms.errors import backoff_ms

log = logging.getLogger(__name__)

KAFKA_RETRIABLE = "org.apache.kafka.common.errors.RetriableException"
SETTLED_S = 120.0
"""A restarted run that has run this long without failing has come through the outage."""
_SCANNED_NAMES = 200  # a trace's exception names asked of the JVM at most (each a Py4J round trip)
# A Java exception class named anywhere (a cause is often quoted in its wrapper's message), and the rest
# of its line as its message (a lookahead, so a name inside that message is found too).
_EXCEPTION = re.compile(r"\b((?:[a-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error))\b(?=(?::[ \t]*([^\n]*))?)")


@dataclass(frozen=True)
class Outage:
    """A Kafka outage one task is going through: since when, how many restarts so far, the last cause."""

    since: float
    restarts: int
    cause: str


@dataclass(frozen=True)
class Backoff:
    """A connector's `errors.retry.timeout` and `errors.retry.delay.max.ms`, in ms."""

    timeout_ms: int
    max_delay_ms: int

    def delay_s(self, restart: int) -> float:
        """The wait before restart number `restart` (1-based)."""
        return backoff_ms(restart, self.max_delay_ms) / 1000

    def gives_up(self, elapsed_s: float) -> bool:
        return self.timeout_ms > 0 and elapsed_s * 1000 >= self.timeout_ms

    def describe(self) -> str:
        if self.timeout_ms > 0:
            return f"errors.retry.timeout={self.timeout_ms} ms: restarting for that long"
        return f"errors.retry.timeout={self.timeout_ms}: restarting until Kafka is back"


class Classifier:
    """Finds a retriable Kafka error in a failure; Java classes are asked of the JVM (cached).

    `is_retriable_class(name)` answers for a Java class name; `is_retriable_throwable(t)` for a Java
    throwable reached through Py4J. Tests give plain functions (no JVM)."""

    def __init__(
        self,
        is_retriable_class: Callable[[str], bool],
        is_retriable_throwable: Callable[[Any], bool] | None = None,
    ) -> None:
        self._is_retriable_class = is_retriable_class
        self._is_retriable_throwable = is_retriable_throwable
        self._known: dict[str, bool] = {}

    @classmethod
    def on_jvm(cls, jvm: Any) -> Classifier:
        """A classifier that asks the Spark driver's JVM, where Kafka's client classes are loaded."""
        loader = jvm.py4j.reflection.ReflectionUtil

        def base() -> Any:
            return loader.classForName(KAFKA_RETRIABLE)

        def is_class(name: str) -> bool:
            try:
                return bool(base().isAssignableFrom(loader.classForName(name)))
            except Exception:  # not a class this JVM knows (a Python name, a Spark-only text)
                return False

        def is_throwable(throwable: Any) -> bool:
            try:
                return bool(base().isInstance(throwable))
            except Exception:
                return False

        return cls(is_class, is_throwable)

    def in_trace(self, trace: str) -> str | None:
        """`name: message` of the first exception named in `trace` that Kafka calls retriable."""
        for index, match in enumerate(_EXCEPTION.finditer(trace)):
            if index >= _SCANNED_NAMES:
                break
            name = match.group(1)
            if name not in self._known:
                self._known[name] = self._is_retriable_class(name)
            if self._known[name]:
                return f"{name}: {(match.group(2) or '').strip()}"[:300]
        return None

    def in_exception(self, error: BaseException) -> str | None:
        """The first retriable Kafka error in `error`'s chain (Python causes, and Java causes through Py4J)."""
        seen: set[int] = set()
        current: BaseException | None = error
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            if retry.retriable(current):
                return _describe(current)[:300]
            java = getattr(current, "java_exception", None) or getattr(current, "_origin", None)
            found = self._in_java(java) if java is not None else None
            if found:
                return found
            current = current.__cause__ or current.__context__
        return None

    def _in_java(self, throwable: Any) -> str | None:
        seen = 0
        while throwable is not None and seen < 50:
            seen += 1
            try:
                if self._is_retriable_throwable is not None and self._is_retriable_throwable(throwable):
                    return str(throwable.toString())[:300]
                throwable = throwable.getCause()
            except Exception:  # the JVM went away: no more to learn
                return None
        return None


def _describe(error: BaseException) -> str:
    """`Type: message`, or where it was raised when it has no message (a bare TimeoutError says nothing)."""
    if str(error):
        return f"{type(error).__name__}: {error}"
    frames = traceback.extract_tb(error.__traceback__)
    where = f" raised at {Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""
    return f"{type(error).__name__} (no message){where}"


def next_outage(previous: Outage | None, cause: str, now: float, settled: bool) -> Outage:
    """The outage a failure with `cause` belongs to: the previous one unless the run had come through it."""
    if previous is None or settled:
        return Outage(since=now, restarts=0, cause=cause)
    return Outage(since=previous.since, restarts=previous.restarts, cause=cause)


def gave_up_trace(outage: Outage, elapsed_s: float, backoff: Backoff, trace: str) -> str:
    """The FAILED task's trace: what happened, how many restarts, then the last failure."""
    return (
        f"Kafka was unavailable to this task for {elapsed_s:.0f} s and its query was restarted "
        f"{outage.restarts} time(s) before errors.retry.timeout ({backoff.timeout_ms} ms) ran out; "
        f"the last failure: {outage.cause}\n{trace}"
    )
