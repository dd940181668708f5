"""The registry of a worker's task runs: starts and stops them and decides what a failed query means.
Caller: the worker (worker.py).

Each task is its own run with its own streaming query, so one task can fail, restart or stop without
touching its siblings. A run owns its path (run.py and its kinds); the registry only builds runs
(factory.py), keeps them by task, starts and stops several at once, and turns a query's termination
into a restart (a fresh run) or a FAILED task, reported to the task's `TaskEvents`. Two kinds of
failure are restarted: a Python worker that did not start in time (restarts.py, at once) and a Kafka
outage (outages.py, after Connect's back-off, while the task's status stays RUNNING). A task waiting
for such a restart counts as running; stopping or starting it cancels the wait.
"""

from __future__ import annotations

import functools
import logging
import shutil
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from sparklink.api.connector import Task
from sparklink.api.files import FileAccess
from sparklink.clients.connect import WorkerClients
from sparklink.worker import log_context
from sparklink.worker.execution import contexts, kafka_io, outages, restarts, warm_up
from sparklink.worker.execution import scratch as scratch_dirs
from sparklink.worker.execution.clients import RunClients
from sparklink.worker.execution.direct import ProgressOffsets, RealtimeSlots
from sparklink.worker.execution.factory import RunFactory
from sparklink.worker.execution.held import held_numbers
from sparklink.worker.execution.listener import QueryListener
from sparklink.worker.execution.run import TaskRun, TaskStart, TopicPartition
from sparklink.worker.execution.services import RunServices, Triggers
from sparklink.worker.execution.spark import register_functions
from sparklink.worker.execution.watchdog import Watchdog
from sparklink.worker.storage.group_offsets import GroupOffsetStore
from sparklink.worker.storage.offsets import OffsetStore
from sparklink.worker.task_events import TaskEvents

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


