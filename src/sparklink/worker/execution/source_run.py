"""A source task's run on the batch path (Connect's WorkerSourceTask). Caller: the registry, through factory.py.

The task's stream is one streaming query whose batch function writes each micro-batch to Kafka with
Spark's Kafka writer (acks=all, in the JVM) and then records the batch's source offsets: the order
is fixed (`_commit`). A task with `batch_metrics` whose records cannot be split off by
errors.tolerance=all takes one pass per batch (`_observed`). Sources that Spark's Kafka sink writes
without a batch function run as direct_run.DirectRun instead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sparklink.api.connector import RECORDS_METRIC, Offset, Partition, SourceTask
from sparklink.clients.settings import KafkaClientSettings
from sparklink.worker.execution import kafka_io
from sparklink.worker.execution.run import CompiledRun
from sparklink.worker.transforms import errors as record_errors

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger(__name__)


@dataclass(eq=False, kw_only=True)
class SourceRun(CompiledRun):
    source: SourceTask
    """The run's task (`task`), as a source."""
    known_topics: list[str] | None = None
    """The topics the task says it writes to (`SourceTask.topics`), when it knows them up front."""
    producer: KafkaClientSettings | None = None
    """The producer of Spark's Kafka writer: the worker's task producer with the task's own settings
    (`SourceTask.producer_config`) on top, checked against the brokers (clients.py)."""

    def start(self) -> StreamingQuery:
        stream = self.source.stream(self.ctx)
        self.known_topics = self.source.topics(self.ctx)
        clients = self.services.clients
        asked = kafka_io.task_producer(self.source.producer_config(self.ctx), self.connector, self.task_id)
        self.producer = clients.checked(clients.producer(self.client_config, asked), self.client_name("producer"))
        return self._start_batches(stream, self._commit)

    def _commit(self, batch: DataFrame, batch_id: int) -> None:
        """One source micro-batch, in this order:

        1. write the records to Kafka (Spark's Kafka writer, acks=all, in the JVM);
        2. record the batch's source offsets in the offsets store (acknowledged by the brokers);
        3. record newly seen topics (KIP-558) in the status store;
        4. let the task react (`batch_written`, e.g. MirrorMaker's offset syncs), then update metrics.
        A crash between 1 and 2 replays the batch on restart: at least once, nothing lost.

        A task with `batch_metrics` whose records none can skip (errors.tolerance=none) takes one pass:
        the write observes the count and the task's aggregates, and the records leaving the transforms
        and their topics (`_observed`), one Spark job per batch. Otherwise the batch is cached, counted,
        written and aggregated: three jobs or more (the transforms' topics are a pass of their own).
        """
        pipeline, producer = self.pipeline, self.producer
        assert producer is not None, "started"
        started = time.monotonic()
        # errors.tolerance=all splits each batch into written and skipped records, which needs it cached.
        metrics = None if pipeline.policy.tolerant else self.source.batch_metrics()
        if metrics is not None and self._observed(batch, batch_id, metrics, started):
            return
        outcome = pipeline.run(batch)
        batch.persist()
        try:
            records = outcome.records
            # Converter and transform failures tolerated by errors.tolerance=all are logged and skipped
            # (Connect has no dead letter queue for sources); their offsets still count as done.
            skipped = pipeline.error_counts.records_skipped
            pipeline.dead_letters(outcome, None)
            skipped = pipeline.error_counts.records_skipped - skipped
            count = record_errors.retrying(
                pipeline.policy,
                lambda: kafka_io.write_records(records, producer),
                lambda: self.stopping,
                pipeline.error_counts,
            )
            if count == 0 and (records is batch or batch.isEmpty()):
                return
            self._store_offsets(self.source.batch_offsets(batch))
            self.measures.batch(count + skipped, count, (time.monotonic() - started) * 1000)
            if count == 0:
                return
            # Transforms may route records to other topics; without any, the task's own list holds.
            topics = self.known_topics if self.known_topics and not pipeline.steps else _topics(records)
            self.events.topics_seen(self.connector, self.task_id, topics)
            self.source.batch_written(batch, batch_id, self.ctx)
            self.records += count
            self.batches += 1
        finally:
            outcome.release()
            batch.unpersist()

    def _store_offsets(self, offsets: Iterable[tuple[Partition, Offset]]) -> None:
        """Record the batch's source offsets (Connect's offset commit, timed as one)."""
        started = time.monotonic()
        try:
            self.services.offsets.put(self.connector, list(offsets))
        except Exception:
            self.measures.committed((time.monotonic() - started) * 1000, ok=False)
            raise
        self.measures.committed((time.monotonic() - started) * 1000)

    def _kind_values(self) -> tuple[str, str, int, dict[str, float]]:
        return "source-task-metrics", self.connector, self.task_id, self.measures.source_values()

    def _observed(self, batch: DataFrame, batch_id: int, metrics: dict[str, Column], started: float) -> bool:
        """`_commit` in one pass; False (nothing written) when the session cannot observe writes."""
        pipeline, producer = self.pipeline, self.producer
        assert producer is not None, "started"

        def convert(watched: DataFrame) -> DataFrame:
            # errors.tolerance=none (see `_commit`): a failing record fails the write, none is split off.
            return pipeline.run(watched).records

        transformed = bool(pipeline.steps)
        observed = record_errors.retrying(
            pipeline.policy,
            lambda: kafka_io.write_observed(batch, producer, metrics, convert, watch_output=transformed),
            lambda: self.stopping,
        )
        if observed is None:
            return False
        polled = int(observed[RECORDS_METRIC] or 0)
        if polled == 0:
            return True
        # Records a transform dropped (Filter, a predicate) are done: their offsets count, as in Connect.
        self._store_offsets(self.source.observed_offsets(observed))
        written = int(observed[kafka_io.WRITTEN_METRIC] or 0) if transformed else polled
        self.measures.batch(polled, written, (time.monotonic() - started) * 1000)
        if written == 0:
            return True
        if transformed:
            topics = sorted(observed[kafka_io.TOPICS_METRIC] or [])
        else:
            topics = self.known_topics if self.known_topics else _topics(batch)
        self.events.topics_seen(self.connector, self.task_id, topics)
        self.source.batch_written(batch, batch_id, self.ctx)
        self.records += written
        self.batches += 1
        return True


def _topics(records: DataFrame) -> list[str]:
    return [r[0] for r in records.select("topic").distinct().collect()]
