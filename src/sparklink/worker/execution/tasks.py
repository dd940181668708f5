"""Starts and stops task queries and reports what happens to them. Caller: the worker (worker.py).

Each task is its own streaming query, so one task can fail, restart or stop without touching its
siblings. `TaskEvents`, handed in with each task, is how a task reports back: a query that
terminates with an exception turns into `task_failed(connector, task, trace)`; topics a task writes
or reads turn into `topics_seen(...)`. Per micro-batch the commit order is fixed (see `_source_batch`
and `_sink_batch`).
"""

from __future__ import annotations

import functools
import logging
import shutil
import tempfile
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sparklink.api.connector import RECORDS_METRIC, SinkTask, SourceTask, Task, TaskContext
from sparklink.api.task_config import TaskSettings, sink_group
from sparklink.worker.execution import direct, kafka_io, offset_log, restarts
from sparklink.worker.execution.running import (
    QueryListener,
    RunningTask,
    TaskEvents,
    close_callback_connection,
    query_name,
    remember_callback_connection,
    remember_error,
    safe_name,
)
from sparklink.worker.execution.spark import register_functions
from sparklink.worker.storage.group_offsets import GroupOffsetStore
from sparklink.worker.storage.offsets import OffsetStore
from sparklink.worker.transforms import errors as record_errors
from sparklink.worker.transforms.pipeline import Outcome, Pipeline, compile_pipeline

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger(__name__)

# How long closing waits for the Kafka reader's warm-up to end (its clients give up within ~15 s).
WARM_UP_WAIT_S = 30.0


