"""What a task run measures about itself, and the metric groups it answers with when /metrics is scraped.

Each run (run.py and its kinds) records as it goes, once per micro-batch, never per record: the records
a batch read and wrote, how long it took, how long committing its offsets took (`RunMeasures`). The
pipeline counts its errant records and dead letter queue writes (transforms/errors.ErrorCounts), and a
task may measure its own (MirrorMaker's, in the JVM). Nothing is computed until a scrape asks: then a
run builds Connect's task-level groups from what it recorded (`TaskRun.metric_groups`), reads its
query's last progress for Spark's side (`spark_group`), and the worker reads each sink task's lag from
Kafka (`SinkLag`). Callers: the runs, and the worker (worker.py) at scrape time.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

from sparklink.api.metrics import SPARKLINK_DOMAIN, MetricGroup, Rate, Window, connect_group, task_tags
from sparklink.clients.admin import RenewingAdmin, outlasted_wait
from sparklink.clients.group_offsets import committed_offsets, group_consumer
from sparklink.clients.settings import KafkaClientSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger(__name__)

SPARK_GROUP = "task-query"
NAN = float("nan")
LAG_TIMEOUT_S = 5.0
CONSUMER_IDLE_S = 300.0


class RunMeasures:
    """One run's records, batch times and offset commits (Connect's WorkerTask and its kind's sensors)."""

    def __init__(self) -> None:
        self.batch_size = Window()
        self.batch_ms = Window()
        self.commit_ms = Window()
        self.read = Rate()
        self.written = Rate()
        self.commits = 0
        self.commit_failures = 0
        self.commit_seq = 0
        self.active = 0
        """Records read and not yet committed (written and their offsets recorded)."""
        self.active_window = Window()
        self._lock = threading.Lock()

    def batch(self, read: int, written: int, took_ms: float) -> None:
        """A batch ended: `read` records came in, `written` went out (the others were skipped or dropped)."""
        now = time.monotonic()
        self.batch_size.record(read, now)
        self.batch_ms.record(took_ms, now)
        self.read.record(read, now)
        self.written.record(written, now)

    def reading(self, records: int) -> None:
        with self._lock:
            self.active = records
        self.active_window.record(records)

    def committed(self, took_ms: float, ok: bool = True) -> None:
        self.commit_ms.record(took_ms)
        with self._lock:
            self.commit_seq += 1
            self.active = 0 if ok else self.active
            if ok:
                self.commits += 1
            else:
                self.commit_failures += 1

    def task_values(self) -> dict[str, float]:
        """`connector-task-metrics` values (the status comes from the herder). Windowed stats with no
        sample in their window are NaN, as Kafka's are."""
        with self._lock:
            attempts = self.commits + self.commit_failures
            succeeded = 100.0 * self.commits / attempts if attempts else NAN
            failed = 100.0 * self.commit_failures / attempts if attempts else NAN
        return {
            "running-ratio": 1.0,
            "pause-ratio": 0.0,
            **_stats("batch-size", "", self.batch_size),
            **_stats("offset-commit", "time-ms", self.commit_ms),
            "offset-commit-success-percentage": succeeded,
            "offset-commit-failure-percentage": failed,
        }

    def source_values(self) -> dict[str, float]:
        """`source-task-metrics` values: polled = read from the source, written = acknowledged by Kafka."""
        values = {
            "source-record-poll-total": self.read.total,
            "source-record-poll-rate": self.read.per_second(),
            "source-record-write-total": self.written.total,
            "source-record-write-rate": self.written.per_second(),
            "source-record-active-count": float(self.active),
        }
        return values | _stats("poll-batch", "time-ms", self.batch_ms) | _active("source", self.active_window)

    def sink_values(self, partitions: int) -> dict[str, float]:
        """`sink-task-metrics` values but the lag (read from Kafka, `SinkLag`)."""
        values = {
            "sink-record-read-total": self.read.total,
            "sink-record-read-rate": self.read.per_second(),
            "sink-record-send-total": self.written.total,
            "sink-record-send-rate": self.written.per_second(),
            "sink-record-active-count": float(self.active),
            "partition-count": float(partitions),
            "offset-commit-seq-no": float(self.commit_seq),
            "offset-commit-completion-total": float(self.commits),
        }
        return values | _stats("put-batch", "time-ms", self.batch_ms) | _active("sink", self.active_window)


def _stats(prefix: str, unit: str, window: Window) -> dict[str, float]:
    """`<prefix>-max-<unit>` and `<prefix>-avg-<unit>` (NaN when the window holds nothing, as Kafka's)."""
    _, high, mean = window.read() or (NAN, NAN, NAN)
    suffix = f"-{unit}" if unit else ""
    return {f"{prefix}-max{suffix}": high, f"{prefix}-avg{suffix}": mean}


def _active(side: str, window: Window) -> dict[str, float]:
    _, high, mean = window.read() or (NAN, NAN, NAN)
    return {f"{side}-record-active-count-max": high, f"{side}-record-active-count-avg": mean}


def task_group(group: str, connector: str, task: int, values: dict[str, float]) -> MetricGroup:
    return connect_group(group, task_tags(connector, task), values)


