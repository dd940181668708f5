"""Direct-written tasks (execution/direct.py): offsets from progress events, and the worker settings
that shape them. The offsets store runs on a memory backend here; the integration tests run the real
queries (tests/it/test_mirror_direct.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from sparklink.api.connector import Offset, Partition, SourceTask, TaskContext
from sparklink.api.direct import DirectSource
from sparklink.api.task_config import TaskSettings
from sparklink.worker.config import WorkerConfig, default_local_master
from sparklink.worker.execution.direct import ProgressOffsets
from sparklink.worker.execution.running import RunningTask
from sparklink.worker.storage.backend import MemoryBackend
from sparklink.worker.storage.offsets import OffsetStore
from tests.helpers import wait_for


class _Mirrorish(SourceTask, DirectSource):
    """Offsets as MirrorSource keeps them: last written upstream offset = end position - 1."""

    def stream(self, ctx: TaskContext) -> Any:
        raise NotImplementedError

    def batch_offsets(self, batch: Any) -> list[tuple[Partition, Offset]]:
        raise NotImplementedError

    def progress_offsets(self, end: Any) -> list[tuple[Partition, Offset]]:
        return [({"topic": t, "partition": int(p)}, {"offset": o - 1}) for t, ps in end.items() for p, o in ps.items()]


class _Acknowledging(_Mirrorish):
    """A real-time run whose producer has had records acknowledged up to `acked` (a JVM registry in
    MirrorSource); no batch has ended, so no progress comes."""

    def __init__(self) -> None:
        self.acked = -1
        self.acked_records = 0
        self.told_records: int | None = None
        self.asked: list[bool] = []

    def written_offsets(self, ctx: TaskContext, wait_s: float, final: bool) -> list[tuple[Partition, Offset]] | None:
        self.asked.append(final)
        if self.acked < 0:
            return None
        self.told_records = self.acked_records
        return [({"topic": "t", "partition": 0}, {"offset": self.acked})]

    def written_records(self) -> int | None:
        return self.told_records


class _Events:
    def __init__(self) -> None:
        self.topics: list[list[str]] = []

    def task_failed(self, connector: str, task_id: int, trace: str) -> None:
        raise AssertionError(trace)

    def topics_seen(self, connector: str, task_id: int, topics: list[str]) -> None:
        self.topics.append(topics)


def _progress(end: dict[str, dict[str, int]], rows: int) -> str:
    return json.dumps({"numInputRows": rows, "sources": [{"startOffset": None, "endOffset": end}]})


def _run(events: _Events) -> RunningTask:
    ctx = TaskContext("c", 0, {}, spark=None)  # type: ignore[arg-type]
    return RunningTask("c", 0, _Mirrorish(), ctx, TaskSettings.parse({}), events, Path("/nonexistent"))


TOPICS = ["remote.t"]


def _stored(store: OffsetStore) -> dict[int, int]:
    return {p["partition"]: o["offset"] for p, o in store.get("c")}


def test_progress_events_store_the_newest_positions_off_the_listener_thread() -> None:
    store, events = OffsetStore(MemoryBackend()), _Events()
    progress = ProgressOffsets(store)
    run = _run(events)
    try:
        progress.watch("q", run, _Mirrorish(), TOPICS)
        assert progress.watched == {"q"}
        progress.progress("other", _progress({"t": {"0": 99}}, 5))  # not watched: ignored
        progress.progress("q", _progress({"t": {"0": 10, "1": 4}}, 14))
        progress.progress("q", _progress({"t": {"0": 25, "1": 4}}, 15))
        wait_for(lambda: _stored(store) == {0: 24, 1: 3}, 10, "the newest positions stored")
        wait_for(lambda: run.records == 29, 10, "both batches counted")
        assert events.topics and all(t == ["remote.t"] for t in events.topics)  # reported with rows
    finally:
        progress.close()


def test_unwatching_stores_the_last_progress_and_ignores_later_events() -> None:
    store, events = OffsetStore(MemoryBackend()), _Events()
    progress = ProgressOffsets(store)
    run = _run(events)
    try:
        progress.watch("q", run, _Mirrorish(), TOPICS)
        # The query stopped before its last event reached the listener: its last progress is stored.
        progress.unwatch("q", run, json.loads(_progress({"t": {"0": 7}}, 7)))
        assert _stored(store) == {0: 6}
        assert run.records == 0  # the event that counts its rows may still come; never counted twice
        assert progress.watched == set()
        progress.progress("q", _progress({"t": {"0": 50}}, 43))
        assert _stored(store) == {0: 6}
    finally:
        progress.close()


def test_what_a_stopped_task_says_it_wrote_wins_over_its_last_progress_where_it_says() -> None:
    store, events = OffsetStore(MemoryBackend()), _Events()
    progress = ProgressOffsets(store)
    run = _run(events)
    try:
        progress.watch("q", run, _Mirrorish(), TOPICS)
        # A real-time run stopped mid-batch: its producer had acknowledged past the last progress on
        # partition 0; partition 1 it says nothing about, so its progress stands.
        written = [({"topic": "t", "partition": 0}, {"offset": 41})]
        progress.unwatch("q", run, json.loads(_progress({"t": {"0": 10, "1": 5}}, 15)), lambda: written)
        assert _stored(store) == {0: 41, 1: 4}
        # A run with no progress at all (its first batch never ended) still stores what it wrote.
        second = _run(events)
        progress.watch("q", second, _Mirrorish(), TOPICS)
        progress.unwatch("q", second, None, lambda: [({"topic": "t", "partition": 0}, {"offset": 60})])
        assert _stored(store) == {0: 60, 1: 4}
    finally:
        progress.close()


def test_a_real_time_run_has_its_written_offsets_stored_between_batch_ends() -> None:
    store, events = OffsetStore(MemoryBackend()), _Events()
    progress = ProgressOffsets(store, flush_s=0.05)
    run, other = _run(events), _run(events)
    task, other_task = _Acknowledging(), _Acknowledging()
    try:
        run.ctx.realtime = True
        progress.watch("q", run, task, TOPICS)
        task.acked = 30
        wait_for(lambda: _stored(store) == {0: 30}, 10, "the acknowledged offset stored with no progress")
        task.acked = 75
        wait_for(lambda: _stored(store) == {0: 75}, 10, "the next flush")
        assert set(task.asked) == {False}  # asked in passing: no waiting, the run goes on
        progress.unwatch("q", run, None, lambda: task.written_offsets(run.ctx, 1.0, final=True))
        assert _stored(store) == {0: 75} and task.asked[-1] is True
        asked = len(task.asked)

        # Another real-time run and a micro-batch run: only the real-time one is asked; the stopped
        # run never again.
        other.ctx.realtime = True
        micro = _run(events)
        micro_task = _Acknowledging()
        progress.watch("r", other, other_task, TOPICS)
        progress.watch("m", micro, micro_task, TOPICS)
        wait_for(lambda: len(other_task.asked) >= 2, 10, "two flushes of the other run")
        assert len(task.asked) == asked
        assert micro_task.asked == []
    finally:
        progress.close()


def test_a_real_time_run_counts_its_acknowledged_records_between_batch_ends_and_never_twice() -> None:
    store, events = OffsetStore(MemoryBackend()), _Events()
    progress = ProgressOffsets(store, flush_s=0.05)
    run = _run(events)
    task = _Acknowledging()
    run.ctx.realtime = True
    try:
        progress.watch("q", run, task, TOPICS)
        task.acked, task.acked_records = 29, 30
        # No batch has ended, yet the count and the topics the task writes to are current.
        wait_for(lambda: run.records == 30, 10, "the acknowledged records counted")
        assert events.topics and events.topics[-1] == ["remote.t"]
        # The batch end's progress counts the same records again: the count stays what was written.
        task.acked, task.acked_records = 49, 50
        wait_for(lambda: run.records == 50, 10, "the next flush")
        progress.progress("q", _progress({"t": {"0": 40}}, 40))
        wait_for(lambda: run.batches == 1, 10, "the batch end applied")
        assert run.records == 50
        # A second batch end: progress has now counted 90 rows, more than the last flush told.
        progress.progress("q", _progress({"t": {"0": 90}}, 50))
        wait_for(lambda: run.records == 90, 10, "the larger count taken")
    finally:
        progress.close()


def test_workers_default_to_at_least_eight_local_task_threads_and_realtime_batches_of_5s_or_more() -> None:
    master = default_local_master()
    assert master.startswith("local[") and int(master[6:-1]) >= 8
    assert WorkerConfig().spark_master == master
    assert WorkerConfig.model_validate({"spark.master": "local[2]"}).spark_master == "local[2]"
    # Five minutes where acknowledgements keep offsets and counts current between batch ends (local
    # mode), a minute where only batch ends do (a Spark cluster); a set value wins.
    assert WorkerConfig().realtime_batch_ms == 300_000
    assert WorkerConfig.model_validate({"spark.master": "spark://h:7077"}).realtime_batch_ms == 60_000
    assert WorkerConfig.model_validate({"task.realtime.batch.interval.ms": "9000"}).realtime_batch_ms == 9000
    assert WorkerConfig().offset_flush_interval_ms == 5000
    # Spark refuses real-time batches under 5 s (spark.sql.streaming.realTimeMode.minBatchDuration).
    with pytest.raises(ValidationError, match=r"task\.realtime\.batch\.interval\.ms"):
        WorkerConfig.model_validate({"task.realtime.batch.interval.ms": "2000"})


def test_the_realtime_task_setting_defaults_on_and_takes_false() -> None:
    assert TaskSettings.parse({}).realtime is True
    assert TaskSettings.parse({"sparklink.realtime": "false"}).realtime is False
    with pytest.raises(Exception, match=r"sparklink\.realtime"):
        TaskSettings.parse({"sparklink.realtime": "sometimes"})
