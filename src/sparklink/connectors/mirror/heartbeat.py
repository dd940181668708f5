"""MirrorHeartbeatConnector: a `heartbeats` record on the target every `emit.heartbeats.interval.seconds`.

The connector creates the compacted `heartbeats` topic on the target and runs one task (none when
`emit.heartbeats.enabled` is false). The task is pure Spark: the JVM `rate` source ticks once a
second, every interval-th tick becomes MM2's heartbeat record (key {sourceClusterAlias,
targetClusterAlias}, value version 0 + the tick's timestamp, encoded in Spark SQL) and the record's
own timestamp is the heartbeat's, through the timestamp interceptor. A mirror source connector
replicating this cluster turns the topic into `<alias>.heartbeats` downstream.

Source offsets: partition {"sourceClusterAlias", "targetClusterAlias"} -> {"offset": 0}, like MM2.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from sparklink.api.connector import Offset, Partition, SourceTask, TaskContext
from sparklink.clients.admin import RenewingAdmin
from sparklink.connectors.mirror import admin, formats, interceptor, offsets
from sparklink.connectors.mirror.base import MirrorConnector
from sparklink.connectors.mirror.config import HEARTBEAT_DEF, MirrorSettings, rdkafka
from sparklink.connectors.mirror.scheduler import Scheduler

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class MirrorHeartbeatConnector(MirrorConnector):
    DEFINITION = HEARTBEAT_DEF

    OFFSETS = offsets.Rules(("sourceClusterAlias", "targetClusterAlias"), number=False, only_zero=True)

    def start(self, config: Mapping[str, str]) -> None:
        super().start(config)
        self.settings = s = MirrorSettings.parse(HEARTBEAT_DEF, config)
        self.scheduler = Scheduler(
            f"MirrorHeartbeatConnector {s.source}->{s.target}", int(s["admin.timeout.ms"]) / 1000
        )
        self.scheduler.execute(self._create_internal_topics, "creating internal topics")

    def stop(self) -> None:
        self.scheduler.close()

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # Like MM2, heartbeats ignore `enabled`: a disabled flow still reports its link's health.
        if self.settings.interval("emit.heartbeats") is None:
            return []
        return [dict(self.config)]

    def _create_internal_topics(self) -> None:
        client = RenewingAdmin(rdkafka(self.settings.target_admin()))
        replication = int(self.settings["heartbeats.topic.replication.factor"])
        admin.create_compacted_topic(client, self.settings.policy.heartbeats_topic(), 1, replication)


class MirrorHeartbeatTask(SourceTask):
    def stream(self, ctx: TaskContext) -> DataFrame:
        from pyspark.sql import functions as F

        self.settings = s = MirrorSettings.parse(HEARTBEAT_DEF, ctx.config)
        interceptor.require(ctx.spark)
        every = max(1, int(s.interval("emit.heartbeats") or 1))
        ticks = ctx.spark.readStream.format("rate").option("rowsPerSecond", "1").option("numPartitions", "1").load()
        millis = F.unix_millis("timestamp")
        # value = INT16 version 0, then the INT64 timestamp big-endian: 16 hex digits, zero-padded.
        value = F.concat(F.lit(b"\x00\x00"), F.unhex(F.lpad(F.hex(millis), 16, "0")))
        stamp = F.struct(
            F.lit(interceptor.HEADER).alias("key"), F.encode(millis.cast("string"), "US-ASCII").alias("value")
        )
        return ticks.where(F.col("value") % every == 0).select(
            F.lit(s.policy.heartbeats_topic()).alias("topic"),
            F.lit(formats.heartbeat_key(s.source, s.target)).alias("key"),
            value.alias("value"),
            F.array(stamp).alias("headers"),
            F.lit(0).alias("partition"),
        )

    def topics(self, ctx: TaskContext) -> list[str] | None:
        return [self.settings.policy.heartbeats_topic()]

    def producer_config(self, ctx: TaskContext) -> dict[str, str]:
        producer = {k: v for k, v in self.settings.target_producer().items() if not k.endswith(".serializer")}
        return interceptor.with_interceptor({**producer, **super().producer_config(ctx)})

    def batch_offsets(self, batch: DataFrame) -> list[tuple[Partition, Offset]]:
        return [(offsets.heartbeat_partition(self.settings.source, self.settings.target), {"offset": 0})]


MirrorHeartbeatConnector.task_class = MirrorHeartbeatTask