def spark_group(
    connector: str, task: int, query: StreamingQuery | None, trigger: str, ui: str | None = None
) -> MetricGroup:
    """Spark's side of a task, from its query's last progress: input and processing rates, the last
    batch's duration and rows, and the trigger (read at scrape time: two calls into the JVM); its ids
    and the Spark UI's address (`ui`, when the UI runs) let the console link the query's page."""
    values: dict[str, float] = {}
    texts = {"trigger": trigger} | ({"spark-ui": ui} if ui else {})
    progress = last_progress_json(query)
    if progress:
        # The progress names its query: no more calls into the JVM for the ids.
        texts.update({"query-id": str(progress.get("id")), "run-id": str(progress.get("runId"))})
        texts["query-name"] = str(progress.get("name"))
        durations = progress.get("durationMs") or {}
        values = {
            "input-rows-per-second": _number(progress.get("inputRowsPerSecond")),
            "processed-rows-per-second": _number(progress.get("processedRowsPerSecond")),
            "batch-duration-ms": _number(durations.get("triggerExecution")),
            "batch-input-rows": _number(progress.get("numInputRows")),
            "batch-id": _number(progress.get("batchId")),
        }
    elif query is not None:
        try:
            texts.update({"query-id": str(query.id), "run-id": str(query.runId), "query-name": str(query.name)})
        except Exception:  # the query is gone
            log.debug("reading a query's ids", exc_info=True)
    return MetricGroup(SPARKLINK_DOMAIN, SPARK_GROUP, task_tags(connector, task), values, texts)


_UI: weakref.WeakKeyDictionary[SparkSession, str | None] = weakref.WeakKeyDictionary()


def spark_ui(spark: SparkSession) -> str | None:
    """The session's Spark UI address, None when it is off (`spark.ui.enabled=false`, sparklink's default);
    asked once per session."""
    if spark not in _UI:
        try:
            _UI[spark] = spark.sparkContext.uiWebUrl
        except Exception:  # a session without a context of its own (Spark Connect)
            _UI[spark] = None
    return _UI[spark]


def last_progress_json(query: StreamingQuery | None) -> dict[str, Any] | None:
    """The query's last progress, as JSON straight from the JVM (PySpark's own conversion makes a
    call into the JVM per field)."""
    if query is None:
        return None
    try:
        progress = query._jsq.lastProgress()
        if progress is None:
            return None
        parsed = json.loads(str(progress.json()))
    except Exception:  # the query's JVM side is gone
        log.debug("reading a query's last progress", exc_info=True)
        return None
    return parsed if isinstance(parsed, dict) else None


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


class SinkLag:
    """How far each sink task's partitions are behind: the log end offset minus the offset committed to
    the connector's consumer group (or minus the log start when nothing is committed, where a new sink
    starts). Read from Kafka at scrape time with the worker's admin settings: the end and start offsets
    through one admin client, the committed offsets through a consumer of the group (clients.group_offsets)."""

    def __init__(self, admin: KafkaClientSettings) -> None:
        # Made anew after a request that outlasted its wait: after a broker outage such a client may never
        # be answered again, and the lag gauges would stay empty for the worker's life (sparklink.clients.admin).
        self._admin = RenewingAdmin(admin.librdkafka)
        # The committed offsets come through a consumer of each group (never the admin's OffsetFetch, see
        # sparklink.clients.group_offsets), kept between scrapes: making one costs ~60 ms against ~3 ms for a read.
        # One a group's scrapes no longer ask for (its connector stopped or moved) is closed after a while.
        self._consumers: dict[str, tuple[Consumer, float]] = {}
        self._lock = threading.Lock()

    def lags(self, group: str, partitions: Sequence[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """The lag of each partition (absent where Kafka did not answer within a few seconds)."""
        if not partitions:
            return {}
        consumer = self._consumer(group)
        try:
            with self._admin.request() as admin:
                return self._lags(admin, consumer, group, partitions)
        except Exception as exc:  # a scrape answers with what it has; the next one asks again
            log.debug("reading the lag of consumer group %s: %s", group, exc)
            if outlasted_wait(exc):
                # A new one next time, as for the admin client. Not closed here: a scrape beside this one may
                # be reading through it, and librdkafka must not close a consumer under a call in flight; it
                # is destroyed when the last scrape holding it lets go.
                with self._lock:
                    self._consumers.pop(group, None)
            return {}

    def _consumer(self, group: str) -> Consumer:
        now = time.monotonic()
        with self._lock:
            idle = [g for g, (_, used) in self._consumers.items() if g != group and now - used > CONSUMER_IDLE_S]
            kept = self._consumers.get(group)
            consumer = kept[0] if kept else group_consumer(self._admin, group)
            self._consumers[group] = (consumer, now)
        for stale in idle:
            self._close(stale)
        return consumer

    def close(self) -> None:
        """Close every kept consumer (the worker stops)."""
        with self._lock:
            groups = list(self._consumers)
        for group in groups:
            self._close(group)

    def _close(self, group: str) -> None:
        with self._lock:
            kept = self._consumers.pop(group, None)
        if kept is not None:
            kept[0].close()

    def _lags(
        self, admin: AdminClient, consumer: Consumer, group: str, partitions: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], int]:
        wanted = [TopicPartition(t, p) for t, p in partitions]
        ends = admin.list_offsets({tp: OffsetSpec.latest() for tp in wanted}, request_timeout=LAG_TIMEOUT_S)
        starts = admin.list_offsets({tp: OffsetSpec.earliest() for tp in wanted}, request_timeout=LAG_TIMEOUT_S)
        found = committed_offsets(self._admin, group, LAG_TIMEOUT_S, list(partitions), consumer)
        committed = {tp: offset for tp, (offset, _) in found.items()}
        out = {}
        for tp in wanted:
            key = (tp.topic, tp.partition)
            end = ends[tp].result(LAG_TIMEOUT_S).offset
            position = committed.get(key, starts[tp].result(LAG_TIMEOUT_S).offset)
            out[key] = max(0, end - position)
        return out
