"""MirrorSourceConnector: replicates topics from a source cluster to a target cluster.

The connector (in the worker process) finds the source topic-partitions to replicate, creates their
remote topics with matching partition counts and synced configs, keeps configs and ACLs in step
(topics.py), and every `refresh.topics.interval.seconds` looks for new topics and partitions,
asking the runtime to reconfigure its tasks when it finds some (MirrorSourceConnector's schedule). Each task is one
Spark query: Spark's Kafka source over the task's partitions (`task.assigned.partitions`) straight
into Spark's Kafka writer on the target, so records stay in the JVM. Keys, values, headers,
partitions and timestamps are kept (timestamps through the producer interceptor, see interceptor.py).

Source offsets are MM2's: partition {"cluster", "partition", "topic"} -> {"offset": last replicated
upstream offset}; a task resumes at offset + 1, or at the consumer's `auto.offset.reset` (earliest
by default) for partitions it never replicated. After each batch the task writes offset syncs
(syncs.py explains how it knows the downstream offsets).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sparklink.api.connector import Offset, Partition, SourceTask, TaskContext
from sparklink.api.direct import DirectSource
from sparklink.api.metrics import MIRROR_DOMAIN, MetricGroup
from sparklink.api.task_config import MAX_RECORDS_PER_BATCH, MICRO_BATCH_FETCH_WAIT_MS
from sparklink.clients.admin import RenewingAdmin
from sparklink.connectors.mirror import admin, interceptor, offsets
from sparklink.connectors.mirror.base import MirrorConnector
from sparklink.connectors.mirror.config import (
    EMIT_OFFSET_SYNCS,
    OFFSET_LAG_MAX,
    SOURCE_DEF,
    TASK_INDEX,
    TASK_PARTITIONS,
    MirrorSettings,
    client_settings,
    rdkafka,
)
from sparklink.connectors.mirror.scheduler import Scheduler
from sparklink.connectors.mirror.syncs import BatchStats, OffsetSyncWriter
from sparklink.connectors.mirror.topics import RemoteTopics

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

log = logging.getLogger(__name__)

# Kafka source options Spark refuses (it manages them itself).
_SPARK_CONSUMER_FORBIDDEN = {
    "group.id",
    "auto.offset.reset",
    "key.deserializer",
    "value.deserializer",
    "enable.auto.commit",
    "interceptor.classes",
}
_SPARK_PRODUCER_FORBIDDEN = {"key.serializer", "value.serializer"}
# The target producer's batches, unless the connector sets `batch.size` itself. A mirror sends in bulk,
# and the client's 16 KiB batches (15 records of 1 KiB) make the target broker handle a request for
# every few records. Measured with bench.mirror (1M x 1 KiB records, 6 partitions, 2 tasks):
# 16 KiB 42,979-46,748 records/s at ~22 CPU s per 1M; 64 KiB 74,461; 128 KiB 78,767; 256 KiB
# 87,005-89,804 at 12.5-12.9 CPU s; 1 MiB 91,121. A batch is only filled while records wait (linger.ms stays 0,
# unless the connector sets it), so a trickle of records is not held back by it.
DEFAULT_TARGET_BATCH_BYTES = 256 * 1024
# Records per micro-batch unless `sparklink.max.records.per.batch` says otherwise: bounds a batch
# (cached by the runtime while it is written) when a task starts far behind.
DEFAULT_MAX_RECORDS_PER_BATCH = 100_000
# Up to this many partitions per task, a batch's offsets are observed during its write (three
# aggregates per partition, one pass); beyond, a groupBy after the write costs less than the aggregates.
MAX_OBSERVED_PARTITIONS = 64


def encode_partition(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def decode_partitions(value: str) -> list[tuple[str, int]]:
    """MirrorUtils.decodeTopicPartition over a comma list: the partition follows the last '-'."""
    out = []
    for item in (v.strip() for v in value.split(",")):
        if item:
            topic, _, number = item.rpartition("-")
            out.append((topic, int(number)))
    return out


class MirrorSourceConnector(MirrorConnector):
    DEFINITION = SOURCE_DEF
    # MM2 never commits with its source consumer: validating the offsets is all there is to do.
    OFFSETS = offsets.Rules(("cluster", "topic"), number=True, only_zero=False)

    def validate(self, config: Mapping[str, str]) -> dict[str, list[str]]:
        errors = super().validate(config)
        configured = any(k.startswith(("offset-syncs-", "offset-syncs.topic.")) for k in config)
        if config.get(EMIT_OFFSET_SYNCS) == "false" and configured:
            errors.setdefault(EMIT_OFFSET_SYNCS, []).append(
                f"MirrorSourceConnector can't setup offset-syncs feature while {EMIT_OFFSET_SYNCS} set to false"
            )
        return errors

    # ------------------------------------------------------------------ lifecycle
    def start(self, config: Mapping[str, str]) -> None:
        super().start(config)
        self.settings = s = MirrorSettings.parse(SOURCE_DEF, config)
        self.known_source: list[tuple[str, int]] = []
        self.known_target: list[tuple[str, int]] = []
        if not s.enabled:
            return
        self.topics = RemoteTopics(s)
        label = f"MirrorSourceConnector {s.source}->{s.target}|{config.get('name', '')}"
        self.scheduler = Scheduler(label, int(s["admin.timeout.ms"]) / 1000)
        self.scheduler.execute(self._create_offset_syncs_topic, "creating upstream offset-syncs topic")
        self.scheduler.execute(self._load_topic_partitions, "loading initial set of topic-partitions")
        self.scheduler.execute(self._create_topic_partitions, "creating downstream topic-partitions")
        self.scheduler.execute(self._refresh_known_target_topics, "refreshing known target topics")
        self.scheduler.repeat(self.topics.sync_acls, s.interval("sync.topic.acls"), "syncing topic ACLs", False)
        self.scheduler.repeat(
            self._sync_topic_configs, s.interval("sync.topic.configs"), "syncing topic configs", False
        )
        self.scheduler.repeat(self._refresh_topic_partitions, s.interval("refresh.topics"), "refreshing topics", True)
        log.info("Started %s with %d topic-partitions.", config.get("name"), len(self.known_source))

    def stop(self) -> None:
        if getattr(self, "scheduler", None) is not None:
            self.scheduler.close()

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Round-robin the known partitions over at most `max_tasks` tasks (MirrorSourceConnector)."""
        if not self.settings.enabled or not self.known_source:
            return []
        count = min(max_tasks, len(self.known_source))
        shares: list[list[tuple[str, int]]] = [[] for _ in range(count)]
        for i, tp in enumerate(self.known_source):
            shares[i % count].append(tp)
        return [
            {**self.config, TASK_PARTITIONS: ",".join(encode_partition(t, p) for t, p in share), TASK_INDEX: str(i)}
            for i, share in enumerate(shares)
        ]

    # ------------------------------------------------------------------ scheduled jobs
    def _create_offset_syncs_topic(self) -> None:
        if self.settings[EMIT_OFFSET_SYNCS]:
            client = RenewingAdmin(rdkafka(self.settings.offset_syncs_admin()))
            replication = int(self.settings["offset-syncs.topic.replication.factor"])
            admin.create_compacted_topic(client, self.settings.offset_syncs_topic(), 1, replication)

    def _load_topic_partitions(self) -> None:
        self.known_source = self.topics.find_source()
        self.known_target = self.topics.find_target()

    def _refresh_known_target_topics(self) -> None:
        self.known_target = self.topics.find_target()

    def _create_topic_partitions(self) -> None:
        self.topics.create_missing(self.known_source, self.known_target)

    def _sync_topic_configs(self) -> None:
        self.topics.sync_configs(self.known_source, self.known_target)

    def _refresh_topic_partitions(self) -> None:
        """New or deleted source partitions, or partitions missing downstream: recreate and reconfigure."""
        source, target = self.topics.find_source(), self.topics.find_target()
        upstream_of_target = {(self.settings.policy.upstream_topic(t), p) for t, p in target}
        missing = set(source) - upstream_of_target
        self.known_target = target
        if set(source) != set(self.known_source) or missing:
            log.info(
                "Found %d new topic-partitions on %s. Found %d deleted topic-partitions on %s. "
                "Found %d topic-partitions missing on %s.",
                len(set(source) - set(self.known_source)),
                self.settings.source,
                len(set(self.known_source) - set(source)),
                self.settings.source,
                len(missing),
                self.settings.target,
            )
            self.known_source = source
            self._create_topic_partitions()
            self.context.request_task_reconfiguration()