class TaskRuns:
    """The task runs of one worker, on its SparkSession."""

    def __init__(
        self,
        spark: SparkSession,
        clients: WorkerClients,
        offsets: OffsetStore,
        group_offsets: GroupOffsetStore,
        trigger_interval_ms: int = 1000,
        scratch_dir: Path | None = None,
        converter_defaults: Mapping[str, str] | None = None,
        stop_grace_s: float = 5.0,
        realtime_batch_ms: int = 60000,
        offset_flush_ms: int = 5000,
        warm_up_topic: str | None = None,
        files: FileAccess | None = None,
    ) -> None:
        # How long a query whose trigger found nothing to do waits before it looks again (Spark: 10 ms).
        # Sink queries trigger continuously (kafka_io.SINK_TRIGGER) and rely on it to look once per
        # interval; for the others it fits inside their interval and changes nothing.
        spark.conf.set("spark.sql.streaming.pollingDelay", f"{trigger_interval_ms}ms")
        register_functions(spark)  # converters' expressions call them
        scratch = scratch_dirs.claim(scratch_dir)
        self.services = RunServices(
            spark=spark,
            clients=RunClients(clients),
            offsets=offsets,
            group_offsets=group_offsets,
            metadata=kafka_io.Metadata(clients.worker),
            triggers=Triggers(trigger_interval_ms, realtime_batch_ms, stop_grace_s),
            scratch=scratch,
            progress=ProgressOffsets(offsets, offset_flush_ms / 1000),
            slots=RealtimeSlots(lambda: int(spark.sparkContext.defaultParallelism)),
            held=held_numbers(spark),
            files=(files or FileAccess.of()).protecting(scratch),
        )
        self.factory = RunFactory(self.services, converter_defaults)
        self._runs: dict[tuple[str, int], TaskRun] = {}
        self._by_query: dict[str, TaskRun] = {}
        self._early_exits: dict[str, str | None] = {}
        # Tasks waiting for an automatic restart, each with the event that cancels the wait.
        self._pending: dict[tuple[str, int], threading.Event] = {}
        self._classifier = outages.Classifier.on_jvm(spark.sparkContext._jvm)
        # Serialises task starts and stops with the watchdog's re-assignments.
        self._control = threading.RLock()
        self._lock = threading.RLock()
        progress = self.services.progress
        self._listener = QueryListener(self._on_terminated, progress.progress, progress.started)
        self._listener.watched = progress.watched
        spark.streams.addListener(self._listener)
        self._closed = threading.Event()
        self._watchdog = Watchdog(self.runs, self._on_terminated, self._reshare, self.services.metadata)
        # Closing waits for it: a Spark job still being planned when the caller stops the JVM is
        # aborted there, and Spark logs that abort as an ERROR.
        self._warm_up: warm_up.WarmUp | None = None
        kafka_io.warm_up_tls(spark, clients.worker)
        if warm_up_topic and _first_use(spark):
            self._warm_up = warm_up.WarmUp(
                spark, clients.worker, warm_up_topic, scratch, self.services.metadata, self.factory.converter_defaults
            )

    # ------------------------------------------------------------------ control
    def start_task(
        self,
        connector: str,
        task_id: int,
        task: Task,
        config: dict[str, str],
        events: TaskEvents,
        connector_config: Mapping[str, str] | None = None,
    ) -> None:
        """Build the task's run and start its query; raises if its pipeline cannot be built.

        Converters, transforms and error handling come from `connector_config` (as in Connect), else
        from the task config."""
        with self._control:
            self._start(connector, TaskStart(task_id, task, config, events, connector_config))

    def start_tasks(self, connector: str, starts: Sequence[TaskStart]) -> dict[int, Exception]:
        """Start several tasks of one connector at once; the tasks that could not start, with why.

        Each start plans its query and waits for Spark to launch its stream thread; on a restart of
        a connector's tasks those waits overlap instead of adding up (the slowest task decides when
        data flows again)."""
        with self._control:
            failures = _run_together([functools.partial(self._start, connector, s) for s in starts])
        return {s.task_id: exc for s, exc in zip(starts, failures, strict=True) if exc is not None}

    def _start(self, connector: str, start: TaskStart, retries: int = 0, outage: outages.Outage | None = None) -> None:
        self._stop(connector, start.task_id)
        with contexts.starting_query(self.services.spark, connector, start.task_id):
            began = time.monotonic()
            run = self.factory.build(connector, start, retries, outage)
            built = time.monotonic()
            query = run.start()
            log.debug(
                "task %s-%d: run built in %.0f ms, its query started in %.0f ms",
                connector,
                start.task_id,
                (built - began) * 1000,
                (time.monotonic() - built) * 1000,
            )
        with self._lock:
            run.query = query
            self._runs[run.key] = run
            if query is not None:
                self._by_query[str(query.id)] = run
                # A query can die before start() returns (failing on its first batch); its
                # termination event then arrived before we knew which task it belongs to.
                early = self._early_exits.pop(str(query.id), None)
        if query is not None and early is not None:
            self._on_terminated(str(query.id), early)
        with log_context.task_context(connector, start.task_id):
            log.info("started task %s-%d (query %s)", connector, start.task_id, query.id if query else "idle")

    def stop_task(self, connector: str, task_id: int) -> None:
        """Stop the task's query (waiting for the current batch) and drop its scratch checkpoint."""
        with self._control:
            self._stop(connector, task_id)

    def stop_tasks(self, connector: str, task_ids: Sequence[int]) -> None:
        """Stop several tasks of one connector at once: each stop waits for its query's current
        batch, and those waits overlap instead of adding up."""
        with self._control:
            failures = _run_together([functools.partial(self._stop, connector, t) for t in task_ids])
        for task_id, exc in zip(task_ids, failures, strict=True):
            if exc is not None:
                log.warning("stopping task %s-%d failed: %s", connector, task_id, exc)

    def _stop(self, connector: str, task_id: int) -> None:
        with self._lock:
            waiting = self._pending.pop((connector, task_id), None)
            run = self._runs.pop((connector, task_id), None)
        if waiting is not None:
            waiting.set()
        if run is None:
            return
        # Its entry in _by_query goes when the termination event arrives (marked as stopping).
        with log_context.task_context(connector, task_id):
            run.stop()
            log.info("stopped task %s-%d", connector, task_id)

    def await_warm_up(self) -> None:
        """Return once the session's warm-up has ended (warm_up.py), or after `warm_up.WAIT_S` seconds."""
        if self._warm_up is not None and not self._warm_up.wait():
            log.warning("the Spark warm-up still runs after %.0fs; starting work anyway", warm_up.WAIT_S)

    def stop_all(self) -> None:
        with self._lock:
            keys = list(self._runs)
        for connector, task_id in keys:
            self.stop_task(connector, task_id)

    def close(self) -> None:
        """Stop the watchdog (it talks to the JVM), then every query; the caller stops the JVM after."""
        self._closed.set()
        with self._lock:
            waits, self._pending = list(self._pending.values()), {}
        for waiting in waits:
            waiting.set()
        self._watchdog.close()
        if self._warm_up is not None and not self._warm_up.wait():
            log.warning("the Spark warm-up still runs after %.0fs; stopping anyway", warm_up.WAIT_S)
        self.stop_all()
        self.services.progress.close()
        try:
            self.services.spark.streams.removeListener(self._listener)
        except Exception:
            log.debug("removing listener", exc_info=True)
        shutil.rmtree(self.services.scratch, ignore_errors=True)

    # ------------------------------------------------------------------ lookup
    def running(self, connector: str, task_id: int) -> bool:
        with self._lock:
            run = self._runs.get((connector, task_id))
            if (connector, task_id) in self._pending:
                return True  # between runs: its restart is on its way
        return bool(run and (run.query is None or run.query.isActive))

    def runs(self) -> list[TaskRun]:
        """The tasks running now (their counters feed the metrics)."""
        with self._lock:
            return list(self._runs.values())

    # ------------------------------------------------------------------ what happens to runs
    def _reshare(self, run: TaskRun, share: list[TopicPartition]) -> None:
        """A fresh run for a task whose share of partitions changed (its committed offsets make this safe)."""
        with self._control, log_context.task_context(run.connector, run.task_id):
            if self._runs.get(run.key) is not run or run.stopping:
                return  # stopped or replaced meanwhile
            log.info("task %s-%d: partitions changed to %s; restarting its query", run.connector, run.task_id, share)
            try:
                self._start(run.connector, run.fresh_start())
            except Exception as exc:
                run.events.task_failed(run.connector, run.task_id, f"re-assigning partitions failed: {exc}")

    def _on_terminated(self, query_id: str, exception: str | None) -> None:
        with self._lock:
            run = self._by_query.pop(query_id, None)
            if run is None:
                self._early_exits[query_id] = exception
                return
            run.terminated = True
        if run.stopping or not exception or run.reported:
            return
        run.reported = True
        with log_context.task_context(run.connector, run.task_id):
            self._decide(run, exception)

    def _decide(self, run: TaskRun, exception: str) -> None:
        """A task's query ended with `exception`: restart it (a transient start failure) or report it FAILED."""
        # The Python traceback from inside the batch names the real cause; Spark's own text wraps it
        # in Py4J frames. Keep both: cause first.
        trace = f"{run.error}\nCaused by query termination:\n{exception}" if run.error else exception
        decision = restarts.decide(trace, run.retries)
        if decision.restart and not self._closed.is_set():
            log.warning(
                "task %s-%d: its query stopped because %s; restarting it (attempt %d of %d)",
                run.connector,
                run.task_id,
                decision.reason,
                decision.attempt,
                restarts.MAX_START_RETRIES,
            )
            self._restart_later(run, 0.0, decision.attempt, None)
            return
        cause = self._outage_cause(run, exception)
        if cause is not None and not self._closed.is_set():
            settled = run.batches > 0 or time.monotonic() - run.started >= outages.SETTLED_S
            self._through_outage(run, run.outage, settled, cause, trace)
            return
        log.error("task %s-%d failed: %s", run.connector, run.task_id, trace.strip().splitlines()[-1][:300])
        run.events.task_failed(run.connector, run.task_id, trace)

    def _outage_cause(self, run: TaskRun, exception: str | None) -> str | None:
        """The retriable Kafka error the run's query died of, if it died of one (outages.py)."""
        if run.exception is not None:
            found = self._classifier.in_exception(run.exception)
            if found:
                return found
        return self._classifier.in_trace(f"{run.error}\n{exception or ''}")

    def _through_outage(
        self, run: TaskRun, previous: outages.Outage | None, settled: bool, cause: str, trace: str
    ) -> None:
        """Restart the task after Connect's back-off, or fail it once errors.retry.timeout has run out."""
        now = time.monotonic()
        outage = outages.next_outage(previous, cause, now, settled)
        policy = run.error_policy()
        backoff = outages.Backoff(policy.retry_timeout_ms, policy.retry_delay_max_ms)
        elapsed = now - outage.since
        if backoff.gives_up(elapsed):
            log.error(
                "task %s-%d failed: Kafka was unavailable for %.0f s over %d restart(s); %s",
                run.connector,
                run.task_id,
                elapsed,
                outage.restarts,
                cause,
            )
            run.events.task_failed(run.connector, run.task_id, outages.gave_up_trace(outage, elapsed, backoff, trace))
            return
        restart = outage.restarts + 1
        delay = backoff.delay_s(restart)
        if backoff.timeout_ms > 0:
            delay = min(delay, max(0.0, backoff.timeout_ms / 1000 - elapsed))
        log.warning(
            "task %s-%d: its query stopped because Kafka is unavailable (%s); restart %d in %.1f s, "
            "%.0f s into the outage (%s); its status stays RUNNING",
            run.connector,
            run.task_id,
            cause,
            restart,
            delay,
            elapsed,
            backoff.describe(),
        )
        self._restart_later(run, delay, run.retries, replace(outage, restarts=restart))

    def _restart_later(self, run: TaskRun, delay: float, retries: int, outage: outages.Outage | None) -> None:
        """Start a fresh run of the task after `delay` seconds, on a thread of its own: not on the
        caller's, which is Spark's listener bus (or the watchdog, or a start that holds the control
        lock), and a query start must not wait on either. Stopping or starting the task meanwhile,
        or closing the registry, cancels it."""
        cancel = threading.Event()
        with self._lock:
            self._pending[run.key] = cancel
        name = f"restart-{run.connector}-{run.task_id}"
        args = (run, cancel, delay, retries, outage)
        threading.Thread(target=self._restart, args=args, name=name, daemon=True).start()

    def _restart(
        self, run: TaskRun, cancel: threading.Event, delay: float, retries: int, outage: outages.Outage | None
    ) -> None:
        if cancel.wait(delay):
            return
        with self._control:
            with self._lock:
                if self._pending.get(run.key) is not cancel or self._closed.is_set():
                    return
                del self._pending[run.key]
            try:
                self._start(run.connector, run.fresh_start(), retries=retries, outage=outage)
            except Exception as exc:
                cause = self._classifier.in_exception(exc)
                trace = f"restarting the task's query failed: {exc}"
                if cause is not None and not self._closed.is_set():
                    # Still down: the next restart waits longer, within the same outage.
                    self._through_outage(run, outage, False, cause, trace)
                    return
                run.events.task_failed(run.connector, run.task_id, trace)
                return
        if outage is not None:
            log.info(
                "task %s-%d: query restarted (restart %d of a Kafka outage)",
                run.connector,
                run.task_id,
                outage.restarts,
            )


_SESSIONS_USED: weakref.WeakSet[SparkSession] = weakref.WeakSet()


def _first_use(spark: SparkSession) -> bool:
    """True the first time a session runs task queries: it is warmed up once (workers in tests share one)."""
    if spark in _SESSIONS_USED:
        return False
    _SESSIONS_USED.add(spark)
    return True


def _run_together(actions: Sequence[Callable[[], None]]) -> list[Exception | None]:
    """Run the actions on threads of their own and wait for all; each one's exception or None.

    PySpark pins each Python thread to a JVM thread of its own, so query starts and stops made
    from these threads proceed in parallel in the JVM."""
    if len(actions) <= 1:
        out: list[Exception | None] = []
        for action in actions:
            try:
                action()
                out.append(None)
            except Exception as exc:
                out.append(exc)
        return out
    with ThreadPoolExecutor(max_workers=len(actions), thread_name_prefix="task-control") as pool:
        futures = [pool.submit(action) for action in actions]
        return [_exception(f) for f in futures]


def _exception(future: Future[None]) -> Exception | None:
    exc = future.exception()
    if exc is None or isinstance(exc, Exception):
        return exc
    raise exc  # KeyboardInterrupt and the like are not a task's failure
