"""A sink task's run (Connect's WorkerSinkTask). Caller: the registry, through factory.py.

A run reads its share of the connector's topic partitions with Spark's Kafka source (`assign`,
round-robin over the connector's tasks: kafka_io.share), from the offsets committed to the
connector's consumer group (`PartitionRun`, which Java sink tasks share: jvm_sink_run.py), with the
task's consumer settings (the worker's `consumer.*`, then the connector's `consumer.override.*`); a dead
letter queue takes its producer and admin settings likewise.
Its batch function hands each micro-batch to the task and then commits the batch's end offsets to the
group: the order is fixed (`_commit`). A share that changes (a topic
created or grown after the start) is noticed by the watchdog (`changed_share`), and the registry
starts a fresh run for it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sparklink.api.connector import SinkTask
from sparklink.clients.settings import KafkaClientSettings
from sparklink.worker import log_context
from sparklink.worker.execution import kafka_io, offset_log
from sparklink.worker.execution.run import CompiledRun, TaskRun, TopicPartition
from sparklink.worker.transforms import errors as record_errors
from sparklink.worker.transforms.pipeline import Outcome

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger(__name__)


@dataclass(eq=False, kw_only=True)
class PartitionRun(TaskRun):
    """A run over its share of the connector's topic partitions, from its consumer group's offsets."""

    group: str
    """The connector's consumer group (api.task_config.sink_group)."""
    assigned: list[TopicPartition] = field(default_factory=list)
    """The partitions this run reads: its share when it started."""

    def _stream(self, consumer: KafkaClientSettings, holds_batch: bool) -> DataFrame | None:
        """Its share's stream from Spark's Kafka source with the task's `consumer` settings, starting at the
        group's offsets; None if it has no partitions (the run is idle until its share changes)."""
        services, settings = self.services, self.settings
        topics = list(settings.topics)
        self.assigned = kafka_io.share(services.metadata.partitions(topics), topics, self.task_id, settings.task_count)
        if not self.assigned:
            log.info("task %s-%d has no partitions to read; idle", self.connector, self.task_id)
            return None
        starting = services.group_offsets.committed(self.group, self.assigned)
        return kafka_io.read_stream(
            services.spark,
            consumer,
            self.assigned,
            starting,
            settings,
            services.triggers.interval_ms,
            holds_batch=holds_batch,
        )

    def share_topics(self) -> list[str]:
        return list(self.settings.topics)

    def changed_share(self, partitions: Mapping[str, list[int]]) -> list[TopicPartition] | None:
        """Its share now, if it differs from the one it reads (and its query still runs: a failed one
        is the watchdog's to report, not to restart)."""
        settings = self.settings
        now = kafka_io.share(dict(partitions), list(settings.topics), self.task_id, settings.task_count)
        if now == self.assigned or (self.query is not None and not self.query.isActive):
            return None
        return now

    def _commit_group(self, positions: Mapping[TopicPartition, int]) -> None:
        """Commit `positions` to the connector's consumer group, timed for the offset-commit metrics (a failed
        commit counted as one, then raised)."""
        started = time.monotonic()
        try:
            self.services.group_offsets.commit(self.group, positions)
        except Exception:
            self.measures.committed((time.monotonic() - started) * 1000, ok=False)
            raise
        self.measures.committed((time.monotonic() - started) * 1000)

    def trigger(self) -> str:
        return f"ProcessingTime({kafka_io.SINK_TRIGGER})"


