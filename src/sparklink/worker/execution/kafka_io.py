"""Kafka I/O for task queries: Spark's Kafka writer and reader, and partition assignment for sinks.

Records move through Spark's JVM Kafka connector only; confluent-kafka is used for metadata. A sink's
consumer-group offsets live in their own store (storage/group_offsets.py). Every client here is given its
settings (sparklink.clients, composed for runs by clients.py) and renders them with `spark_options()` or
`librdkafka()`; none is built from bootstrap servers alone.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sparklink.api.connector import RECORDS_METRIC
from sparklink.api.task_config import MICRO_BATCH_FETCH_WAIT_MS, SINK_READ_CONSUMER, TaskSettings
from sparklink.clients.admin import RenewingAdmin
from sparklink.clients.settings import KafkaClientSettings
from sparklink.worker.transforms.frames import select_sql

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, DataFrameWriter, SparkSession

log = logging.getLogger(__name__)

KAFKA_COLUMNS = ("topic", "key", "value", "headers", "partition")
SOURCE_REFUSED = frozenset({"group.id", "interceptor.classes"})
"""Consumer settings Spark's Kafka source refuses or must not get: it names its own groups (a sink's
group is the runtime's, committed to by the group offsets store), and it has no consumer interceptors."""


def task_producer(producer: Mapping[str, str], connector: str, task_id: int) -> dict[str, str]:
    """A source task's producer settings with Connect's client id, `connector-producer-<name>-<task>`,
    unless the task set one: its producer's metrics (MBeans) carry it, and Strimzi's dashboards find a
    task's producer by it."""
    return {"client.id": f"connector-producer-{connector}-{task_id}", **producer}


def write_records(batch: DataFrame, producer: KafkaClientSettings) -> int:
    """Write a batch's Kafka columns with Spark's Kafka writer; return how many records it held.

    Counting first is a pass of its own: callers that cache the batch anyway use this, the others
    `write_observed`.
    """
    count = batch.count()
    if count:
        _writer(batch, producer).save()
    return count


WRITTEN_METRIC = "sparklink_written"
"""The records a write observed leaving the task's transforms (`write_observed(..., watch_output=True)`)."""
TOPICS_METRIC = "sparklink_topics"
"""The distinct topics of those records (transforms such as RegexRouter choose them per record)."""


def write_observed(
    batch: DataFrame,
    producer: KafkaClientSettings,
    metrics: Mapping[str, Column],
    convert: Callable[[DataFrame], DataFrame] | None = None,
    watch_output: bool = False,
) -> dict[str, Any] | None:
    """Write a batch and return its record count (`RECORDS_METRIC`) and `metrics`, all observed by the
    write itself: one pass over the batch, nothing counted or cached beforehand.

    The aggregates watch `batch` as the task made it; `convert` (the task's converters) turns it into
    the Kafka columns above that point of the plan, so offsets come from the task's own columns while
    the write takes the converted ones. With `watch_output` the converted records are observed too
    (`WRITTEN_METRIC`, `TOPICS_METRIC`): transforms may drop records or route them to other topics, and
    counting or listing them afterwards would run the whole chain again. Spark delivers observed metrics
    of a write only through the DataSource V2 path (a V1 write runs its query outside the command's
    plan), so this needs `kafka` off `spark.sql.sources.useV1SourceList` (spark.py sets that). Returns
    None, without writing, when the session still writes Kafka as V1.
    """
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    v1 = batch.sparkSession.conf.get("spark.sql.sources.useV1SourceList", "kafka") or ""
    if "kafka" in {name.strip().lower() for name in v1.split(",")}:
        return None
    observation = Observation()
    aggregates = [F.count(F.lit(1)).alias(RECORDS_METRIC), *(column.alias(name) for name, column in metrics.items())]
    watched = batch.observe(observation, *aggregates)
    written = convert(watched) if convert else watched
    output = Observation() if watch_output else None
    if output is not None:
        written = written.observe(
            output, F.count(F.lit(1)).alias(WRITTEN_METRIC), F.collect_set("topic").alias(TOPICS_METRIC)
        )
    _writer(written, producer).save()
    return {**observation.get, **(output.get if output is not None else {})}


def sink_input(frame: DataFrame, leave_out: tuple[str, ...] = ()) -> tuple[DataFrame, dict[str, str]]:
    """The columns of `frame` that Spark's Kafka sink reads (those of KAFKA_COLUMNS it has, less
    `leave_out`), and the sink options they need: `includeHeaders` when a `headers` column goes along."""
    present = frame.columns
    columns = [c for c in KAFKA_COLUMNS if c in present and c not in leave_out]
    selected = select_sql(frame, [f"`{c}`" for c in columns])
    return selected, ({"includeHeaders": "true"} if "headers" in columns else {})


