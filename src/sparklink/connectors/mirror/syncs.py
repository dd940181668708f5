"""Offset syncs for replicated batches: which (upstream, downstream) pairs to emit, and where they land.

Caller: MirrorSourceTask, after each micro-batch is written (`batch_written`).

Downstream offsets. Spark's Kafka writer does not report the offsets it wrote, so a task derives them:

1. Each target partition has exactly one writer: upstream partition p of topic t is assigned to
   one task, and that task writes it to partition p of the one remote topic of t (MM2 keeps
   partition numbers; no other connector writes remote topics).
2. Within a batch, the records of one upstream partition come from one Spark partition in
   upstream-offset order (the Kafka source makes one input partition per topic-partition; the
   task never sets `minPartitions`/`maxRecordsPerPartition`, which would split it), and one Spark
   task writes them in that order. The producer is idempotent (`enable.idempotence=true`,
   `acks=all`, at most 5 requests in flight), so retries neither reorder nor duplicate them.
3. `E0`, the target partition's end offset, is read before the batch is written: at task start
   (in `stream`, before the query starts) and then after every batch (`E1` becomes the next `E0`;
   nothing is written to the partition in between, by 1).
4. Hence the k-th record (k = 0, 1, ...) of a batch for p lands at exactly `E0 + k`, and
   `E1 - E0` equals the batch's record count for p. The task checks that equality each batch.

If the equality fails (a Spark task retry on a cluster re-sent a partition, a second writer was
started by hand, a reassignment overlapped), `E0 + k` is still a lower bound of where record k
first landed: E0 was read before any of this batch's writes and at least k records of the batch
precede record k in the partition. A sync (u, d) with d at or below the truth only makes a
switched consumer re-read records, never skip one: MM2's translation gives `d` for a group at u
and `d + 1` past it, so an underestimate moves a consumer back, not forward. The task logs a
warning; syncs stay correct, only less tight, until the next batch re-reads E0.

Which syncs. `plan` applies OffsetSyncWriter.PartitionState's per-record rule to whole runs of
consecutive upstream offsets (a run is written to consecutive downstream offsets): a sync is due at
a run's first record when there was no sync yet in this task's lifetime, upstream skipped an
offset, the downstream topic went backwards, or the downstream offset is `offset.lag.max` past the
last sync + 1; inside a run only the last rule can fire, every `offset.lag.max + 1` records, so the
plan is arithmetic over runs and costs one step per sync, not per record. The batch's last record
is always synced too, as MM2 promotes its "delayed" sync at each commit (without resetting the
cadence), so a caught-up consumer translates exactly.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sparklink.connectors.mirror import admin, formats
from sparklink.connectors.mirror.config import OFFSET_LAG_MAX, MirrorSettings, rdkafka

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)


@dataclass
class PartitionState:
    """OffsetSyncWriter.PartitionState: what the last record and the last sync of one partition were."""

    previous_upstream: int = -1
    previous_downstream: int = -1
    last_sync_downstream: int = -1


@dataclass(frozen=True)
class Run:
    """Records with consecutive upstream offsets [upstream, upstream + length)."""

    upstream: int
    length: int


@dataclass(frozen=True)
class BatchStats:
    """One upstream partition's share of a batch."""

    topic: str
    partition: int
    count: int
    first: int
    last: int

    @property
    def contiguous(self) -> bool:
        return self.last - self.first + 1 == self.count


def plan(state: PartitionState, runs: Sequence[Run], first_downstream: int, max_lag: int) -> list[tuple[int, int]]:
    """The (upstream, downstream) syncs for one partition's batch; updates `state` like MM2 would."""
    lag = max(0, max_lag)
    syncs: list[tuple[int, int]] = []
    downstream = first_downstream
    for run in runs:
        if run.length <= 0:
            continue
        u0, d0 = run.upstream, downstream
        if (
            state.last_sync_downstream == -1
            or u0 - state.previous_upstream != 1
            or d0 < state.previous_downstream
            or d0 - (state.last_sync_downstream + 1) >= lag
        ):
            syncs.append((u0, d0))
            state.last_sync_downstream = d0
        last_d = d0 + run.length - 1
        due = state.last_sync_downstream + 1 + lag  # > d0 here, whether or not d0 was synced
        while due <= last_d:
            syncs.append((u0 + (due - d0), due))
            state.last_sync_downstream = due
            due += 1 + lag
        state.previous_upstream = u0 + run.length - 1
        state.previous_downstream = last_d
        downstream = last_d + 1
    if downstream > first_downstream:
        final = (state.previous_upstream, state.previous_downstream)
        if not syncs or syncs[-1] != final:
            syncs.append(final)  # the "delayed" sync, promoted at the end of the batch
    return syncs


