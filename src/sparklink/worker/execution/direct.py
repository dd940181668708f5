"""Source tasks written by Spark's Kafka sink itself, with no Python in the data path: their offsets and
their Spark task slots. Callers: direct_run.py (each such run) and tasks.py (one of each per worker).

A task that implements `DirectSource` (api/direct.py: MirrorSource, datagen) and whose records pass
through untransformed runs as one query from its source straight into Spark's Kafka sink
(direct_run.DirectRun): no batch function, so no Py4J calls, DataFrames or jobs of our own per batch.
What the batch function did otherwise moves elsewhere:

- **offsets** come from the query's progress events (its source's `endOffset`), which Spark posts only
  after a batch's write has been acknowledged and committed; the listener hands them over here
  (`ProgressOffsets`) and a thread of ours stores them, so Spark's listener bus never waits on Kafka;
- **stopping** waits for a micro-batch in hand to end (up to the grace) before stopping the query, and
  the last progress is stored synchronously after it, so a clean restart repeats nothing;
- anything per record (MirrorMaker's offset syncs) is the task's business, in the JVM.

**Real-time mode.** A task's query runs with Spark's real-time trigger when three things hold: its
source can (`realtime_slots`), the task config asks for it (`sparklink.realtime=true`), and the worker has a
free Spark task slot for each partition the task reads. One slot is always left for micro-batch
queries. In this mode long-running Spark tasks pass each record on as it arrives. The query
checkpoints, and posts a progress event, at the end of each batch (`task.realtime.batch.interval.ms`,
5 minutes in local mode and 60 s on a cluster by default: each batch end holds records back for a
moment); in between, `ProgressOffsets` stores what the task's producer has had acknowledged every
`offset.flush.interval.ms`, and counts the records it acknowledged (`DirectSource.written_records`).
Without enough slots a real-time query would leave partitions waiting for a whole batch, so such a task
runs in micro-batches instead. Stopping a real-time query interrupts its Spark
tasks mid-batch, past its last progress; the task then says itself what its producer had acknowledged
(`DirectSource.written_offsets`, which MirrorSource reads from its interceptor in local mode), and that is
stored instead. Where it cannot tell (a Spark cluster), what was written since the last progress is
written again by the next run (at least once).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sparklink.api.connector import Offset, Partition
from sparklink.api.direct import DirectSource
from sparklink.worker import log_context
from sparklink.worker.execution.running import RunningTask, remember_callback_connection
from sparklink.worker.storage.offsets import OffsetStore

if TYPE_CHECKING:
    from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger(__name__)

RESERVED_SLOTS = 1
"""Spark task slots never given to real-time queries: micro-batch queries and the worker's own jobs."""

Written = Callable[[], list[tuple[Partition, Offset]] | None]
"""Asks a stopped run what its producer had acknowledged (`DirectSource.written_offsets`, final)."""


class RealtimeSlots:
    """The Spark task slots of the worker's session held by real-time queries (`RESERVED_SLOTS` never are)."""

    def __init__(self, total: Callable[[], int]) -> None:
        self._total = total  # read at each reservation: a cluster's executors come and go
        self._lock = threading.Lock()
        self.held = 0

    def reserve(self, who: str, wanted: int | None) -> int:
        """Hold `wanted` slots for a real-time query if that many are free; the slots held (0: none)."""
        if not wanted:
            return 0
        total = self._total()
        with self._lock:
            free = total - RESERVED_SLOTS - self.held
            if wanted > free:
                log.info(
                    "%s runs in micro-batches: real-time mode needs %d free Spark task slots and %d of %d"
                    " are free (raise spark.master's local[N] or the executor cores to give it more)",
                    who,
                    wanted,
                    max(free, 0),
                    total,
                )
                return 0
            self.held += wanted
            return wanted

    def release(self, slots: int) -> None:
        with self._lock:
            self.held -= slots


@dataclass(eq=False)
class _Account:
    """What is known of one watched run: its task's hooks and what has been stored and counted for it."""

    run: RunningTask
    source: DirectSource
    topics: list[str]
    stored: dict[str, Offset | None] = field(default_factory=dict)  # partition (JSON) -> offset stored
    progress_rows: int = 0  # rows its progress events have counted


