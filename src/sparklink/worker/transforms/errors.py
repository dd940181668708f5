"""Error handling with Connect's configs: tolerance, error log, dead letter queue and retries.
Caller: the pipeline (policy and failure text) and the worker (DLQ write, retries around batch writes).

Per record, a conversion or transform failure is a value of the `__sl_error` column, never a Spark
exception. With `errors.tolerance=none` the first such record fails the batch (a Spark job error whose
text names its topic, partition and offset); with `all` the failed records are logged when
`errors.log.enable` and, for sinks, written to `errors.deadletterqueue.topic.name` with their original
key, value and headers plus Connect's `__connect.errors.*` context headers when
`errors.deadletterqueue.context.headers.enable`.

`ErrorCounts` is Connect's `task-error-metrics` group of one task run: the pipeline counts the records it
split off, the error log and the DLQ writes, `retrying` the retries (read when /metrics is scraped).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from sparklink.api.errors import RetriableError
from sparklink.worker import connector_config as keys
from sparklink.worker.transforms import exprs as x

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sparklink.clients.settings import KafkaClientSettings

log = logging.getLogger(__name__)

HEADER_PREFIX = "__connect.errors."
RETRIES_DELAY_MIN_MS = 300
LOGGED_PER_BATCH = 100


class ErrorCounts:
    """What Connect's RetryWithToleranceOperator and its reporters count for one task run
    (`task-error-metrics`): each errant record is an error and a failure (sparklink does not retry a
    record's conversion or transform: it fails the same way again), skipped once tolerated."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.record_errors = 0
        self.record_failures = 0
        self.records_skipped = 0
        self.errors_logged = 0
        self.dlq_requests = 0
        self.dlq_failures = 0
        self.retries = 0
        self.last_error_ms = 0

    def failed(self, records: int, skipped: bool, logged: int = 0) -> None:
        with self._lock:
            self.record_errors += records
            self.record_failures += records
            self.records_skipped += records if skipped else 0
            self.errors_logged += logged
            self.last_error_ms = int(time.time() * 1000)

    def dead_letters(self, records: int, failed: bool) -> None:
        """`records` sent to the dead letter queue (`failed`: the write failed)."""
        with self._lock:
            self.dlq_requests += records
            self.dlq_failures += records if failed else 0
            if failed:
                self.last_error_ms = int(time.time() * 1000)

    def retried(self) -> None:
        with self._lock:
            self.retries += 1

    def values(self) -> dict[str, float]:
        """The group's values under Connect's names."""
        with self._lock:
            return {
                "total-record-errors": self.record_errors,
                "total-record-failures": self.record_failures,
                "total-records-skipped": self.records_skipped,
                "total-errors-logged": self.errors_logged,
                "deadletterqueue-produce-requests": self.dlq_requests,
                "deadletterqueue-produce-failures": self.dlq_failures,
                "total-retries": self.retries,
                "last-error-timestamp": self.last_error_ms,
            }


@dataclass(frozen=True)
class DeadLetterQueue:
    """Where a sink's failed records go: SinkConnectorConfig's `errors.deadletterqueue.*` keys."""

    topic: str
    replication_factor: int
    context_headers: bool


@dataclass(frozen=True)
class ErrorPolicy:
    """A connector's Error Handling group, read from values parsed by its one declaration
    (`sparklink.worker.connector_config`), which holds every default."""

    tolerance: str
    log_enable: bool
    log_include_messages: bool
    retry_timeout_ms: int
    retry_delay_max_ms: int
    dlq: DeadLetterQueue | None
    """Only for a sink whose `errors.deadletterqueue.topic.name` is set (trimmed, as Connect reads it)."""

    @property
    def tolerant(self) -> bool:
        return self.tolerance == "all"

    @classmethod
    def from_config(cls, parsed: Mapping[str, Any]) -> ErrorPolicy:
        """From a connector config parsed with its definition; a source's definition has no DLQ keys."""
        topic = parsed.get(keys.DLQ_TOPIC_NAME)  # parsing trimmed it
        dlq = None
        if topic:
            replication_factor = int(parsed[keys.DLQ_TOPIC_REPLICATION_FACTOR])
            dlq = DeadLetterQueue(str(topic), replication_factor, bool(parsed[keys.DLQ_CONTEXT_HEADERS_ENABLE]))
        return cls(
            tolerance=str(parsed[keys.ERRORS_TOLERANCE]),
            log_enable=bool(parsed[keys.ERRORS_LOG_ENABLE]),
            log_include_messages=bool(parsed[keys.ERRORS_LOG_INCLUDE_MESSAGES]),
            retry_timeout_ms=int(parsed[keys.ERRORS_RETRY_TIMEOUT]),
            retry_delay_max_ms=int(parsed[keys.ERRORS_RETRY_MAX_DELAY]),
            dlq=dlq,
        )


def failure_text(error: str, topic: str, partition: str, offset: str) -> str:
    """The message a record's failure fails the task with (errors.tolerance=none)."""
    return x.concat(
        "'Tolerance exceeded in error handler: '",
        f"{error}.stage",
        "' ('",
        f"{error}.class",
        "') failed on the record at topic='",
        f"coalesce({topic}, 'null')",
        "', partition='",
        f"coalesce(CAST({partition} AS STRING), 'null')",
        "', offset='",
        f"coalesce(CAST({offset} AS STRING), 'null')",
        "': '",
        f"{error}.exception",
        "': '",
        f"coalesce({error}.message, '')",
    )


def context_headers(original: str, error: str, connector: str, task_id: int) -> str:
    """Connect's DeadLetterQueueReporter context headers, in its order, as Kafka header structs."""

    def header(name: str, value: str) -> str:
        return f"named_struct('key', {x.text(HEADER_PREFIX + name)}, 'value', encode({value}, 'UTF-8'))"

    message = f"coalesce({error}.message, '')"
    trace = x.concat(
        f"{error}.exception",
        "': '",
        message,
        x.text("\n\tat "),
        f"{error}.class",
        "' (sparklink, stage '",
        f"{error}.stage",
        x.text(")\n"),
    )
    return (
        "array("
        + ", ".join(
            [
                header("topic", f"{original}.topic"),
                header("partition", f"CAST({original}.partition AS STRING)"),
                header("offset", f"CAST({original}.offset AS STRING)"),
                header("connector.name", x.text(connector)),
                header("task.id", x.text(str(task_id))),
                header("stage", f"{error}.stage"),
                header("class.name", f"{error}.class"),
                header("exception.class.name", f"{error}.exception"),
                header("exception.message", message),
                header("exception.stacktrace", trace),
            ]
        )
        + ")"
    )


def dlq_records(errant: DataFrame, policy: ErrorPolicy, connector: str, task_id: int) -> DataFrame:
    """The DLQ records of a sink's failed records: original key, value, headers (+ context headers)."""
    headers = f"coalesce(original.headers, {x.EMPTY_HEADERS})"
    if policy.dlq is not None and policy.dlq.context_headers:
        headers = f"concat({headers}, {context_headers('original', 'error', connector, task_id)})"
    return errant.selectExpr("original.key AS key", "original.value AS value", f"{headers} AS headers")


def ensure_topic(clients: KafkaClientSettings, topic: str, replication_factor: int) -> None:
    """Create the DLQ topic with one partition if it does not exist (as Connect's DLQ reporter does), with the
    task's admin settings (the worker's top-level settings, `admin.*`, then `admin.override.*`)."""
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient(clients.librdkafka())
    if topic in admin.list_topics(timeout=30).topics:
        return
    log.info("Topic %s doesn't exist. Will attempt to create topic.", topic)
    future = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=replication_factor)])[topic]
    try:
        future.result(timeout=60)
    except Exception as exc:
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            raise RuntimeError(f"Could not initialize dead letter queue with topic={topic}: {exc}") from exc