def gappy_runs(batch: DataFrame, stats: Iterable[BatchStats]) -> dict[tuple[str, int], list[Run]]:
    """Runs of consecutive offsets for partitions with gaps (compaction, transaction markers).

    Gaps-and-islands in Spark: `offset - row_number()` is constant along a run. One row per run
    comes back to Python; a compacted partition yields about one run (and one sync) per record,
    as MM2 emits one sync per skipped upstream offset.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    wanted = [(s.topic, s.partition) for s in stats]
    if not wanted:
        return {}
    cond = F.lit(False)
    for topic, partition in wanted:
        cond = cond | ((F.col("src_topic") == topic) & (F.col("partition") == partition))
    order = Window.partitionBy("src_topic", "partition").orderBy("src_offset")
    islands = (
        batch.where(cond)
        .select("src_topic", "partition", "src_offset")
        .withColumn("island", F.col("src_offset") - F.row_number().over(order))
        .groupBy("src_topic", "partition", "island")
        .agg(F.min("src_offset").alias("start"), F.count(F.lit(1)).alias("length"))
        .collect()
    )
    out: dict[tuple[str, int], list[Run]] = {key: [] for key in wanted}
    for row in islands:
        out[(row["src_topic"], int(row["partition"]))].append(Run(int(row["start"]), int(row["length"])))
    for runs in out.values():
        runs.sort(key=lambda r: r.upstream)
    return out


@dataclass
class OffsetSyncWriter:
    """Per task: tracks each target partition's end offset and writes the planned syncs."""

    settings: MirrorSettings
    remote_topics: dict[str, str]  # upstream topic -> remote topic
    next_downstream: dict[tuple[str, int], int] = field(default_factory=dict)
    states: dict[tuple[str, int], PartitionState] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.topic = self.settings.offset_syncs_topic()
        self.max_lag = int(self.settings[OFFSET_LAG_MAX])
        self._target = admin.shared_admin(rdkafka(self.settings.target_admin()))
        self._producer = admin.shared_producer(rdkafka(self.settings.offset_syncs_producer()))

    def start(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Read E0 for every assigned partition; call before the task's query starts."""
        remote = [(self.remote_topics[t], p) for t, p in partitions]
        ends = admin.end_offsets(self._target, remote)
        for (topic, partition), (rtopic, _) in zip(partitions, remote, strict=True):
            self.next_downstream[(topic, partition)] = ends[(rtopic, partition)]

    def batch_written(self, batch: DataFrame, stats: Sequence[BatchStats]) -> int:
        """Plan and write the syncs of one written batch; returns how many were written."""
        gappy = gappy_runs(batch, [s for s in stats if not s.contiguous])
        after = admin.end_offsets(self._target, [(self.remote_topics[s.topic], s.partition) for s in stats])
        errors: list[str] = []
        written = 0
        for s in stats:
            key = (s.topic, s.partition)
            start = self.next_downstream.get(key, 0)
            end = after[(self.remote_topics[s.topic], s.partition)]
            if end - start != s.count:
                log.warning(
                    "%s-%d: %d records written but the remote partition grew by %d; offset syncs for this batch "
                    "are lower bounds (see sparklink.connectors.mirror.syncs)",
                    s.topic,
                    s.partition,
                    s.count,
                    end - start,
                )
            runs = gappy.get(key) or [Run(s.first, s.count)]
            state = self.states.setdefault(key, PartitionState())
            for upstream, downstream in plan(state, runs, start, self.max_lag):
                k, v = formats.encode_offset_sync(formats.OffsetSync(s.topic, s.partition, upstream, downstream))
                self._produce(k, v, errors)
                written += 1
            self.next_downstream[key] = end
        self._producer.flush(30)
        if errors:
            # MM2 logs failed syncs and carries on; a lost sync only makes translation less tight.
            log.error("Failure sending %d offset sync(s) to %s: %s", len(errors), self.topic, errors[0])
        return written

    def _produce(self, key: bytes, value: bytes, errors: list[str]) -> None:
        def report(err: object, _msg: object) -> None:
            if err is not None:
                errors.append(str(err))

        while True:
            try:
                self._producer.produce(self.topic, value=value, key=key, partition=0, on_delivery=report)
                return
            except BufferError:  # local queue full: let deliveries drain
                self._producer.poll(0.1)