@dataclass(eq=False, kw_only=True)
class SinkRun(PartitionRun, CompiledRun):
    sink: SinkTask
    """The run's task (`task`), as a sink."""
    dlq: tuple[KafkaClientSettings, KafkaClientSettings] | None = None
    """The dead letter queue's producer and admin settings, when the connector has one."""
    _prebuild: threading.Thread | None = None
    """Builds the pipeline's DataFrames while the query starts (`_prebuilding`); joined by the first batch."""

    def start(self) -> StreamingQuery | None:
        clients = self.services.clients
        self.sink.start(self.ctx)  # the task's own checks (e.g. the worker's file rules) come first
        consumer = clients.checked(clients.consumer(self.client_config), self.client_name("consumer"))
        if self.pipeline.policy.dlq is not None:
            self.dlq = (
                clients.checked(clients.producer(self.client_config), self.client_name("dead letter queue producer")),
                clients.checked(clients.admin(self.client_config), self.client_name("admin")),
            )
        stream = self._stream(consumer, self.sink.holds_batch(self.ctx))
        if stream is None:
            return None
        self._await_prebuild()  # a query restarted within the run: the last one's is done first
        self._prebuild = threading.Thread(target=self._prebuilding, args=(stream,), name="sink-prebuild", daemon=True)
        self._prebuild.start()
        return self._start_batches(stream, self._commit, kafka_io.SINK_TRIGGER)

    def _prebuilding(self, stream: DataFrame) -> None:
        """Build the pipeline's DataFrames on a stand-in batch while Spark starts the query (Pipeline.prebuild),
        so that its first micro-batch only moves them. A fresh worker's file sink (bench.sink's JSON
        values and chain, /work/dbg/prebuild/ab.sh) spent 0.20-0.26 s building them on that batch's clock;
        built here, its first Spark task started 0.79-0.89 s after the POST rather than 0.86-1.08 s (three
        runs each). Best effort: where it fails, the first batch builds them as before."""
        with log_context.task_context(self.connector, self.task_id):
            started = time.monotonic()
            try:
                built = self.pipeline.prebuild(stream)
            except Exception as exc:
                # The class only: the first batch builds the same DataFrames and reports a real failure
                # itself, with the task's error handling.
                log.info("the pipeline is built on the first batch instead (%s)", type(exc).__name__)
                return
            if built:
                log.debug("pipeline built before the first batch in %.3fs", time.monotonic() - started)

    def _await_prebuild(self) -> None:
        """Wait for `_prebuilding` to end: the pipeline is not shared between threads."""
        if self._prebuild is not None:
            self._prebuild.join()
            self._prebuild = None

    def _commit(self, batch: DataFrame, batch_id: int) -> None:
        """One sink micro-batch, in this order:

        1. the task writes the batch to its target;
        2. the batch's end offsets (from the query's offset log) are committed to the connector's
           consumer group, for each partition it advanced;
        3. newly seen topics are recorded; 4. metrics (records: the offsets the batch spans).
        """
        pipeline = self.pipeline
        self._await_prebuild()
        covered = offset_log.batch_range(self.checkpoint, batch_id)
        if not covered.offsets:
            return
        # The pipeline caches its own split into good and errant records; only a sink that reads its
        # batch more than once needs the batch cached.
        cached = not self.sink.reads_batch_once
        if cached:
            batch.persist()
        outcome: Outcome | None = None
        counts = pipeline.error_counts
        self.measures.reading(covered.offsets)
        try:
            outcome = pipeline.run(batch)
            # Records that failed conversion or a transform (errors.tolerance=all) go to the dead
            # letter queue before the batch's offsets are committed.
            skipped = counts.records_skipped
            dead = pipeline.dead_letters(outcome, self.dlq[1] if self.dlq else None)
            skipped = counts.records_skipped - skipped
            if dead is not None and self.dlq is not None:
                try:
                    kafka_io.write_records(dead, self.dlq[0])
                except Exception:
                    counts.dead_letters(skipped, failed=True)
                    raise
                counts.dead_letters(skipped, failed=False)
            records = outcome.records
            started = time.monotonic()
            record_errors.retrying(
                pipeline.policy,
                lambda: self.sink.write_batch(records, batch_id, self.ctx),
                lambda: self.stopping,
                counts,
            )
            self.measures.batch(covered.offsets, covered.offsets - skipped, (time.monotonic() - started) * 1000)
            moved = {tp: end for tp, end in covered.end.items() if end != covered.start.get(tp)}
            self._commit_group(moved)
            self.events.topics_seen(self.connector, self.task_id, sorted({t for t, _ in moved}))
            self.records += covered.offsets
            self.batches += 1
        finally:
            if outcome is not None:
                outcome.release()
            if cached:
                batch.unpersist()

    def _kind_values(self) -> tuple[str, str, int, dict[str, float]]:
        """`sink-task-metrics` but the lag, which the worker reads from Kafka for every sink task it owns."""
        return "sink-task-metrics", self.connector, self.task_id, self.measures.sink_values(len(self.assigned))

    def _release(self) -> None:
        self.sink.stop()
