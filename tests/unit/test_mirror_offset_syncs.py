"""Offset-sync planning against MM2's per-record rule, and the OffsetSyncStore port against Apache's tests."""

from __future__ import annotations

import random

from sparklink.connectors.mirror.formats import OffsetSync
from sparklink.connectors.mirror.sync_store import SYNCS_PER_PARTITION, CheckpointStore, OffsetSyncStore
from sparklink.connectors.mirror.syncs import PartitionState, Run, plan


def mm2_per_record(state: PartitionState, records: list[tuple[int, int]], max_lag: int) -> list[tuple[int, int]]:
    """OffsetSyncWriter.PartitionState#update applied record by record (the reference)."""
    out = []
    for upstream, downstream in records:
        if (
            state.last_sync_downstream == -1
            or downstream - (state.last_sync_downstream + 1) >= max_lag
            or upstream - state.previous_upstream != 1
            or downstream < state.previous_downstream
        ):
            state.last_sync_downstream = downstream
            out.append((upstream, downstream))
        state.previous_upstream, state.previous_downstream = upstream, downstream
    return out


def runs_of(upstreams: list[int]) -> list[Run]:
    runs: list[Run] = []
    for u in upstreams:
        if runs and runs[-1].upstream + runs[-1].length == u:
            runs[-1] = Run(runs[-1].upstream, runs[-1].length + 1)
        else:
            runs.append(Run(u, 1))
    return runs


def test_plan_matches_mm2_record_by_record_over_random_batches() -> None:
    rng = random.Random(7)
    for _ in range(200):
        lag = rng.choice([0, 1, 3, 10, 100])
        ours, theirs = PartitionState(), PartitionState()
        upstream, downstream = rng.randrange(0, 50), rng.randrange(0, 50)
        for _batch in range(rng.randrange(1, 6)):
            upstreams = []
            for _ in range(rng.randrange(1, 80)):
                upstream += 1 if rng.random() < 0.85 else rng.randrange(2, 9)  # gaps: compaction, markers
                upstreams.append(upstream)
            if rng.random() < 0.2:
                downstream += rng.randrange(1, 5)  # another writer, or duplicates, between batches
            records = [(u, downstream + k) for k, u in enumerate(upstreams)]
            planned = plan(ours, runs_of(upstreams), downstream, lag)
            expected = mm2_per_record(theirs, records, lag)
            # Same immediate syncs, plus the batch's last record (MM2's delayed sync at commit).
            assert planned[: len(expected)] == expected
            assert planned[len(expected) :] in ([], [records[-1]])
            assert planned[-1] == records[-1]
            assert ours == theirs
            downstream += len(records)


def test_plan_syncs_every_lag_plus_one_records_and_the_last() -> None:
    assert plan(PartitionState(), [Run(0, 100)], 0, 10) == [(u, u) for u in range(0, 100, 11)]  # 99 is on the stride
    assert plan(PartitionState(), [Run(0, 95)], 7, 10)[-2:] == [(88, 95), (94, 101)]  # ... else the last is added
    state = PartitionState()
    plan(state, [Run(0, 5)], 40, 10)
    # Continuing the same run later keeps the cadence: the next sync is 11 after the last one.
    assert plan(state, [Run(5, 20)], 45, 10) == [(11, 51), (22, 62), (24, 64)]


class Store(OffsetSyncStore):
    def sync(self, upstream: int, downstream: int) -> None:
        self.handle(OffsetSync("topic1", 2, upstream, downstream))

    def translate(self, upstream: int) -> int | None:
        return self.translate_downstream("topic1", 2, upstream)


def test_offset_translation() -> None:  # OffsetSyncStoreTest#testOffsetTranslation
    store = Store()
    store.read_to_end = True
    store.sync(100, 200)
    assert store.translate(150) == 201
    store.sync(150, 251)
    assert store.translate(150) == 251
    assert store.translate(5) == -1
    store.sync(200, 10)
    assert store.translate(200) == 10
    store.sync(20, 20)
    assert store.translate(20) == 20


def test_no_translation_before_the_syncs_topic_was_read() -> None:  # testNoTranslationIfStoreNotStarted
    store = Store()
    assert store.translate(0) is None
    store.sync(100, 200)
    assert [store.translate(o) for o in (0, 100, 200)] == [None, None, None]
    store.read_to_end = True
    assert [store.translate(o) for o in (0, 100, 200)] == [-1, 200, 201]
    assert Store().translate_downstream("other", 0, 0) is None


def test_past_offset_translation_is_sparse_like_mm2() -> None:  # testPastOffsetTranslation
    store = Store()
    offset = 0
    while offset <= 1000:
        store.sync(offset, offset)
        offset += 10
    store.read_to_end = True

    def sparse(sync_offset: int, previous: int) -> None:
        assert store.translate(sync_offset - 1) == (previous if previous == -1 else previous + 1)
        assert store.translate(sync_offset) == sync_offset
        assert store.translate(sync_offset + 1) == sync_offset + 1
        assert store.translate(sync_offset + 2) == sync_offset + 1

    sparse(1000, -1)
    while offset <= 10000:
        store.sync(offset, offset)
        offset += 10
    sparse(1000, -1)
    for sync_offset, previous in [
        (4840, 1000),
        (6760, 4840),
        (8680, 6760),
        (9160, 8680),
        (9640, 9160),
        (9880, 9640),
        (9940, 9880),
        (9970, 9940),
        (9990, 9970),
        (10000, 9990),
    ]:
        sparse(sync_offset, previous)
    store.sync(1500, 11000)  # an upstream rewind clears the history
    assert store.translate(1499) == -1
    assert store.translate(1500) == 11000
    assert store.translate(2000) == 11001


def test_store_keeps_the_latest_and_earliest_syncs() -> None:  # testKeepMostDistinctSyncs, shortened
    for step in (1, 3, 7, 15):
        store = Store()
        store.read_to_end = True
        last = 1
        for offset in range(0, 20000, step):
            store.sync(offset, offset)
            syncs = store.syncs[("topic1", 2)]
            assert syncs[0].upstream_offset == offset
            assert syncs[SYNCS_PER_PARTITION - 1].upstream_offset == 0
            count = 1 + sum(1 for i in range(1, SYNCS_PER_PARTITION) if syncs[i - 1] is not syncs[i])
            assert count - last >= -1
            last = count


def test_checkpoints_only_move_forward_unless_upstream_rewinds() -> None:
    from sparklink.connectors.mirror.formats import Checkpoint

    store = CheckpointStore(["g"])
    store.update("g", [Checkpoint("g", "t", 0, 95, 89)])
    assert not store.is_more_recent(Checkpoint("g", "t", 0, 95, 60))  # less precise later: skipped
    assert not store.is_more_recent(Checkpoint("g", "t", 0, 95, 89))  # repeated
    assert store.is_more_recent(Checkpoint("g", "t", 0, 96, 95))
    assert store.is_more_recent(Checkpoint("g", "t", 0, 10, 5))  # the group was rewound upstream
    assert store.is_more_recent(Checkpoint("g", "t", 1, 1, 1))
