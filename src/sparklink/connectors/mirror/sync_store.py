"""Offset translation state for checkpoints: MM2's OffsetSyncStore and CheckpointStore, and their topics.

Caller: the checkpoint reader (checkpoint_reader.py), inside the Spark query of a checkpoint task.

`OffsetSyncStore` is a port of connect-mirror 4.3.1's: per upstream partition it keeps 64 syncs,
exponentially spaced back from the latest (invariants A-D in MM2's javadoc), and translates a
group's upstream offset with the latest sync at or before it: the sync's downstream offset when
they are equal, one past it otherwise (records after a sync may or may not have been replicated),
-1 when every kept sync is ahead of the group, nothing until the syncs topic was read to its end.
Identity matters in the update algorithm (Java compares sync objects with `==`): we use `is`.

`CheckpointStore` holds the last checkpoint per group and partition, loaded from the checkpoints
topic at task start, so emitted checkpoints never move a group's downstream offset backwards.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from sparklink.connectors.mirror import formats
from sparklink.connectors.mirror.formats import Checkpoint, OffsetSync

log = logging.getLogger(__name__)
SYNCS_PER_PARTITION = 64


def _long(value: int) -> int:
    """Java `long` arithmetic: wrap to 64-bit two's complement."""
    return ((value + 2**63) % 2**64) - 2**63


def _invariant_b(i_sync: OffsetSync, j_sync: OffsetSync, i: int, j: int) -> bool:
    bound = _long(_long(j_sync.upstream_offset + _long(1 << j)) - _long(1 << i))
    return i_sync is j_sync or bound < 0 or i_sync.upstream_offset <= bound


def _invariant_c(i_sync: OffsetSync, j_sync: OffsetSync, i: int) -> bool:
    bound = _long(j_sync.upstream_offset + _long(1 << max(i - 2, 0)))
    return i_sync is j_sync or (bound >= 0 and i_sync.upstream_offset >= bound)


class OffsetSyncStore:
    def __init__(self) -> None:
        self.syncs: dict[tuple[str, int], list[OffsetSync]] = {}
        self.read_to_end = False
        self.initialization_must_read_to_end = True

    def handle(self, sync: OffsetSync) -> None:
        key = (sync.topic, sync.partition)
        current = self.syncs.get(key)
        if current is None:
            self.syncs[key] = [sync] * SYNCS_PER_PARTITION
        else:
            updated = list(current)  # readers keep seeing the old array while we mutate a copy
            self._update(updated, current, sync)
            self.syncs[key] = updated

    def translate_downstream(self, topic: str, partition: int, upstream_offset: int) -> int | None:
        """The downstream offset for a group at `upstream_offset`, -1 if too old, None if unknown."""
        if not self.read_to_end:
            return None
        syncs = self.syncs.get((topic, partition))
        if syncs is None:
            return None
        sync = next((s for s in syncs if s.upstream_offset <= upstream_offset), syncs[-1])
        if sync.upstream_offset > upstream_offset:
            return -1
        return sync.downstream_offset + (0 if upstream_offset == sync.upstream_offset else 1)

    def _update(self, syncs: list[OffsetSync], original: list[OffsetSync], sync: OffsetSync) -> None:
        upstream = sync.upstream_offset
        only_last = not self.read_to_end and self.initialization_must_read_to_end
        if only_last or upstream < syncs[0].upstream_offset:
            syncs[:] = [sync] * SYNCS_PER_PARTITION
            return
        replacement = sync
        replacement_index = 0
        syncs[0] = replacement
        for current in range(1, SYNCS_PER_PARTITION):
            previous = current - 1
            while True:
                old = original[replacement_index]
                is_recent = _invariant_b(syncs[previous], old, previous, current)
                separated_previous = _invariant_c(syncs[previous], old, previous)
                following = current + 1
                separated_next = following >= SYNCS_PER_PARTITION or _invariant_c(old, syncs[following], current)
                next_replacement = replacement_index + 1
                duplicate = next_replacement < SYNCS_PER_PARTITION and old is original[next_replacement]
                promote = is_recent and separated_previous and separated_next
                if promote:
                    replacement = old
                skip = duplicate or not separated_previous
                if promote or skip:
                    replacement_index += 1
                if not (replacement_index < current and skip):
                    break
            if _invariant_b(syncs[previous], syncs[current], previous, current):
                break
            syncs[current] = replacement


class CheckpointStore:
    """The last checkpoint per group and partition (MM2's CheckpointStore)."""

    def __init__(self, groups: Iterable[str]) -> None:
        self.groups = set(groups)
        self.checkpoints: dict[str, dict[tuple[str, int], Checkpoint]] = {}

    def load(self, checkpoint: Checkpoint) -> None:
        if checkpoint.group in self.groups:
            self.checkpoints.setdefault(checkpoint.group, {})[(checkpoint.topic, checkpoint.partition)] = checkpoint

    def update(self, group: str, checkpoints: Iterable[Checkpoint]) -> None:
        stored = self.checkpoints.setdefault(group, {})
        for cp in checkpoints:
            stored[(cp.topic, cp.partition)] = cp

    def is_more_recent(self, checkpoint: Checkpoint) -> bool:
        """MirrorCheckpointTask#checkpointIsMoreRecent: emit on a rewind upstream or an advance downstream."""
        last = self.checkpoints.get(checkpoint.group, {}).get((checkpoint.topic, checkpoint.partition))
        if last is None:
            return True
        if checkpoint.upstream_offset < last.upstream_offset:
            return True
        return checkpoint.downstream_offset > last.downstream_offset


class PartitionZeroReader:
    """Reads partition 0 of an internal topic (offset syncs or checkpoints) in order, from the start."""

    def __init__(self, consumer_config: dict[str, object], topic: str) -> None:
        self.topic = topic
        self.consumer = Consumer({**consumer_config, "enable.auto.commit": False, "group.id": "sparklink-mirror"})
        self.consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        self.position = 0
        self._missing = False

    def read_to_end(self, handle: Callable[[bytes | None, bytes | None], None], timeout_s: float = 60.0) -> None:
        """Hand every record up to the current end of the partition to `handle` (none if no topic yet)."""
        tp = TopicPartition(self.topic, 0)
        try:
            _low, high = self.consumer.get_watermark_offsets(tp, timeout=timeout_s)
        except KafkaException as exc:
            if exc.args[0].code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION):
                self._missing = True
                return  # not created yet: nothing to read
            raise
        if self._missing and high > 0:
            # Created since we assigned it: assign again so the fetcher starts at once.
            self._missing = False
            self.consumer.assign([TopicPartition(self.topic, 0, self.position or OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout_s
        while self.position < high:
            batch = self.consumer.consume(500, timeout=0.5)
            for msg in batch:
                error = msg.error()
                if error is not None:
                    if error.code() in (KafkaError._PARTITION_EOF, KafkaError.UNKNOWN_TOPIC_OR_PART):
                        continue
                    raise KafkaException(error)
                self.position = int(msg.offset() or 0) + 1
                try:
                    handle(msg.key(), msg.value())
                except formats.FormatError as exc:
                    log.warning("Ignored invalid record at offset %d of %s: %s", msg.offset(), self.topic, exc)
            if not batch:
                # The end may hold no readable record (e.g. a transaction marker): trust the position.
                position = self.consumer.position([tp])[0].offset
                if position >= high:
                    self.position = max(self.position, position)
                elif time.monotonic() > deadline:
                    raise TimeoutError(f"could not read {self.topic} to offset {high} in {timeout_s:.0f}s")

    def close(self) -> None:
        self.consumer.close()