class TaskQueries:
    """The task queries of one worker, on its SparkSession."""

    def __init__(
        self,
        spark: SparkSession,
        bootstrap_servers: str,
        offsets: OffsetStore,
        group_offsets: GroupOffsetStore,
        trigger_interval_ms: int = 1000,
        scratch_dir: Path | None = None,
        converter_defaults: Mapping[str, str] | None = None,
        stop_grace_s: float = 5.0,
        realtime_batch_ms: int = 60000,
        offset_flush_ms: int = 5000,
        warm_up_topic: str | None = None,
    ) -> None:
        self.spark = spark
        self.stop_grace_s = stop_grace_s
        self.realtime_batch = f"{realtime_batch_ms} milliseconds"
        self.bootstrap_servers = bootstrap_servers
        self.offsets = offsets
        self.group_offsets = group_offsets
        self.metadata = kafka_io.Metadata(bootstrap_servers)
        self.trigger = f"{trigger_interval_ms} milliseconds"
        self.trigger_interval_ms = trigger_interval_ms
        # How long a query whose trigger found nothing to do waits before it looks again (Spark: 10 ms).
        # Sink queries trigger continuously (kafka_io.SINK_TRIGGER) and rely on it to look once per
        # interval; for the others it fits inside their interval and changes nothing.
        spark.conf.set("spark.sql.streaming.pollingDelay", f"{trigger_interval_ms}ms")
        register_functions(spark)  # converters' expressions call them
        self.scratch = Path(scratch_dir or tempfile.mkdtemp(prefix="sparklink-checkpoints-"))
        # The worker's key/value/header converter settings, used where a connector sets none.
        self.converter_defaults = dict(converter_defaults or {})
        self._tasks: dict[tuple[str, int], RunningTask] = {}
        self._by_query: dict[str, RunningTask] = {}
        self._early_exits: dict[str, str | None] = {}
        # Serialises task starts and stops with the watchdog's re-assignments.
        self._control = threading.RLock()
        self._lock = threading.RLock()
        self.progress = direct.ProgressOffsets(offsets, offset_flush_ms / 1000)
        self._listener = QueryListener(self._on_terminated, self.progress.progress, self.progress.started)
        self._listener.watched = self.progress.watched
        self._realtime_slots = 0  # Spark task slots held by real-time queries
        spark.streams.addListener(self._listener)
        self._closed = threading.Event()
        self._watchdog = threading.Thread(target=self._watch, name="task-watchdog", daemon=True)
        self._watchdog.start()
        # Closing waits for it: a Spark job still being planned when the caller stops the JVM is
        # aborted there, and Spark logs that abort as an ERROR.
        self._warm_up: threading.Thread | None = None
        if warm_up_topic and _first_use(spark):
            args = (spark, bootstrap_servers, warm_up_topic)
            self._warm_up = threading.Thread(target=kafka_io.warm_up, args=args, name="spark-warm-up", daemon=True)
            self._warm_up.start()

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
        """Build the task's pipeline and start its query; raises if the pipeline cannot be built.

        Converters, transforms and error handling come from `connector_config` (as in Connect), else
        from the task config."""
        with self._control:
            self._start_task(connector, task_id, task, config, events, connector_config)

    def _start_task(
        self,
        connector: str,
        task_id: int,
        task: Task,
        config: dict[str, str],
        events: TaskEvents,
        connector_config: Mapping[str, str] | None = None,
        retries: int = 0,
    ) -> None:
        self._stop_task(connector, task_id)
        settings = TaskSettings.parse(config)
        side: Literal["source", "sink"] = "source" if isinstance(task, SourceTask) else "sink"
        pipeline = compile_pipeline(dict(connector_config or config), self.converter_defaults, side, connector, task_id)
        self.scratch.mkdir(parents=True, exist_ok=True)
        checkpoint = Path(tempfile.mkdtemp(prefix=f"{safe_name(connector)}-{task_id}-", dir=self.scratch))
        ctx = TaskContext(connector, task_id, dict(config), self.spark, checkpoint=str(checkpoint))
        run = RunningTask(connector, task_id, task, ctx, settings, events, checkpoint)
        run.extra["pipeline"] = pipeline
        run.extra["connector_config"] = connector_config
        run.extra["start_retries"] = retries
        if isinstance(task, SourceTask):
            ctx.resume = self.offsets.get(connector)
            query: StreamingQuery | None = self._start_source(run, task)
        elif isinstance(task, SinkTask):
            query = self._start_sink(run, task)
        else:
            raise TypeError(f"{type(task).__name__} is neither a SourceTask nor a SinkTask")
        with self._lock:
            run.query = query
            self._tasks[run.key] = run
            if query is not None:
                self._by_query[str(query.id)] = run
                # A query can die before start() returns (failing on its first batch); its
                # termination event then arrived before we knew which task it belongs to.
                early = self._early_exits.pop(str(query.id), None)
        if query is not None and early is not None:
            self._on_terminated(str(query.id), early)
        log.info("started task %s-%d (query %s)", connector, task_id, query.id if query else "idle")

    def start_tasks(self, connector: str, starts: Sequence[TaskStart]) -> dict[int, Exception]:
        """Start several tasks of one connector at once; the tasks that could not start, with why.

        Each start plans its query and waits for Spark to launch its stream thread; on a restart of
        a connector's tasks those waits overlap instead of adding up (the slowest task decides when
        data flows again)."""
        with self._control:
            start = functools.partial(self._start_task, connector)
            failures = _run_together(
                [functools.partial(start, s.task_id, s.task, s.config, s.events, s.connector_config) for s in starts]
            )
        return {s.task_id: exc for s, exc in zip(starts, failures, strict=True) if exc is not None}

    def stop_task(self, connector: str, task_id: int) -> None:
        """Stop the task's query (waiting for the current batch) and drop its scratch checkpoint."""
        with self._control:
            self._stop_task(connector, task_id)

    def stop_tasks(self, connector: str, task_ids: Sequence[int]) -> None:
        """Stop several tasks of one connector at once: each stop waits for its query's current
        batch, and those waits overlap instead of adding up."""
        with self._control:
            failures = _run_together([functools.partial(self._stop_task, connector, t) for t in task_ids])
        for task_id, exc in zip(task_ids, failures, strict=True):
            if exc is not None:
                log.warning("stopping task %s-%d failed: %s", connector, task_id, exc)

    def _stop_task(self, connector: str, task_id: int) -> None:
        with self._lock:
            run = self._tasks.pop((connector, task_id), None)
        if run is None:
            return
        if run.extra.get("direct"):
            self._stop_direct(run)
        elif not run.stop_batches(self.stop_grace_s):
            log.info(
                "task %s-%d: its batch still runs %.0fs after the stop was asked; cancelling it (it is read again"
                " on the next start)",
                connector,
                task_id,
                self.stop_grace_s,
            )
        if run.query is not None:
            try:
                run.query.stop()
            except Exception:  # a query that already died has nothing left to stop
                log.debug("stopping %s-%d", connector, task_id, exc_info=True)
            # Its entry in _by_query goes when the termination event arrives (marked as stopping).
        if run.extra.get("direct"):
            self._release_direct(run)
        if isinstance(run.task, SinkTask):
            run.task.stop()
        close_callback_connection(run)
        shutil.rmtree(run.checkpoint, ignore_errors=True)
        log.info("stopped task %s-%d", connector, task_id)

    def stop_all(self) -> None:
        with self._lock:
            keys = list(self._tasks)
        for connector, task_id in keys:
            self.stop_task(connector, task_id)

    def close(self) -> None:
        """Stop the watchdog (it talks to the JVM), then every query; the caller stops the JVM after."""
        self._closed.set()
        self._watchdog.join(timeout=30)
        if self._warm_up is not None:
            # Bounded by the warm-up's own client timeouts (kafka_io.warm_up).
            self._warm_up.join(timeout=WARM_UP_WAIT_S)
            if self._warm_up.is_alive():
                log.warning("Spark's Kafka reader warm-up still runs after %.0fs; stopping anyway", WARM_UP_WAIT_S)
        self.stop_all()
        self.progress.close()
        try:
            self.spark.streams.removeListener(self._listener)
        except Exception:
            log.debug("removing listener", exc_info=True)
        shutil.rmtree(self.scratch, ignore_errors=True)

    def running(self, connector: str, task_id: int) -> bool:
        with self._lock:
            run = self._tasks.get((connector, task_id))
        return bool(run and (run.query is None or run.query.isActive))

    def runs(self) -> list[RunningTask]:
        """The tasks running now (their counters feed the metrics)."""
        with self._lock:
            return list(self._tasks.values())

    # ------------------------------------------------------------------ sources
    def _start_source(self, run: RunningTask, task: SourceTask) -> StreamingQuery:
        pipeline: Pipeline = run.extra["pipeline"]
        run.ctx.direct = task.direct_write and not pipeline.steps and not pipeline.policy.tolerant
        if run.ctx.direct:
            wanted = task.realtime_slots(run.ctx) if pipeline.passthrough and run.settings.realtime else None
            run.ctx.realtime = self._reserve_slots(run, wanted)
        try:
            stream = task.stream(run.ctx)
            known_topics = task.topics(run.ctx)
            producer = task.producer_config(run.ctx)
            if run.ctx.direct:
                return self._start_direct(run, stream, known_topics, producer)
        except Exception:
            self._release_slots(run)
            raise

        def commit(batch: DataFrame, batch_id: int) -> None:
            remember_callback_connection(run)
            if not run.begin_batch():
                return  # see _start_query
            try:
                with remember_error(run):
                    self._source_batch(run, task, batch, batch_id, known_topics, producer)
            finally:
                run.end_batch()

        return self._start_query(run, stream, commit)

    def _source_batch(
        self,
        run: RunningTask,
        task: SourceTask,
        batch: DataFrame,
        batch_id: int,
        known_topics: list[str] | None,
        producer: dict[str, str],
    ) -> None:
        """One source micro-batch, in this order:

        1. write the records to Kafka (Spark's Kafka writer, acks=all, in the JVM);
        2. record the batch's source offsets in the offsets store (acknowledged by the brokers);
        3. record newly seen topics (KIP-558) in the status store;
        4. let the task react (`batch_written`, e.g. MirrorMaker's offset syncs), then update metrics.
        A crash between 1 and 2 replays the batch on restart: at least once, nothing lost.

        A task with `batch_metrics` whose records pass through converters only (no transforms, none
        skipped by errors.tolerance=all) takes one pass: the write observes the count and the task's
        aggregates (`_observed_batch`), one Spark job per batch. Otherwise the batch is cached,
        counted, written and aggregated: three jobs.
        """
        pipeline: Pipeline = run.extra["pipeline"]
        one_pass = not pipeline.steps and not pipeline.policy.tolerant
        metrics = task.batch_metrics() if one_pass else None
        if metrics is not None and self._observed_batch(run, task, batch, batch_id, metrics, known_topics, producer):
            return
        outcome = pipeline.run(batch)
        batch.persist()
        try:
            records = outcome.records
            # Converter and transform failures tolerated by errors.tolerance=all are logged and skipped
            # (Connect has no dead letter queue for sources); their offsets still count as done.
            pipeline.dead_letters(outcome, self.bootstrap_servers, {})
            count = record_errors.retrying(
                pipeline.policy,
                lambda: kafka_io.write_records(records, self.bootstrap_servers, producer),
                lambda: run.stopping,
            )
            if count == 0 and (records is batch or batch.isEmpty()):
                return
            self.offsets.put(run.connector, list(task.batch_offsets(batch)))
            if count == 0:
                return
            # Transforms may route records to other topics; without any, the task's own list holds.
            topics = known_topics if known_topics and not pipeline.steps else _topics(records)
            run.events.topics_seen(run.connector, run.task_id, topics)
            task.batch_written(batch, batch_id, run.ctx)
            run.records += count
            run.batches += 1
        finally:
            outcome.release()
            batch.unpersist()

    def _observed_batch(
        self,
        run: RunningTask,
        task: SourceTask,
        batch: DataFrame,
        batch_id: int,
        metrics: dict[str, Column],
        known_topics: list[str] | None,
        producer: dict[str, str],
    ) -> bool:
        """`_source_batch` in one pass; False (nothing written) when the session cannot observe writes."""
        pipeline: Pipeline = run.extra["pipeline"]

        def convert(watched: DataFrame) -> DataFrame:
            # Converters only (see `_source_batch`): nothing is split off or cached.
            return pipeline.run(watched).records

        observed = record_errors.retrying(
            pipeline.policy,
            lambda: kafka_io.write_observed(batch, self.bootstrap_servers, producer, metrics, convert),
            lambda: run.stopping,
        )
        if observed is None:
            return False
        count = int(observed[RECORDS_METRIC] or 0)
        if count == 0:
            return True
        self.offsets.put(run.connector, list(task.observed_offsets(observed)))
        topics = known_topics if known_topics else _topics(batch)
        run.events.topics_seen(run.connector, run.task_id, topics)
        task.batch_written(batch, batch_id, run.ctx)
        run.records += count
        run.batches += 1
        return True

    def _start_direct(
        self, run: RunningTask, stream: DataFrame, known_topics: list[str] | None, producer: dict[str, str]
    ) -> StreamingQuery:
        """Start a task written by Spark's Kafka sink (direct.py): offsets from progress events."""
        pipeline: Pipeline = run.extra["pipeline"]
        # Converters go into the streaming plan (records already in Kafka form pass as they are).
        records = pipeline.run(stream).records
        realtime = run.ctx.realtime
        run.extra.update(direct=True, topics=known_topics or [])
        name = query_name(run.connector, run.task_id)
        self.progress.watch(name, run)
        try:
            query = direct.start_query(
                run,
                records,
                self.bootstrap_servers,
                producer,
                self.realtime_batch if realtime else self.trigger,
                realtime,
            )
        except Exception:
            self.progress.unwatch(name, run, None)
            raise
        log.info(
            "task %s-%d writes with Spark's Kafka sink (%s)",
            run.connector,
            run.task_id,
            f"real-time mode, {run.extra.get('realtime_slots')} Spark task slots"
            if realtime
            else f"micro-batches every {self.trigger}",
        )
        return query

    def _reserve_slots(self, run: RunningTask, wanted: int | None) -> bool:
        """Hold `wanted` Spark task slots for a real-time query if that many are free."""
        if not wanted:
            return False
        total = int(self.spark.sparkContext.defaultParallelism)
        with self._lock:
            free = total - direct.RESERVED_SLOTS - self._realtime_slots
            if wanted > free:
                log.info(
                    "task %s-%d runs in micro-batches: real-time mode needs %d free Spark task slots and %d of %d"
                    " are free (raise spark.master's local[N] or the executor cores to give it more)",
                    run.connector,
                    run.task_id,
                    wanted,
                    max(free, 0),
                    total,
                )
                return False
            self._realtime_slots += wanted
            run.extra["realtime_slots"] = wanted
            return True

    def _stop_direct(self, run: RunningTask) -> None:
        """Stop a direct query between batches if its batch ends within the grace (real-time mode
        never is between batches: its Spark tasks are interrupted, and `_release_direct` asks the task
        what was written; see direct.py)."""
        query = run.query
        if query is not None and not run.ctx.realtime and not direct.wait_for_batch_end(query, self.stop_grace_s):
            log.info(
                "task %s-%d: its batch still runs %.0fs after the stop was asked; cancelling it",
                run.connector,
                run.task_id,
                self.stop_grace_s,
            )
        run.stop_batches(0)

    def _release_direct(self, run: RunningTask) -> None:
        """After a direct query stopped: store its offsets (what its producer had acknowledged where
        the task can tell, else its last progress), free its slots."""
        last = direct.last_progress(run.query) if run.query is not None else None
        task = run.task
        written = (
            functools.partial(task.written_offsets, run.ctx, self.stop_grace_s, final=True)
            if isinstance(task, SourceTask)
            else None
        )
        self.progress.unwatch(query_name(run.connector, run.task_id), run, last, written)
        self._release_slots(run)

    def _release_slots(self, run: RunningTask) -> None:
        with self._lock:
            self._realtime_slots -= run.extra.pop("realtime_slots", 0)

    # ------------------------------------------------------------------ sinks
    def _start_sink(self, run: RunningTask, task: SinkTask) -> StreamingQuery | None:
        group = sink_group(run.connector, run.ctx.config)
        settings = run.settings
        topics = list(settings.topics)
        assigned = kafka_io.share(self.metadata.partitions(topics), topics, run.task_id, settings.task_count)
        run.extra["assigned"] = assigned
        if not assigned:
            log.info("task %s-%d has no partitions to read; idle", run.connector, run.task_id)
            return None
        starting = self.group_offsets.committed(group, assigned)
        stream = kafka_io.read_stream(
            self.spark,
            self.bootstrap_servers,
            assigned,
            starting,
            settings,
            self.trigger_interval_ms,
            holds_batch=task.holds_batch(run.ctx),
        )

        def commit(batch: DataFrame, batch_id: int) -> None:
            remember_callback_connection(run)
            if not run.begin_batch():
                return  # see _start_query
            try:
                with remember_error(run):
                    self._sink_batch(run, task, batch, batch_id, group)
            finally:
                run.end_batch()

        return self._start_query(run, stream, commit, kafka_io.SINK_TRIGGER)

    def _sink_batch(self, run: RunningTask, task: SinkTask, batch: DataFrame, batch_id: int, group: str) -> None:
        """One sink micro-batch, in this order:

        1. the task writes the batch to its target;
        2. the batch's end offsets (from the query's offset log) are committed to the connector's
           consumer group, for each partition it advanced;
        3. newly seen topics are recorded; 4. metrics (records: the offsets the batch spans).
        """
        pipeline: Pipeline = run.extra["pipeline"]
        covered = offset_log.batch_range(run.checkpoint, batch_id)
        if not covered.offsets:
            return
        # The pipeline caches its own split into good and errant records; only a sink that reads its
        # batch more than once needs the batch cached.
        cached = not task.reads_batch_once
        if cached:
            batch.persist()
        outcome: Outcome | None = None
        try:
            outcome = pipeline.run(batch)
            # Records that failed conversion or a transform (errors.tolerance=all) go to the dead
            # letter queue before the batch's offsets are committed.
            dead = pipeline.dead_letters(outcome, self.bootstrap_servers, {})
            if dead is not None:
                kafka_io.write_records(dead, self.bootstrap_servers, task_producer_config(run.ctx.config))
            records = outcome.records
            record_errors.retrying(
                pipeline.policy, lambda: task.write_batch(records, batch_id, run.ctx), lambda: run.stopping
            )
            moved = {tp: end for tp, end in covered.end.items() if end != covered.start.get(tp)}
            self.group_offsets.commit(group, moved)
            run.events.topics_seen(run.connector, run.task_id, sorted({t for t, _ in moved}))
            run.records += covered.offsets
            run.batches += 1
        finally:
            if outcome is not None:
                outcome.release()
            if cached:
                batch.unpersist()

    # ------------------------------------------------------------------ shared
    def _start_query(
        self,
        run: RunningTask,
        stream: DataFrame,
        commit: Callable[[DataFrame, int], None],
        trigger: str | None = None,
    ) -> StreamingQuery:
        """Start the task's query; `commit` runs once per micro-batch, at most every `trigger` (by default
        the worker's trigger interval).

        A batch that reaches Python after the task was asked to stop returns at once, writing and
        recording nothing: Spark's stop waits for the batch in hand (its stream thread is blocked in
        the Python call), and a batch the stream thread had just begun would otherwise hold a restart
        for a whole batch. Its offsets are not recorded, so the task's next run reads it again.

        A batch already in hand gets `stop_grace_s` to finish before the query is stopped (Connect's
        task.shutdown.graceful.timeout.ms, 5 s by default): stopping a query cancels its Spark jobs,
        and a Kafka write cancelled midway is aborted with ERRORs in the log and its records written
        again by the next run."""
        return (
            stream.writeStream.queryName(query_name(run.connector, run.task_id))
            .foreachBatch(commit)
            .trigger(processingTime=trigger or self.trigger)
            .option("checkpointLocation", str(run.checkpoint))
            .start()
        )

    def _watch(self, interval: float = 2.0, reassign_every: int = 3) -> None:
        """Second line of failure detection: a query that is no longer active without having been
        stopped has failed, even if its termination event never arrived (the stream thread died).
        Every few rounds it also re-checks sink assignments (new topics or partitions).

        A failed task stays in `_tasks` until it is restarted; once its termination has been handled
        it is not inspected again (its exception text is a long JVM trace, fetched over Py4J).
        Measured: one failed task re-inspected every round cost the worker 0.04 cores."""
        rounds = 0
        while not self._closed.wait(interval):
            rounds += 1
            if rounds % reassign_every == 0:
                self._reassign_sinks()
            with self._lock:
                runs = [
                    r
                    for r in self._tasks.values()
                    if r.query is not None and not r.stopping and not r.extra.get("terminated")
                ]
            for run in runs:
                query = run.query
                assert query is not None
                try:
                    if query.isActive:
                        continue
                    error = query.exception()
                    text = str(error) if error is not None else "the task's query stopped unexpectedly"
                except Exception as exc:  # the JVM side is gone or shutting down
                    text = f"the task's query could not be inspected: {exc}"
                self._on_terminated(str(query.id), text)

    def _reassign_sinks(self) -> None:
        """Restart a sink task whose share of partitions changed since it started, e.g. because its
        topic did not exist yet or gained partitions. Its committed group offsets make this safe."""
        with self._lock:
            sinks = [r for r in self._tasks.values() if isinstance(r.task, SinkTask) and not r.stopping]
        if not sinks:
            return
        try:
            partitions = self.metadata.partitions(sorted({t for r in sinks for t in r.settings.topics}))
        except Exception:  # metadata unavailable for a moment: try again next round
            log.debug("re-checking partitions of sink tasks", exc_info=True)
            return
        for run in sinks:
            settings = run.settings
            now = kafka_io.share(partitions, list(settings.topics), run.task_id, settings.task_count)
            if now == run.extra.get("assigned") or (run.query is not None and not run.query.isActive):
                continue
            with self._control:
                if self._tasks.get(run.key) is not run or run.stopping:
                    continue  # stopped or replaced meanwhile
                log.info("task %s-%d: partitions changed to %s; restarting its query", run.connector, run.task_id, now)
                try:
                    self._start_task(
                        run.connector,
                        run.task_id,
                        type(run.task)(),
                        run.ctx.config,
                        run.events,
                        run.extra.get("connector_config"),
                    )
                except Exception as exc:
                    run.events.task_failed(run.connector, run.task_id, f"re-assigning partitions failed: {exc}")

    def _on_terminated(self, query_id: str, exception: str | None) -> None:
        with self._lock:
            run = self._by_query.pop(query_id, None)
            if run is None:
                self._early_exits[query_id] = exception
                return
            run.extra["terminated"] = True
        if run.stopping or not exception or run.extra.get("reported"):
            return
        run.extra["reported"] = True
        # The Python traceback from inside the batch names the real cause; Spark's own text wraps it
        # in Py4J frames. Keep both: cause first.
        trace = run.extra.get("error", "")
        trace = f"{trace}\nCaused by query termination:\n{exception}" if trace else exception
        decision = restarts.decide(trace, run.extra.get("start_retries", 0))
        if decision.restart and not self._closed.is_set():
            log.warning(
                "task %s-%d: its query stopped because %s; restarting it (attempt %d of %d)",
                run.connector,
                run.task_id,
                decision.reason,
                decision.attempt,
                restarts.MAX_START_RETRIES,
            )
            # Not on the caller's thread: that is Spark's listener bus (or the watchdog, or a start
            # that holds the control lock), and a query start must not wait on either.
            name = f"restart-{run.connector}-{run.task_id}"
            threading.Thread(target=self._restart, args=(run, decision.attempt), name=name, daemon=True).start()
            return
        log.error("task %s-%d failed: %s", run.connector, run.task_id, trace.strip().splitlines()[-1][:300])
        run.events.task_failed(run.connector, run.task_id, trace)

    def _restart(self, run: RunningTask, attempt: int) -> None:
        """Start a fresh query for a task whose query died of a transient start failure, unless the
        task was stopped, replaced or the worker closed meanwhile."""
        with self._control:
            if self._closed.is_set() or self._tasks.get(run.key) is not run or run.stopping:
                return
            try:
                self._start_task(
                    run.connector,
                    run.task_id,
                    type(run.task)(),
                    run.ctx.config,
                    run.events,
                    run.extra.get("connector_config"),
                    retries=attempt,
                )
            except Exception as exc:
                run.events.task_failed(run.connector, run.task_id, f"restarting the task's query failed: {exc}")


@dataclass(frozen=True)
class TaskStart:
    """One task of a `start_tasks` call: what `start_task` takes."""

    task_id: int
    task: Task
    config: dict[str, str]
    events: TaskEvents
    connector_config: Mapping[str, str] | None = None


_SESSIONS_USED: weakref.WeakSet[Any] = weakref.WeakSet()


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


def _topics(records: DataFrame) -> list[str]:
    return [r[0] for r in records.select("topic").distinct().collect()]


def task_producer_config(config: Mapping[str, str]) -> dict[str, str]:
    """Connect's `producer.override.*` settings of a task (the DLQ producer of a sink uses them)."""
    prefix = "producer.override."
    return {k.removeprefix(prefix): v for k, v in config.items() if k.startswith(prefix)}
