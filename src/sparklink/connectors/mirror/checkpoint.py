"""MirrorCheckpointConnector: translates consumer-group offsets and emits MM2 checkpoints on the target.

The connector finds the source groups to checkpoint (`groups`/`groups.exclude`, and only groups
with offsets for at least one topic the topic filter accepts), refreshes them every
`refresh.groups.interval.seconds` and splits them over its tasks (`task.assigned.groups`).

Why each task is still a Spark query. Checkpointing is control-plane work (a few admin calls per
interval, no record data), but as a query it shares the runtime's whole task lifecycle: status,
FAILED with a trace, restart, offsets and topic tracking, and its records are written by Spark's
Kafka writer like any source task's. The query reads a Python streaming source whose driver-side
reader does the translation on each trigger (checkpoint_reader.py); a `rate`-driven foreachBatch
could not hand records to the runtime's writer, the source can. Emission follows
`emit.checkpoints.interval.seconds` inside the reader, as MM2's task loop does.

Source offsets: partition {"partition", "topic", "group"} (topic = the renamed, target-side topic)
-> {"offset": 0}, exactly like MM2 (and, like MM2, the task never reads them back).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from confluent_kafka import KafkaException

from sparklink.api.connector import Offset, Partition, SourceTask, TaskContext
from sparklink.api.metrics import MIRROR_DOMAIN, MetricGroup, Window
from sparklink.clients.admin import RenewingAdmin
from sparklink.clients.group_offsets import offsets_of_groups
from sparklink.connectors.mirror import admin, offsets
from sparklink.connectors.mirror.base import MirrorConnector
from sparklink.connectors.mirror.config import (
    CHECKPOINT_DEF,
    EMIT_CHECKPOINTS,
    EMIT_OFFSET_SYNCS,
    ENABLED,
    GROUPS,
    GROUPS_EXCLUDE,
    TASK_GROUPS,
    TASK_INDEX,
    TOPICS,
    TOPICS_EXCLUDE,
    MirrorSettings,
    rdkafka,
)
from sparklink.connectors.mirror.filters import IncludeExclude
from sparklink.connectors.mirror.scheduler import Scheduler

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)


def group_partitions(items: list[str], groups: int) -> list[list[str]]:
    """ConnectorUtils.groupPartitions: contiguous chunks, the first ones one longer."""
    per, extra = divmod(len(items), groups)
    out, start = [], 0
    for i in range(groups):
        size = per + (1 if i < extra else 0)
        out.append(items[start : start + size])
        start += size
    return out


INITIAL_GROUPS_RETRY_S = 5.0
"""How often the connector retries a first consumer-group load that did not complete in time."""


class MirrorCheckpointConnector(MirrorConnector):
    DEFINITION = CHECKPOINT_DEF
    # The task never reads these offsets back; only their format is checked.
    OFFSETS = offsets.Rules(("group", "topic"), number=True, only_zero=True)

    def validate(self, config: Mapping[str, str]) -> dict[str, list[str]]:
        errors = super().validate(config)
        if config.get(ENABLED, "true") == "false":
            return errors
        if config.get(EMIT_CHECKPOINTS) == "false":
            errors.setdefault(EMIT_CHECKPOINTS, []).append(
                f"MirrorCheckpointConnector can't run with {EMIT_CHECKPOINTS} set to false"
            )
        if config.get(EMIT_OFFSET_SYNCS) == "false":
            errors.setdefault(EMIT_OFFSET_SYNCS, []).append("MirrorCheckpointConnector can't run without offset syncs")
        return errors

    def start(self, config: Mapping[str, str]) -> None:
        super().start(config)
        self.settings = s = MirrorSettings.parse(CHECKPOINT_DEF, config)
        self.known_groups: set[str] | None = None
        self._awaiting_groups = False
        if not s.enabled:
            return
        self.topic_filter = IncludeExclude.of(s[TOPICS], s[TOPICS_EXCLUDE])
        self.group_filter = IncludeExclude.of(s[GROUPS], s[GROUPS_EXCLUDE])
        self.source_admin = RenewingAdmin(rdkafka(s.source_admin()))
        self.target_admin = RenewingAdmin(rdkafka(s.target_admin()))
        label = f"MirrorCheckpointConnector {s.source}->{s.target}|{config.get('name', '')}"
        self.scheduler = Scheduler(label, int(s["admin.timeout.ms"]) / 1000)
        self.scheduler.execute(self._create_internal_topics, "creating internal topics")
        self.scheduler.execute(self._load_initial_groups, "loading initial consumer groups")
        self.scheduler.repeat(self._refresh_groups, s.interval("refresh.groups"), "refreshing consumer groups", True)
        self.scheduler.repeat(self._finish_initial_groups, INITIAL_GROUPS_RETRY_S, "finishing the group load", True)

    def stop(self) -> None:
        if getattr(self, "scheduler", None) is not None:
            self.scheduler.close()

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if not self.settings.enabled or self.settings.interval("emit.checkpoints") is None:
            return []
        if self.known_groups is None:
            # MM2 throws a RetriableException here; our refresh job asks for a reconfiguration once
            # the groups are known instead, so creating the connector does not fail meanwhile.
            log.info("Initial consumer group loading has not completed; no checkpoint tasks yet")
            self._awaiting_groups = True
            return []
        if not self.known_groups:
            return []
        count = min(max_tasks, len(self.known_groups))
        chunks = group_partitions(sorted(self.known_groups), count)
        return [{**self.config, TASK_GROUPS: ",".join(chunk), TASK_INDEX: str(i)} for i, chunk in enumerate(chunks)]

    # ------------------------------------------------------------------ scheduled jobs
    def _create_internal_topics(self) -> None:
        replication = int(self.settings["checkpoints.topic.replication.factor"])
        admin.create_compacted_topic(self.target_admin, self.settings.checkpoints_topic(), 1, replication)

    def _load_initial_groups(self) -> None:
        self.known_groups = self.find_groups()
        log.info("Started %s with %d consumer groups.", self.config.get("name"), len(self.known_groups))

    def _finish_initial_groups(self) -> None:
        """Tasks were asked for before the first group load completed (it failed or ran past the admin
        timeout): load the groups now and ask for tasks again, instead of waiting for the next refresh
        (refresh.groups.interval.seconds, 10 minutes by default). Retried every few seconds until done."""
        if not self._awaiting_groups:
            return
        if self.known_groups is None:
            self._load_initial_groups()
        self._awaiting_groups = False
        self.context.request_task_reconfiguration()

    def _refresh_groups(self) -> None:
        known = self.known_groups or set()
        groups = self.find_groups()
        if groups != known or self.known_groups is None:
            log.info(
                "Found %d consumer groups for %s->%s. %d are new. %d were removed. Previously had %d.",
                len(groups),
                self.settings.source,
                self.settings.target,
                len(groups - known),
                len(known - groups),
                len(known),
            )
            self.known_groups = groups
            self.context.request_task_reconfiguration()

    def find_groups(self) -> set[str]:
        with self.source_admin.request() as source:
            listing = source.list_consumer_groups(request_timeout=admin.TIMEOUT_S).result(admin.TIMEOUT_S)
            candidates = sorted(g.group_id for g in listing.valid if self.group_filter.accepts(g.group_id))
        out: set[str] = set()
        for group, found in offsets_of_groups(self.source_admin, candidates, admin.TIMEOUT_S).items():
            if isinstance(found, KafkaException):
                log.warning("listing offsets of group %s: %s", group, found)
            elif any(self.topic_filter.accepts(topic) for topic, _ in found):
                out.add(group)
        return out


class MirrorCheckpointTask(SourceTask):
    def stream(self, ctx: TaskContext) -> DataFrame:
        from sparklink.connectors.mirror.checkpoint_reader import NAME, CheckpointDataSource

        self.settings = MirrorSettings.parse(CHECKPOINT_DEF, ctx.config)
        self.latency: dict[tuple[str, str, int], Window] = {}
        ctx.use_data_source(CheckpointDataSource)
        return ctx.spark.readStream.format(NAME).option("config", json.dumps(ctx.config)).load()

    def topics(self, ctx: TaskContext) -> list[str] | None:
        return [self.settings.checkpoints_topic()]

    def producer_config(self, ctx: TaskContext) -> dict[str, str]:
        producer = {k: v for k, v in self.settings.target_producer().items() if not k.endswith(".serializer")}
        return {**producer, **super().producer_config(ctx)}

    def batch_offsets(self, batch: DataFrame) -> list[tuple[Partition, Offset]]:
        """Called once the batch's checkpoints are written: MM2's offsets, and each checkpoint's
        latency (written now, made when its row was: MirrorCheckpointTask.commitRecord)."""
        from pyspark.sql import functions as F

        rows = batch.groupBy("group", "ck_topic", "ck_partition").agg(F.max("created_ms").alias("created")).collect()
        now = time.time() * 1000
        for r in rows:
            key = (str(r["group"]), str(r["ck_topic"]), int(r["ck_partition"]))
            self.latency.setdefault(key, Window()).record(now - float(r["created"]))
        return [
            (offsets.checkpoint_partition(r["group"], r["ck_topic"], int(r["ck_partition"])), {"offset": 0})
            for r in rows
        ]

    def metrics(self, ctx: TaskContext) -> list[MetricGroup]:
        """MM2's `MirrorCheckpointConnector` group per group and (target-side) topic-partition."""
        settings = getattr(self, "settings", None)
        if settings is None:
            return []
        out = []
        for (group, topic, partition), window in list(self.latency.items()):
            low, high, mean = window.read() or (float("nan"),) * 3  # Kafka's NaN with no sample in the window
            values = {
                "checkpoint-latency-ms": window.last or 0.0,
                "checkpoint-latency-ms-min": low,
                "checkpoint-latency-ms-max": high,
                "checkpoint-latency-ms-avg": mean,
            }
            tags = (
                ("source", settings.source),
                ("target", settings.target),
                ("group", group),
                ("topic", topic),
                ("partition", str(partition)),
            )
            out.append(MetricGroup(MIRROR_DOMAIN, "MirrorCheckpointConnector", tags, values))
        return out


MirrorCheckpointConnector.task_class = MirrorCheckpointTask