def log_errant(errant: DataFrame, policy: ErrorPolicy, connector: str, task_id: int, sink: bool) -> int:
    """Connect's LogReporter: one ERROR line per failed record (the first LOGGED_PER_BATCH of a batch);
    how many it logged."""
    rows = errant.selectExpr(
        "error.stage AS stage",
        "error.class AS class",
        "error.exception AS exception",
        "error.message AS message",
        "original.topic AS topic",
        "original.partition AS partition",
        "original.offset AS offset",
        "original.timestamp AS timestamp",
    ).take(LOGGED_PER_BATCH)
    for row in rows:
        text = f"Error encountered in task {connector}-{task_id}. "
        text += f"Executing stage '{row['stage']}' with class '{row['class']}'"
        if policy.log_include_messages:
            where = "consumed record" if sink else "source record"
            text += (
                f", where {where} is {{topic='{row['topic']}', partition={row['partition']}, "
                f"offset={row['offset']}, timestamp={row['timestamp']}}}"
            )
        log.error("%s. %s: %s", text, row["exception"], row["message"])
    return len(rows)


R = TypeVar("R")


def retrying(
    policy: ErrorPolicy,
    operation: Callable[[], R],
    stopping: Callable[[], bool] = lambda: False,
    counts: ErrorCounts | None = None,
) -> R:
    """Run `operation`, retrying retriable failures with Connect's backoff (300 ms doubling, capped by
    errors.retry.delay.max.ms with jitter) until errors.retry.timeout (ms; -1 = forever) has passed;
    each retry is counted in `counts`."""
    deadline = time.monotonic() + policy.retry_timeout_ms / 1000 if policy.retry_timeout_ms >= 0 else float("inf")
    attempt = 0
    while True:
        attempt += 1
        try:
            return operation()
        except Exception as exc:
            if not is_retriable(exc) or time.monotonic() >= deadline or stopping():
                raise
            delay_s = min(backoff_ms(attempt, policy.retry_delay_max_ms) / 1000, max(0.0, deadline - time.monotonic()))
            log.debug("retriable failure (attempt %d), retrying in %.3f s: %s", attempt, delay_s, exc)
            if counts is not None:
                counts.retried()
            time.sleep(delay_s)


def backoff_ms(attempt: int, max_delay_ms: int) -> int:
    """Connect's wait before retry `attempt` (1-based; RetryWithToleranceOperator#backoff): 300 ms doubling
    each attempt; past `errors.retry.delay.max.ms`, a random delay below it."""
    delay = RETRIES_DELAY_MIN_MS << min(attempt - 1, 20)
    return random.randrange(max(max_delay_ms, 1)) if delay > max_delay_ms else delay


def is_retriable(exc: BaseException) -> bool:
    if isinstance(exc, RetriableError):
        return True
    retriable = getattr(exc, "retriable", None)
    if callable(retriable):
        try:
            return bool(retriable())
        except Exception:
            return False
    for arg in getattr(exc, "args", ()):
        if callable(getattr(arg, "retriable", None)):
            return bool(arg.retriable())
    return False
