"""A source task's run written by Spark's Kafka sink itself, with no batch function. Caller: the registry,
through factory.py.

For a task that implements `DirectSource` and whose records pass through converters only, or through
a chain that keeps every record and whose topics are known up front (`routed_topics`): one query
from its source straight into Spark's Kafka sink, in micro-batches or in Spark's real-time mode when
its source can, the task config asks for it and the worker has the Spark task slots. Its offsets
come from its query's progress and its producer's acknowledgements (direct.ProgressOffsets); direct.py
says why each piece is where it is.
"""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from sparklink.api.connector import SourceTask
from sparklink.api.direct import DirectSource
from sparklink.clients.settings import KafkaClientSettings
from sparklink.worker.execution import kafka_io
from sparklink.worker.execution.direct import last_progress
from sparklink.worker.execution.run import CompiledRun
from sparklink.worker.execution.running import query_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from sparklink.worker.transforms.pipeline import Pipeline

log = logging.getLogger(__name__)


@dataclass(eq=False, kw_only=True)
class DirectRun(CompiledRun):
    source: SourceTask
    """The run's task (`task`), as a source."""
    direct: DirectSource
    """The run's task, as a source Spark's Kafka sink writes directly."""
    slots: int = 0
    """Spark task slots this run holds for its real-time query (0: micro-batches)."""
    routed: list[str] | None = None
    """With transforms: the topics they send the task's records to (`routed_topics`), recorded as the
    topics it writes (KIP-558) in place of the task's own."""

    def start(self) -> StreamingQuery:
        """Start a task written by Spark's Kafka sink: offsets from progress events."""
        services = self.services
        wanted = self.direct.realtime_slots(self.ctx) if self.pipeline.passthrough and self.settings.realtime else None
        self.slots = services.slots.reserve(f"task {self.connector}-{self.task_id}", wanted)
        self.ctx.realtime = self.slots > 0
        try:
            stream = self.source.stream(self.ctx)
            topics = self.routed if self.routed is not None else self.source.topics(self.ctx)
            clients = services.clients
            asked = kafka_io.task_producer(self.source.producer_config(self.ctx), self.connector, self.task_id)
            producer = clients.checked(clients.producer(self.client_config, asked), self.client_name("producer"))
            # Converters go into the streaming plan (records already in Kafka form pass as they are).
            records = self.pipeline.run(stream).records
            name = query_name(self.connector, self.task_id)
            services.progress.watch(name, self, self.direct, topics or [])
            try:
                query = self._start_query(records, producer)
            except Exception:
                services.progress.unwatch(name, self, None)
                raise
        except Exception:
            self._free_slots()
            raise
        log.info(
            "task %s-%d writes with Spark's Kafka sink (%s)",
            self.connector,
            self.task_id,
            f"real-time mode, {self.slots} Spark task slots"
            if self.ctx.realtime
            else f"micro-batches every {services.triggers.interval}",
        )
        return query

    def _start_query(self, stream: DataFrame, producer: KafkaClientSettings) -> StreamingQuery:
        """Start the stream into Spark's Kafka sink: micro-batches every trigger interval, or real-time
        batches of `task.realtime.batch.interval.ms`."""
        triggers = self.services.triggers
        rows, options = kafka_io.sink_input(stream)
        writer = (
            rows.writeStream.format("kafka")
            .queryName(query_name(self.connector, self.task_id))
            .option("checkpointLocation", str(self.checkpoint))
        )
        writer = writer.options(**producer.spark_options(), **options)
        kafka_io.warm_up_tls(self.ctx.spark, producer)
        if self.ctx.realtime:
            # Real-time mode takes only the update output mode (a stateless query's rows are the same).
            writer = writer.outputMode("update").trigger(realTime=triggers.realtime_batch)  # type: ignore[call-overload]
        else:
            writer = writer.trigger(processingTime=triggers.interval)
        return writer.start()

    def _kind_values(self) -> tuple[str, str, int, dict[str, float]]:
        # Counted from its query's progress and its producer's acknowledgements (direct.ProgressOffsets).
        return "source-task-metrics", self.connector, self.task_id, self.measures.source_values()

    def trigger(self) -> str:
        triggers = self.services.triggers
        return f"RealTime({triggers.realtime_batch})" if self.ctx.realtime else f"ProcessingTime({triggers.interval})"

    def _finish_batches(self, grace: float) -> None:
        """Stop between batches if the batch in hand ends within the grace (real-time mode never is
        between batches: its Spark tasks are interrupted, and `_release` asks the task what was
        written; see direct.py)."""
        query = cast("StreamingQuery | None", self.query)  # a direct run's query is Spark's
        if query is not None and not self.ctx.realtime and not _wait_for_batch_end(query, grace):
            log.info(
                "task %s-%d: its batch still runs %.0fs after the stop was asked; cancelling it",
                self.connector,
                self.task_id,
                grace,
            )
        self.stop_batches(0)

    def _release(self) -> None:
        """After the query stopped: store its offsets (what its producer had acknowledged where the
        task can tell, else its last progress), free its slots."""
        query = cast("StreamingQuery | None", self.query)
        last = last_progress(query) if query is not None else None
        grace = self.services.triggers.stop_grace_s
        written = functools.partial(self.direct.written_offsets, self.ctx, grace, final=True)
        self.services.progress.unwatch(query_name(self.connector, self.task_id), self, last, written)
        self._free_slots()

    def _free_slots(self) -> None:
        self.services.slots.release(self.slots)
        self.slots = 0


def routed_topics(pipeline: Pipeline, topics: list[str] | None, spark: SparkSession) -> list[str] | None:
    """The topics a chain sends the records of `topics` to, when it keeps every record and routes by
    topic alone; else None, and the task takes the batch path, which learns each batch's topics.

    Each route is evaluated once with no input (`Pipeline.topic_route`): Spark resolves it only if it
    reads nothing but the topic (RegexRouter, a TopicNameMatches predicate), never TimestampRouter's
    timestamp or a predicate on the value. The cost is one small query per topic at the task's start."""
    if not topics:
        return None
    routed: set[str] = set()
    for topic in topics:
        try:
            route = pipeline.topic_route(topic)
            if route is None:
                return None
            row = spark.sql(f"SELECT {route} AS topic").first()
        except Exception as exc:  # whatever stops the route being known means the batch path
            log.debug(
                "task %s-%d: its route of %s is not known up front: %s",
                pipeline.connector,
                pipeline.task_id,
                topic,
                exc,
            )
            return None
        if row is None or row[0] is None:
            return None
        routed.add(str(row[0]))
    return sorted(routed)


def _wait_for_batch_end(query: StreamingQuery, grace: float, poll: float = 0.02) -> bool:
    """Wait up to `grace` seconds for a micro-batch query to be between batches; True if it is.

    A batch may begin right after this returns; stopping then cancels it, as any stop does."""
    deadline = time.monotonic() + grace
    while True:
        try:
            if not query.isActive or not query.status.get("isTriggerActive"):
                return True
        except Exception:  # the query is gone: nothing to wait for
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll)
