"""Where a checkpoint task's records come from: a Spark Python streaming source that translates offsets.

Caller: MirrorCheckpointTask.stream (checkpoint.py) reads `format("sparklink_mirror_checkpoints")`.
Spark runs the reader's `latestOffset` in its long-lived Python source runner on the driver, once per
trigger; that is where `CheckpointEngine` lives (its stores survive across batches):

1. on the first call, load the task's groups' last checkpoints from the checkpoints topic (target)
   and read the offset-syncs topic to its end (MM2: no translation before that);
2. every call, read new offset syncs;
3. every `emit.checkpoints.interval.seconds`, list each group's committed offsets on the source,
   translate them (sync_store.OffsetSyncStore), rename topics, drop untranslatable or
   non-advancing ones (MirrorCheckpointTask#checkpointsForGroup) and hand the checkpoint records
   to Spark as the next batch, which the runtime writes to `<source>.checkpoints.internal` with
   Spark's Kafka writer and records in the offsets store like any source batch;
4. every `sync.group.offsets.interval.seconds` (when enabled), write translated offsets to target
   groups that are EMPTY or absent, never moving a partition back (MirrorCheckpointTask#syncGroupOffset).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from sparklink.clients.admin import RenewingAdmin
from sparklink.clients.group_offsets import offsets_of_groups
from sparklink.connectors.mirror import formats
from sparklink.connectors.mirror.config import (
    CHECKPOINT_DEF,
    TASK_GROUPS,
    TOPICS,
    TOPICS_EXCLUDE,
    MirrorSettings,
    rdkafka,
)
from sparklink.connectors.mirror.filters import IncludeExclude
from sparklink.connectors.mirror.formats import Checkpoint
from sparklink.connectors.mirror.sync_store import CheckpointStore, OffsetSyncStore, PartitionZeroReader

log = logging.getLogger(__name__)

NAME = "sparklink_mirror_checkpoints"
SCHEMA = (
    "topic string, key binary, value binary, partition int, `group` string, ck_topic string, ck_partition int,"
    " created_ms long"
)
"""The Kafka columns, the checkpoint's group and partition (its source offsets), and when it was made
(MM2's record timestamp, from which the task measures `checkpoint-latency-ms`)."""
Row = tuple[str, bytes, bytes, int, str, str, int, int]
TIMEOUT_S = 30.0
NOT_AUTHORIZED = {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED}
"""Errors reading the checkpoints topic that degrade translation instead of being retried (as in MM2)."""


class CheckpointEngine:
    def __init__(self, config: dict[str, str]) -> None:
        self.settings = s = MirrorSettings.parse(CHECKPOINT_DEF, config)
        self.groups = sorted({g.strip() for g in config.get(TASK_GROUPS, "").split(",") if g.strip()})
        self.topic_filter = IncludeExclude.of(s[TOPICS], s[TOPICS_EXCLUDE])
        self.source_admin = RenewingAdmin(rdkafka(s.source_admin()))
        self.target_admin = RenewingAdmin(rdkafka(s.target_admin()))
        self.syncs = OffsetSyncStore()
        self.checkpoints = CheckpointStore(self.groups)
        self.emit_every = s.interval("emit.checkpoints")
        self.sync_every = s.interval("sync.group.offsets")
        now = time.monotonic()
        # Like MM2's task, the first checkpoints come one interval after the start.
        self.next_emit = now + (self.emit_every or 0)
        self.next_group_sync = now + (self.sync_every or 0)
        self.sync_reader: PartitionZeroReader | None = None

    def start(self) -> None:
        """Load the last checkpoints, then read the offset syncs to their end (MirrorCheckpointTask#start).

        A failure that may pass (a timeout, a broker away) propagates after undoing what was read, so the
        next trigger starts over; only a refusal to read the checkpoints topic degrades translation.
        """
        s = self.settings
        reader: PartitionZeroReader | None = None
        try:
            loaded = self._load_checkpoints()
            # Without earlier checkpoints, only the latest sync may be used until the end is reached,
            # so translation cannot go backwards (OffsetSyncStore#start(!checkpointsReadOk)).
            self.syncs.initialization_must_read_to_end = not loaded
            reader = PartitionZeroReader(rdkafka(s.offset_syncs_consumer()), s.offset_syncs_topic())
            reader.read_to_end(self._on_sync)
        except BaseException:
            if reader is not None:
                reader.close()
            self.syncs, self.checkpoints = OffsetSyncStore(), CheckpointStore(self.groups)
            raise
        self.sync_reader = reader
        self.syncs.read_to_end = True

    def _load_checkpoints(self) -> bool:
        """True once the checkpoints topic was read; False if this task may not read it (MM2 goes on then)."""
        s = self.settings
        reader = PartitionZeroReader(rdkafka(s.target_consumer()), s.checkpoints_topic())
        try:
            reader.read_to_end(lambda k, v: self.checkpoints.load(formats.decode_checkpoint(k, v)))
            return True
        except KafkaException as exc:
            if exc.args[0].code() not in NOT_AUTHORIZED:
                raise
            log.warning(
                "Not authorized to read checkpoints topic %s: only offsets mirrored after the task started "
                "will be checkpointed (%s)",
                s.checkpoints_topic(),
                exc,
            )
            self.checkpoints = CheckpointStore(self.groups)
            return False
        finally:
            reader.close()

    def _on_sync(self, key: bytes | None, value: bytes | None) -> None:
        self.syncs.handle(formats.decode_offset_sync(key, value))

    def tick(self) -> list[Checkpoint]:
        """One trigger: new syncs in; checkpoints out when due; group offsets synced when due.

        Reading the internal topics is retried at the next trigger when it fails, as MM2's
        KafkaBasedLog retries in the background: a slow or restarting broker delays checkpoints,
        it neither fails the task nor loses what was read.
        """
        try:
            if self.sync_reader is None:
                self.start()
            assert self.sync_reader is not None
            self.sync_reader.read_to_end(self._on_sync)
        except (KafkaException, TimeoutError) as exc:
            source, target = self.settings.source, self.settings.target
            log.warning("%s->%s checkpoints wait for the internal topics (retrying): %s", source, target, exc)
            return []
        now = time.monotonic()
        out: list[Checkpoint] = []
        if self.emit_every is not None and now >= self.next_emit:
            self.next_emit = now + self.emit_every
            for group, found in self._offsets(self.source_admin, self.groups).items():
                out += self.checkpoints_for_group(group, found)
        if self.sync_every is not None and now >= self.next_group_sync:
            self.next_group_sync = now + self.sync_every
            try:
                self.sync_group_offsets()
            except Exception:  # MM2's scheduler logs a failed sync and tries again next interval
                log.exception("syncing group offsets to %s failed", self.settings.target)
        return out

    # ------------------------------------------------------------------ translation
    def checkpoints_for_group(self, group: str, upstream: dict[tuple[str, int], tuple[int, str]]) -> list[Checkpoint]:
        out = []
        for (topic, partition), (offset, metadata) in sorted(upstream.items()):
            if not self.topic_filter.accepts(topic):
                continue
            downstream = self.syncs.translate_downstream(topic, partition, offset)
            if downstream is None or downstream < 0:
                continue  # no sync yet, or too old to translate accurately
            checkpoint = Checkpoint(group, self.rename(topic), partition, offset, downstream, metadata)
            if self.checkpoints.is_more_recent(checkpoint):
                out.append(checkpoint)
        self.checkpoints.update(group, out)
        return out

    def rename(self, topic: str) -> str:
        """MirrorCheckpointTask#renameTopicPartition: back to the original name if it came from the target."""
        policy, s = self.settings.policy, self.settings
        if policy.topic_source(topic) == s.target:
            return policy.original_topic(topic)
        return policy.format_remote_topic(s.source, topic)

    @staticmethod
    def _offsets(admin: RenewingAdmin, groups: list[str]) -> dict[str, dict[tuple[str, int], tuple[int, str]]]:
        """Each group's committed offsets ({} for a group Kafka refused, as MM2 logs and goes on)."""
        out = {}
        for group, found in offsets_of_groups(admin, groups, TIMEOUT_S).items():
            if isinstance(found, KafkaException):
                log.error("Error querying offsets for consumer group %s: %s", group, found)
                found = {}
            out[group] = found
        return out

    # ------------------------------------------------------------------ sync.group.offsets
    def sync_group_offsets(self) -> None:
        idle: dict[str, dict[tuple[str, int], tuple[int, str]]] = {}
        empty = []
        with self.target_admin.request() as target:
            described = target.describe_consumer_groups(self.groups) if self.groups else {}
            for group, future in described.items():
                try:
                    if future.result(TIMEOUT_S).state == ConsumerGroupState.EMPTY:
                        empty.append(group)
                except KafkaException:
                    pass  # unknown on the target: a new group, synced below
        idle = self._offsets(self.target_admin, empty)
        for group, stored in self.checkpoints.checkpoints.items():
            current = idle.get(group)
            wanted = []
            for cp in stored.values():
                here = None if current is None else current.get((cp.topic, cp.partition))
                if here is not None and here[0] >= cp.downstream_offset:
                    continue  # never move a target group back
                tp = TopicPartition(cp.topic, cp.partition, cp.downstream_offset)
                if cp.metadata:  # confluent-kafka refuses None for metadata
                    tp = TopicPartition(cp.topic, cp.partition, cp.downstream_offset, metadata=cp.metadata)
                wanted.append(tp)
            if not wanted:
                continue
            request = [ConsumerGroupTopicPartitions(group, wanted)]
            try:
                with self.target_admin.request() as target:
                    result = target.alter_consumer_group_offsets(request)[group].result(TIMEOUT_S)
            except KafkaException as exc:
                # An active group on the target refuses the change; MM2 logs and retries next time.
                log.warning("Unable to sync offsets for consumer group %s: %s", group, exc)
                continue
            # Kafka may refuse each partition while the request succeeds (a coordinator being moved): say so,
            # and the next sync sends them again.
            refused = [f"{tp.topic}-{tp.partition}: {tp.error}" for tp in result.topic_partitions or [] if tp.error]
            if refused:
                log.warning("Unable to sync offsets for consumer group %s: %s", group, "; ".join(refused))

    def close(self) -> None:
        if self.sync_reader is not None:
            self.sync_reader.close()


# ---------------------------------------------------------------------- the Spark source
class _Rows(InputPartition):  # type: ignore[misc]
    def __init__(self, rows: Sequence[Row]) -> None:
        self.rows = list(rows)


class CheckpointStreamReader(DataSourceStreamReader):  # type: ignore[misc]
    """Offsets are {"batch": n}; batch n holds the checkpoints computed by the n-th emitting trigger."""

    def __init__(self, options: dict[str, str]) -> None:
        self.config: dict[str, str] = json.loads(options["config"])
        self.engine: CheckpointEngine | None = None
        self.pending: dict[int, list[Row]] = {}

    def initialOffset(self) -> dict[str, int]:
        return {"batch": 0}

    def latestOffset(self, start: dict[str, int], limit: Any) -> dict[str, int]:
        if self.engine is None:
            self.engine = CheckpointEngine(self.config)
        checkpoints = self.engine.tick()
        if not checkpoints:
            return start
        topic = self.engine.settings.checkpoints_topic()
        rows: list[Row] = []
        created = int(time.time() * 1000)
        for cp in checkpoints:
            key, value = formats.encode_checkpoint(cp)
            rows.append((topic, key, value, 0, cp.group, cp.topic, cp.partition, created))
        batch = int(start["batch"]) + 1
        self.pending[batch] = rows
        return {"batch": batch}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        rows = [r for b in range(int(start["batch"]) + 1, int(end["batch"]) + 1) for r in self.pending.get(b, [])]
        # A batch replayed after a restart has no rows here: checkpoints are snapshots, the next
        # interval emits current ones.
        return [_Rows(rows)] if rows else []

    def read(self, partition: InputPartition) -> Iterator[Row]:
        assert isinstance(partition, _Rows)
        yield from partition.rows

    def commit(self, end: dict[str, int]) -> None:
        for batch in [b for b in self.pending if b <= int(end["batch"])]:
            del self.pending[batch]

    def stop(self) -> None:
        if self.engine is not None:
            self.engine.close()


class CheckpointDataSource(DataSource):  # type: ignore[misc]
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return CheckpointStreamReader(dict(self.options))