@dataclass(eq=False)
class _Pending:
    account: _Account
    end: Any = None  # the newest endOffset seen
    rows: int = 0  # rows of the batches not yet applied
    batches: int = 0
    written: list[tuple[Partition, Offset]] | None = None  # DirectSource.written_offsets: wins
    took_ms: float = 0.0  # the longest of its batches (the progress's triggerExecution)


class ProgressOffsets:
    """Stores the source offsets of direct queries from their progress events.

    `progress` runs on Spark's listener bus: it only parses the event and notes the newest end offset
    of the query. A thread of ours stores them; events that arrive faster than the store takes them
    are merged (end offsets are positions, so the newest covers the older ones). The same thread
    asks each real-time run every `flush_s` what its producer has written (`written_offsets`), since
    its batches, and so its progress events, are far apart. One store at a time (`_applying`): a
    task's offsets only move forward if what it computes is stored in the order it computed it."""

    def __init__(self, offsets: OffsetStore, flush_s: float = 5.0) -> None:
        self.offsets = offsets
        self.flush_s = flush_s
        self._applying = threading.Lock()
        self.watched: set[str] = set()  # the listener forwards the progress of these queries only
        self._runs: dict[str, _Account] = {}
        self._pending: dict[str, _Pending] = {}
        self._lock = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="direct-offsets", daemon=True)
        self._thread.start()

    def watch(self, name: str, run: RunningTask, source: DirectSource, topics: list[str]) -> None:
        """Store the offsets of query `name`, which `run` started for `source`, writing to `topics`."""
        with self._lock:
            self._runs[name] = _Account(run, source, topics)
            self.watched.add(name)

    def unwatch(
        self,
        name: str,
        run: RunningTask,
        last_progress: Mapping[str, Any] | None,
        written: Written | None = None,
    ) -> None:
        """Stop watching a stopped query, storing the offsets of its last progress first, or of what
        the task says it has written (`written`, asked under the store lock) where it says."""
        with self._lock:
            account = self._runs.get(name)
            if account is None or account.run is not run:
                return  # not watched (a run watches before its query starts): nothing of it to store
            del self._runs[name]
            self.watched.discard(name)
            pending = self._pending.pop(name, None)
            if pending is None or pending.account is not account:
                pending = _Pending(account)
            # Its rows were counted when its event came (or will be): only the position matters here.
            _merge(pending, last_progress, count=False)
        self._apply(pending, written)

    def started(self, name: str) -> None:
        """Called on the query's stream thread as it starts: note its Py4J callback connection, which
        the task's stop closes (a batch function would have noted it otherwise; see running.py)."""
        with self._lock:
            account = self._runs.get(name)
        if account is not None:
            remember_callback_connection(account.run)

    def progress(self, name: str, text: str) -> None:
        progress = json.loads(text)
        if progress.get("batchId") == 0:
            # A task's start-up, step by step in Spark's words (planning, writing, ...): where it went.
            log.debug(
                "query %s: first batch, %s rows, took %s ms",
                name,
                progress.get("numInputRows"),
                progress.get("durationMs"),
            )
        with self._lock:
            account = self._runs.get(name)
            if account is None:
                return
            pending = self._pending.get(name)
            if pending is None or pending.account is not account:
                pending = self._pending[name] = _Pending(account)
            _merge(pending, progress)
            self._lock.notify_all()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        next_flush = time.monotonic() + self.flush_s
        while True:
            with self._lock:
                self._lock.wait_for(
                    lambda: self._closed or bool(self._pending), timeout=max(0.0, next_flush - time.monotonic())
                )
                if self._closed:
                    return
                batch = list(self._pending.values())
                self._pending.clear()
                flushing = time.monotonic() >= next_flush
                accounts = [a for a in self._runs.values() if a.run.ctx.realtime] if flushing else []
            for pending in batch:
                self._apply(pending)
            if flushing:
                next_flush = time.monotonic() + self.flush_s
                for account in accounts:
                    self._flush_written(account)

    def _flush_written(self, account: _Account) -> None:
        run = account.run
        with self._applying:
            if account not in self._runs.values():
                return  # stopped meanwhile: its stop stores the final account
            try:
                written = account.source.written_offsets(run.ctx, 0.0, final=False)
            except Exception:  # its query may be stopping; the stop asks again
                log.debug("task %s-%d: reading its written offsets", run.connector, run.task_id, exc_info=True)
                return
            if written:
                self._store(_Pending(account, written=written))

    def _apply(self, pending: _Pending, written: Written | None = None) -> None:
        with self._applying:
            if written is not None:
                try:
                    pending.written = written()
                except Exception:  # the last progress still covers all it reports
                    run = pending.account.run
                    log.warning("task %s-%d: reading its written offsets", run.connector, run.task_id, exc_info=True)
            if pending.end is not None or pending.written:
                self._store(pending)

    def _store(self, pending: _Pending) -> None:
        account = pending.account
        run, source = account.run, account.source
        with log_context.task_context(run.connector, run.task_id):
            self._store_in_context(pending, account, run, source)

    def _store_in_context(self, pending: _Pending, account: _Account, run: RunningTask, source: DirectSource) -> None:
        try:
            reached: list[tuple[Partition, Offset | None]] = []
            if pending.end is not None:
                reached += source.progress_offsets(pending.end)
            if pending.written:
                told = {json.dumps(p, sort_keys=True) for p, _ in pending.written}
                reached = [(p, o) for p, o in reached if json.dumps(p, sort_keys=True) not in told]
                reached += pending.written
            stored = account.stored
            changed = [(p, o) for p, o in reached if stored.get(json.dumps(p, sort_keys=True)) != o]
            if changed:
                started = time.monotonic()
                try:
                    self.offsets.put(run.connector, changed)
                except Exception:
                    run.measures.committed((time.monotonic() - started) * 1000, ok=False)
                    raise
                run.measures.committed((time.monotonic() - started) * 1000)
                for p, o in changed:
                    stored[json.dumps(p, sort_keys=True)] = o
            # Progress counts a batch's rows at its end; a real-time task's producer counts each record as
            # it is acknowledged, and the same records are in both: the larger is the count so far.
            account.progress_rows += pending.rows
            records = max(account.progress_rows, source.written_records() or 0)
            if pending.rows or records > run.records:
                # Each time, as the batch path does: a topics reset (KIP-558) clears what was recorded.
                run.events.topics_seen(run.connector, run.task_id, account.topics)
            if records > run.records:
                # What this run wrote since the last store: one batch of Connect's sensors (a real-time
                # run's records arrive here every offset.flush.interval.ms, between its batch ends).
                run.measures.batch(records - run.records, records - run.records, pending.took_ms)
            run.records = max(run.records, records)
            run.batches += pending.batches
        except Exception:
            # The next progress carries the same positions and more: storing them then loses nothing.
            log.exception("task %s-%d: storing offsets from its query's progress", run.connector, run.task_id)


def last_progress(query: StreamingQuery) -> dict[str, Any] | None:
    """The query's last progress as parsed JSON (None before its first batch)."""
    try:
        progress = query.lastProgress
    except Exception:  # the query's JVM side is gone
        log.debug("reading the last progress", exc_info=True)
        return None
    if progress is None:
        return None
    text = getattr(progress, "json", None)
    return json.loads(text) if isinstance(text, str) else dict(progress)


def _merge(pending: _Pending, progress: Mapping[str, Any] | None, count: bool = True) -> None:
    if not progress:
        return
    sources = progress.get("sources") or []
    end = sources[0].get("endOffset") if sources else None
    if isinstance(end, str):
        end = json.loads(end)
    if end is not None:
        pending.end = end
    # Rows written: the sink's count where it reports one (a source's filter may drop rows it read).
    written = (progress.get("sink") or {}).get("numOutputRows")
    rows = int(written if isinstance(written, int) and written >= 0 else progress.get("numInputRows") or 0)
    rows = rows if count else 0
    pending.rows += rows
    pending.batches += 1 if rows else 0
    took = (progress.get("durationMs") or {}).get("triggerExecution")
    if rows and isinstance(took, int | float):
        pending.took_ms = max(pending.took_ms, float(took))