class MirrorSourceTask(SourceTask, DirectSource):
    """One Spark query: Kafka source (source cluster) -> Kafka writer (target cluster)."""

    def stream(self, ctx: TaskContext) -> DataFrame:
        from pyspark.sql import functions as F

        s = MirrorSettings.parse(SOURCE_DEF, ctx.config)
        self.settings = s
        self.partitions = decode_partitions(ctx.config.get(TASK_PARTITIONS, ""))
        if not self.partitions:
            raise ValueError(f"{TASK_PARTITIONS} names no partitions")
        self.remote = {t: s.policy.format_remote_topic(s.source, t) for t, _ in self.partitions}
        self._stats: tuple[DataFrame | None, list[BatchStats]] | None = None
        interceptor.require(ctx.spark)
        self.direct = ctx.direct
        # One key per run: its producer reports acknowledged positions there (interceptor.py).
        self.registry = f"{ctx.connector}/{ctx.task_id}/{uuid.uuid4().hex}"
        self.syncs: OffsetSyncWriter | None = None
        if s[EMIT_OFFSET_SYNCS] and not ctx.direct:
            self.syncs = OffsetSyncWriter(s, self.remote)
            self.syncs.start(self.partitions)

        consumer = s.source_consumer()
        reset = -1 if consumer.get("auto.offset.reset", "earliest").lower() == "latest" else -2
        resume = _resume_positions(s.source, ctx.resume)
        self._start = resume
        self._reached: dict[tuple[str, int], int] = {}
        self._written_records: int | None = None
        assign: dict[str, list[int]] = {}
        starting: dict[str, dict[str, int]] = {}
        for topic, partition in self.partitions:
            assign.setdefault(topic, []).append(partition)
            starting.setdefault(topic, {})[str(partition)] = resume.get((topic, partition), reset)
        reader = (
            ctx.spark.readStream.format("kafka")
            .option("assign", json.dumps(assign))
            .option("startingOffsets", json.dumps(starting))
            .option("includeHeaders", "true")
            .option("failOnDataLoss", "false")
        )
        if not ctx.realtime:  # real-time mode has no batches to bound (and refuses the option)
            limit = ctx.config.get(MAX_RECORDS_PER_BATCH, str(DEFAULT_MAX_RECORDS_PER_BATCH))
            reader = reader.option("maxOffsetsPerTrigger", limit)
            # Real-time mode reads all the time, so it keeps the broker's default wait; a consumer setting wins.
            reader = reader.option("kafka.fetch.max.wait.ms", str(MICRO_BATCH_FETCH_WAIT_MS))
        # The source cluster's consumer, security included, as Spark's Kafka source options.
        options = client_settings(consumer).spark_options()
        reader = reader.options(
            **{k: v for k, v in options.items() if k.removeprefix("kafka.") not in _SPARK_CONSUMER_FORBIDDEN}
        )
        records = reader.load()

        names: list[Any] = []
        for topic, remote in self.remote.items():
            names += [F.lit(topic), F.lit(remote)]
        remote_topic = F.element_at(F.create_map(*names), F.col("topic"))
        # The carrier header goes last; the interceptor removes the last header with its name, so a
        # source header that happens to share the name survives.
        stamp = F.struct(
            F.lit(interceptor.HEADER).alias("key"),
            F.unix_millis("timestamp").cast("string").cast("binary").alias("value"),
        )
        carriers = [stamp]
        if ctx.direct:
            # Written by Spark's Kafka sink: the producer's OffsetSyncInterceptor pairs this upstream
            # offset with the record's acknowledgement, for the offset syncs and the position at
            # stop (interceptor.py).
            carriers.append(
                F.struct(
                    F.lit(interceptor.UPSTREAM_HEADER).alias("key"),
                    F.col("offset").cast("string").cast("binary").alias("value"),
                )
            )
        header_type = records.schema["headers"].dataType
        headers = F.concat(F.coalesce(F.col("headers"), F.array().cast(header_type)), F.array(*carriers))
        if ctx.direct:
            return records.select(
                remote_topic.alias("topic"), F.col("key"), F.col("value"), headers.alias("headers"), F.col("partition")
            )
        return records.select(
            remote_topic.alias("topic"),
            F.col("key"),
            F.col("value"),
            headers.alias("headers"),
            F.col("partition"),
            F.col("topic").alias("src_topic"),
            F.col("offset").alias("src_offset"),
        )

    def topics(self, ctx: TaskContext) -> list[str] | None:
        return sorted(set(self.remote.values()))

    def producer_config(self, ctx: TaskContext) -> dict[str, str]:
        # linger.ms 0 over the worker's 5 ms default (execution/clients.py): see DEFAULT_TARGET_BATCH_BYTES.
        producer = {"batch.size": str(DEFAULT_TARGET_BATCH_BYTES), "linger.ms": "0"}
        producer.update(
            (k, v) for k, v in self.settings.target_producer().items() if k not in _SPARK_PRODUCER_FORBIDDEN
        )
        # Idempotence keeps each partition's records in order and unduplicated across retries:
        # the offset-sync arithmetic relies on it (syncs.py, point 2).
        producer.update({"acks": "all", "enable.idempotence": "true", "max.in.flight.requests.per.connection": "5"})
        producer = interceptor.with_interceptor({**producer, **super().producer_config(ctx)})
        if ctx.direct:
            s = self.settings
            producer = interceptor.with_offset_tracking(
                producer,
                upstream_of={remote: topic for topic, remote in self.remote.items()},
                registry=self.registry,
                syncs=(
                    (s.offset_syncs_topic(), int(s[OFFSET_LAG_MAX]), client_settings(s.offset_syncs_producer()).java())
                    if s[EMIT_OFFSET_SYNCS]
                    else None
                ),
            )
        return producer

    def progress_offsets(self, end: Any) -> list[tuple[Partition, Offset]]:
        """MM2's offsets from the query's end offsets: the last replicated upstream offset, i.e. the
        next one to read minus one, for each partition the query has read past its start."""
        if not isinstance(end, dict):
            return []
        return self._reached_offsets(
            {(topic, partition): (end.get(topic) or {}).get(str(partition)) for topic, partition in self.partitions}
        )

    def written_offsets(self, ctx: TaskContext, wait_s: float, final: bool) -> list[tuple[Partition, Offset]] | None:
        """From the producer's acknowledgements (interceptor.acknowledged), in local mode: a real-time
        run writes up to a whole batch past its last progress."""
        written = interceptor.acknowledged(ctx.spark, self.registry, wait_s if final else 0.0, forget=final)
        if written is None:
            return None
        self._written_records = written.records  # the JVM's count only grows
        return self._reached_offsets({tp: offset + 1 for tp, offset in written.positions.items()})

    def written_records(self) -> int | None:
        return self._written_records

    def _reached_offsets(self, positions: Mapping[tuple[str, int], int | None]) -> list[tuple[Partition, Offset]]:
        """MM2 offsets (last written = next position - 1) for the partitions read past their start,
        never behind what this run reported before: progress events and acknowledgements are read
        at different moments, and the older of two may be applied last."""
        out: list[tuple[Partition, Offset]] = []
        for topic, partition in self.partitions:
            position = positions.get((topic, partition))
            if not isinstance(position, int):
                continue
            reached = max(position, self._reached.get((topic, partition), 0))
            self._reached[(topic, partition)] = reached
            if reached > self._start.get((topic, partition), 0):
                out.append((offsets.source_partition(self.settings.source, topic, partition), {"offset": reached - 1}))
        return out

    def metrics(self, ctx: TaskContext) -> list[MetricGroup]:
        """MM2's `MirrorSourceConnector` group per target topic-partition. Written by Spark's Kafka sink,
        the task's producer measures each record in the JVM (interceptor.mirror_metrics); on the batch
        path (records through transforms) it does not, and there is nothing to report."""
        if not ctx.direct or getattr(self, "settings", None) is None:
            return []
        s = self.settings
        return [
            MetricGroup(
                MIRROR_DOMAIN,
                "MirrorSourceConnector",
                (("source", s.source), ("target", s.target), ("topic", topic), ("partition", str(partition))),
                values,
            )
            for topic, partition, values in interceptor.mirror_metrics(ctx.spark, self.registry)
        ]

    def realtime_slots(self, ctx: TaskContext) -> int | None:
        return len(decode_partitions(ctx.config.get(TASK_PARTITIONS, ""))) or None

    def batch_offsets(self, batch: DataFrame) -> list[tuple[Partition, Offset]]:
        from pyspark.sql import functions as F

        rows = (
            batch.groupBy("src_topic", "partition")
            .agg(F.count(F.lit(1)).alias("n"), F.min("src_offset").alias("lo"), F.max("src_offset").alias("hi"))
            .collect()
        )
        stats = [BatchStats(r["src_topic"], int(r["partition"]), int(r["n"]), int(r["lo"]), int(r["hi"])) for r in rows]
        return self._remember(batch, stats)

    def batch_metrics(self) -> dict[str, Column] | None:
        """Count, first and last upstream offset of each assigned partition, observed during the write.

        Three aggregates per partition; past `MAX_OBSERVED_PARTITIONS` the runtime's groupBy is cheaper."""
        from pyspark.sql import functions as F

        if len(self.partitions) > MAX_OBSERVED_PARTITIONS:
            return None
        metrics: dict[str, Column] = {}
        for i, (topic, partition) in enumerate(self.partitions):
            mine = (F.col("src_topic") == F.lit(topic)) & (F.col("partition") == F.lit(partition))
            metrics[f"n{i}"] = F.count_if(mine)
            metrics[f"lo{i}"] = F.min(F.when(mine, F.col("src_offset")))
            metrics[f"hi{i}"] = F.max(F.when(mine, F.col("src_offset")))
        return metrics

    def observed_offsets(self, metrics: Mapping[str, Any]) -> list[tuple[Partition, Offset]]:
        stats = [
            BatchStats(topic, partition, int(metrics[f"n{i}"]), int(metrics[f"lo{i}"]), int(metrics[f"hi{i}"]))
            for i, (topic, partition) in enumerate(self.partitions)
            if metrics[f"n{i}"]
        ]
        return self._remember(None, stats)

    def _remember(self, batch: DataFrame | None, stats: list[BatchStats]) -> list[tuple[Partition, Offset]]:
        """Keep the batch's stats for `batch_written`; return its MM2 source offsets."""
        self._stats = (batch, stats)
        source = self.settings.source
        return [(offsets.source_partition(source, st.topic, st.partition), {"offset": st.last}) for st in stats]

    def batch_written(self, batch: DataFrame, batch_id: int, ctx: TaskContext) -> None:
        if self.syncs is None or self._stats is None:
            return
        seen, stats = self._stats
        self._stats = None
        # Observed stats (seen is None) come from the write that just finished, in this same batch.
        if seen is None or seen is batch:
            self.syncs.batch_written(batch, stats)


def _resume_positions(cluster: str, resume: list[tuple[Partition, Offset]]) -> dict[tuple[str, int], int]:
    """Next offset per partition from stored offsets: last replicated + 1 (MirrorSourceTask#initializeConsumer)."""
    out: dict[tuple[str, int], int] = {}
    for partition, offset in resume:
        value = (offset or {}).get("offset")
        if partition.get("cluster") != cluster or not isinstance(value, int) or value < 0:
            continue
        topic, number = partition.get("topic"), partition.get("partition")
        if isinstance(topic, str) and isinstance(number, int):
            out[(topic, number)] = value + 1
    return out


MirrorSourceConnector.task_class = MirrorSourceTask