def _writer(batch: DataFrame, producer: KafkaClientSettings) -> DataFrameWriter:
    rows, options = sink_input(batch)
    writer = rows.write.format("kafka").options(**producer.spark_options(), **options)
    # Append is the only mode the V2 path takes (V1 treats it as the default, ErrorIfExists).
    return writer.mode("append")


SINK_BATCH_RECORDS = 20_000
"""Records per sink micro-batch when the task config sets no bound and the task holds its batch in
memory (`SinkTask.holds_batch`). Unbounded, a sink that starts behind takes its whole backlog as one
batch: 200,000 records of 1 KiB brought to the driver ran a 1 GiB driver out of heap. Connect's
consumer likewise reads in bounded polls (max.poll.records)."""

SINK_STREAMED_BATCH_RECORDS = 200_000
"""The same for a task whose records stream through Spark to their target (the file sink writing in
the JVM). Each batch costs tens of milliseconds of jobs and bookkeeping whatever its size, so larger
batches read a backlog faster: 400,000-600,000 x 1 KiB records into a file ran at 44k records/s in
batches of 20,000, 60k in 60,000 and 86k in 100,000 (an earlier worker); with today's, 2M records
streamed at 164-172k records/s in batches of 100,000 and 201-275k in 200,000 (two runs each,
/work/dbg/sinkstart.py), and bench.sink's CPU per 1M went from 8.5-9.0 to 7.7-8.1 s. The bound still
keeps a batch, and so the wait for a stop or for the group's next commit, to about a second for
records of 1 KiB."""


def batch_limit(settings: TaskSettings, holds_batch: bool) -> int | None:
    """The records a sink's micro-batch may hold: the task config's bound, else none when it waits for a
    minimum instead (a lake sink rolling files), else the runtime's default for the kind of task."""
    if settings.max_records_per_batch:
        return settings.max_records_per_batch
    if settings.min_records_per_batch:
        return None
    return SINK_BATCH_RECORDS if holds_batch else SINK_STREAMED_BATCH_RECORDS


SINK_TRIGGER = "0 seconds"
"""A sink query's trigger: its next batch may start as soon as the last one ends. The source's own
minimum (a full batch waiting, else the trigger interval since the last batch) decides whether it
does, and Spark checks again after `spark.sql.streaming.pollingDelay` (the trigger interval) when it
does not. So a sink that is behind runs full batches back to back, where a 1 s trigger capped it at
one batch - 20,000 records - a second; one that keeps up still runs a batch per interval, and an idle
one still asks Kafka once per interval."""


def read_stream(
    spark: SparkSession,
    consumer: KafkaClientSettings,
    assigned: list[tuple[str, int]],
    starting: dict[tuple[str, int], int],
    settings: TaskSettings,
    interval_ms: int = 1000,
    holds_batch: bool = True,
) -> DataFrame:
    """A Kafka source stream over exactly the assigned partitions, starting where the group left off;
    it offers a batch once a full one waits or `interval_ms` after the last (see SINK_TRIGGER).

    `consumer` holds the task's consumer settings (Connect's `consumer.*` then `consumer.override.*`): they
    win over the runtime's read defaults, and their `auto.offset.reset` says where a partition the group
    never committed starts (earliest unless it says latest, as Connect's sink consumer)."""
    latest = dict(consumer.client).get("auto.offset.reset", "").strip().lower() == "latest"
    assign: dict[str, list[int]] = {}
    start: dict[str, dict[str, int]] = {}
    for topic, partition in assigned:
        assign.setdefault(topic, []).append(partition)
        # -2 and -1 are Spark's "earliest" and "latest", for a partition the group has never committed.
        start.setdefault(topic, {})[str(partition)] = starting.get((topic, partition), -1 if latest else -2)
    options = {
        "kafka.fetch.max.wait.ms": str(MICRO_BATCH_FETCH_WAIT_MS),
        **{f"kafka.{key}": value for key, value in SINK_READ_CONSUMER.items()},
        **source_options(consumer),
    }
    reader = (
        spark.readStream.format("kafka")
        .options(**options)
        .option("assign", json.dumps(assign))
        .option("startingOffsets", json.dumps(start))
        .option("failOnDataLoss", "false")
        .option("includeHeaders", "true")
    )
    limit = batch_limit(settings, holds_batch)
    if limit:
        reader = reader.option("maxOffsetsPerTrigger", str(limit))
    # Spark starts a batch only once this many records wait, or once the delay has passed since it last
    # started one: a full batch at once, else the task's cadence (the trigger interval, or a file roll's).
    if settings.min_records_per_batch:
        reader = reader.option("minOffsetsPerTrigger", str(settings.min_records_per_batch))
        reader = reader.option("maxTriggerDelay", f"{settings.max_batch_delay_ms}ms")
    elif limit:
        reader = reader.option("minOffsetsPerTrigger", str(limit))
        reader = reader.option("maxTriggerDelay", f"{interval_ms}ms")
    return reader.load()


def source_options(consumer: KafkaClientSettings) -> dict[str, str]:
    """A consumer's settings as options of Spark's Kafka source (`kafka.`-prefixed, less what it refuses)."""
    return {k: v for k, v in consumer.spark_options().items() if k.removeprefix("kafka.") not in SOURCE_REFUSED}


def warm_up(spark: SparkSession, clients: KafkaClientSettings, topic: str) -> None:
    """Plan and run one batch read of `topic` with Spark's Kafka source, writing nothing, so that its
    classes are loaded and compiled before the first task needs them. In a fresh worker the first
    micro-batch of the first sink began 4.5 s after its query started, 2 s with this done beforehand
    (/work/dbg/sinkworker.py, 200,000 x 1 KiB). Meant for a small topic (the worker's config topic): it
    reads all of it. Best effort: a failure is logged and changes nothing else."""
    began = time.monotonic()
    try:
        (
            spark.read.format("kafka")
            .options(**source_options(clients))
            .option("subscribe", topic)
            .option("kafka.fetch.max.wait.ms", str(MICRO_BATCH_FETCH_WAIT_MS))
            # Give up in seconds where the brokers do not answer, rather than retry for minutes.
            .option("fetchOffset.numRetries", "1")
            .option("kafka.default.api.timeout.ms", "10000")
            .option("kafka.request.timeout.ms", "5000")
            .load()
            .selectExpr("CAST(value AS STRING) AS value")
            .write.format("noop")
            .mode("overwrite")
            .save()
        )
    except Exception as exc:  # an optimisation only: never fail a worker over it
        log.info("Spark's Kafka reader could not be warmed up on %s (nothing else is affected): %s", topic, exc)
        return
    log.info("Spark's Kafka reader warmed up on %s in %.2fs", topic, time.monotonic() - began)


TLS_WARM_UP_RECORDS = 20_000
"""TLS records (mixed sizes up to 16 KiB) the JVM encrypts and decrypts once at start, about 2 CPU-s. In a
JVM of its own the record cipher's callers were C2-compiled, and ran at full speed, after 10,000-12,000."""


def warm_up_tls(spark: SparkSession, clients: KafkaClientSettings) -> None:
    """When `clients` use TLS, have the Spark JVM's AES-GCM record cipher compiled before their records
    need it (io.sparklink.kafka.TlsCipherWarmup, in the interceptor jar): a background thread of the JVM,
    once per JVM however often this is called. Callers: the task runs (the worker's clients) and a direct
    run starting its query (the task's producer).

    A SASL_SSL mirror's profile showed the JVM's GHASH in plain Java, not the CPU's carry-less multiply,
    and the encrypting `GCMEncrypt.doFinal` still at tier 3 after minutes: HotSpot intrinsifies GHASH and
    AES-CTR only in C2-compiled callers, and Spark's own methods held the one C2 thread. TLS cost the
    mirror 21 CPU-s per 1M records of 1 KiB against Apache MirrorMaker 2's 7.7 (issue 27). Best effort:
    without the jar (no bootstrap) the clients work the same, only slower at first."""
    if not clients.security.protocol.tls:
        return
    try:
        warm = spark._jvm.io.sparklink.kafka.TlsCipherWarmup  # type: ignore[union-attr]
        if warm.start(TLS_WARM_UP_RECORDS):
            log.info("TLS cipher warm-up started in the Spark JVM (%d records)", TLS_WARM_UP_RECORDS)
    except Exception as exc:  # an optimisation only
        log.info("the Spark JVM's TLS cipher could not be warmed up (nothing else is affected): %s", exc)


class Metadata:
    """Topic metadata for sink assignment, through one long-lived AdminClient per worker (its own settings).

    A client per question costs a librdkafka instance (threads, a connection, a metadata round trip)
    each time; the watchdog asks every few seconds for every sink task.
    """

    def __init__(self, clients: KafkaClientSettings) -> None:
        self.clients = clients
        self._admin = RenewingAdmin(clients.librdkafka)  # renewed after a time-out (sparklink.clients.admin)

    def partitions(self, topics: list[str]) -> dict[str, list[int]]:
        """The partitions of each existing topic (one metadata request for all of them)."""
        with self._admin.request() as admin:
            meta = admin.list_topics(timeout=10)
        out: dict[str, list[int]] = {}
        for topic in topics:
            info = meta.topics.get(topic)
            if info is not None and info.error is None:
                out[topic] = sorted(info.partitions)
        return out


def share(partitions: dict[str, list[int]], topics: list[str], task_id: int, tasks: int) -> list[tuple[str, int]]:
    """Round-robin the topics' partitions over the connector's tasks; this task's share."""
    every = [(topic, p) for topic in topics for p in partitions.get(topic, [])]
    return [tp for i, tp in enumerate(every) if i % max(tasks, 1) == task_id]
