"""A task run: one start of one task, from its query's start to its release (Connect's WorkerTask).

Each kind of run owns its path, in a module of its own: `SourceRun` (source_run.py: a batch function
per micro-batch writes to Kafka), `DirectRun` (direct_run.py: Spark's Kafka sink writes, no Python
per batch) and `SinkRun` (sink_run.py: a batch function per micro-batch read from Kafka). The
registry (tasks.py) has a run built (factory.py), starts it and later stops it; a run never starts
itself again: a restart, after a transient start failure or a change of its partition share, is a
fresh run built from `fresh_start()`. A new kind of task is one more subclass.

A run measures itself as it goes (`measures`, task_metrics.py) and answers with Connect's task-level
metric groups when /metrics is scraped (`metric_groups`); each batch function call logs with the task's
context (log_context.py).
"""

from __future__ import annotations

import logging
import shutil
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from sparklink.api.connector import Task
from sparklink.api.metrics import MetricGroup
from sparklink.worker import log_context
from sparklink.worker.execution import task_metrics
from sparklink.worker.execution.outages import Outage
from sparklink.worker.execution.running import (
    Query,
    RunningTask,
    close_callback_connection,
    query_name,
    remember_callback_connection,
    remember_error,
)
from sparklink.worker.execution.services import RunServices
from sparklink.worker.task_events import TaskEvents
from sparklink.worker.transforms.errors import ErrorCounts, ErrorPolicy
from sparklink.worker.transforms.pipeline import Pipeline

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
TOLERANCE_EXCEEDED = "Tolerance exceeded in error handler"


@dataclass(frozen=True)
class TaskStart:
    """What a task's run is built from: the herder's task, its config and whom it reports to."""

    task_id: int
    task: Task
    config: dict[str, str]
    events: TaskEvents
    connector_config: Mapping[str, str] | None = None
    """Converters, transforms and error handling (Connect reads them from the connector's config)."""


@dataclass(eq=False, kw_only=True)
class TaskRun(RunningTask, ABC):
    services: RunServices
    connector_config: Mapping[str, str] | None = None
    retries: int = 0
    """The automatic restarts before this run (restarts.py: transient start failures)."""
    outage: Outage | None = None
    """The Kafka outage this run was started to come through (outages.py), if any."""
    started: float = field(default_factory=time.monotonic)
    """When the run was built (monotonic seconds): one that runs long enough is through an outage."""

    @abstractmethod
    def start(self) -> Query | None:
        """Start the run's query, or None when it has nothing to run for now (a sink with no
        partitions). Raises if it cannot start, having given back what it took."""

    def stop(self) -> None:
        """Let the batch in hand finish within the grace, stop the query, give back what the run holds,
        end its query's callback connection and drop its scratch checkpoint."""
        self._finish_batches(self.services.triggers.stop_grace_s)
        if self.query is not None:
            try:
                self.query.stop()
            except Exception:  # a query that already died has nothing left to stop
                log.debug("stopping %s-%d", self.connector, self.task_id, exc_info=True)
        self._release()
        close_callback_connection(self)
        shutil.rmtree(self.checkpoint, ignore_errors=True)

    @property
    def client_config(self) -> Mapping[str, str]:
        """Where the task's client overrides (`producer.override.*`, ...) are read: the connector's config, as
        in Connect, else the task's."""
        return self.connector_config if self.connector_config is not None else self.ctx.config

    def client_name(self, client: str) -> str:
        """How a message names one of the task's Kafka clients."""
        return f"task {self.connector}-{self.task_id}'s {client}"

    def fresh_start(self) -> TaskStart:
        """What a new run of this task starts from: a new instance of its task, the same config."""
        return TaskStart(self.task_id, type(self.task)(), self.ctx.config, self.events, self.connector_config)

    def share_topics(self) -> list[str]:
        """Topics whose partitions decide this run's share of the work (none: its share never changes)."""
        return []

    def changed_share(self, partitions: Mapping[str, list[int]]) -> list[TopicPartition] | None:
        """This run's share of `partitions` (of `share_topics`) if it differs from the one it runs with."""
        return None

    def metric_groups(self) -> list[MetricGroup]:
        """Connect's task-level groups of this run (`connector-task-metrics` but its status, which the
        herder knows, `task-error-metrics` and its kind's group), the task's own and Spark's side."""
        connector, task_id = self.connector, self.task_id
        groups = [
            task_metrics.task_group("connector-task-metrics", connector, task_id, self.measures.task_values()),
            task_metrics.task_group("task-error-metrics", connector, task_id, self.error_counts().values()),
            task_metrics.task_group(*self._kind_values()),
            task_metrics.spark_group(
                connector, task_id, self._spark_query(), self.trigger(), task_metrics.spark_ui(self.services.spark)
            ),
        ]
        try:
            groups += self.task.metrics(self.ctx)
        except Exception:  # a plugin's metrics never fail the scrape
            log.debug("metrics of task %s-%d", connector, task_id, exc_info=True)
        return groups

    def _spark_query(self) -> StreamingQuery | None:
        """The run's query as Spark's StreamingQuery (a Java source task's job is not one)."""
        return cast("StreamingQuery | None", self.query)

    @abstractmethod
    def error_policy(self) -> ErrorPolicy:
        """The connector's error handling (errors.tolerance, errors.retry.*, the dead letter queue)."""

    @abstractmethod
    def error_counts(self) -> ErrorCounts:
        """This run's `task-error-metrics` counts."""

    @abstractmethod
    def _kind_values(self) -> tuple[str, str, int, dict[str, float]]:
        """(group, connector, task, values) of the run's kind: `source-task-metrics` or `sink-task-metrics`."""

    def trigger(self) -> str:
        """The query's trigger, as Spark names it."""
        return f"ProcessingTime({self.services.triggers.interval})"

    def _finish_batches(self, grace: float) -> None:
        """Let no batch begin and give the one in hand `grace` seconds (see `_start_batches`)."""
        if not self.stop_batches(grace):
            log.info(
                "task %s-%d: its batch still runs %.0fs after the stop was asked; cancelling it (it is read again"
                " on the next start)",
                self.connector,
                self.task_id,
                grace,
            )

    def _release(self) -> None:
        """Give back what the run holds once its query has stopped."""

    def _start_batches(
        self,
        stream: DataFrame,
        body: Callable[[DataFrame, int], None],
        trigger: str | None = None,
    ) -> StreamingQuery:
        """Start the run's query; `body` runs once per micro-batch, at most every `trigger` (by default
        the worker's trigger interval).

        A batch that reaches Python after the task was asked to stop returns at once, writing and
        recording nothing: Spark's stop waits for the batch in hand (its stream thread is blocked in
        the Python call), and a batch the stream thread had just begun would otherwise hold a restart
        for a whole batch. Its offsets are not recorded, so the task's next run reads it again.

        A batch already in hand gets `stop_grace_s` to finish before the query is stopped (Connect's
        task.shutdown.graceful.timeout.ms, 5 s by default): stopping a query cancels its Spark jobs,
        and a Kafka write cancelled midway is aborted with ERRORs in the log and its records written
        again by the next run."""

        def commit(batch: DataFrame, batch_id: int) -> None:
            remember_callback_connection(self)
            if not self.begin_batch():
                return
            try:
                with log_context.task_context(self.connector, self.task_id), remember_error(self):
                    try:
                        body(batch, batch_id)
                    except Exception as exc:
                        if TOLERANCE_EXCEEDED in str(exc):
                            # errors.tolerance=none: the record that failed fails the task (Connect counts it).
                            self.error_counts().failed(1, skipped=False)
                        raise
            finally:
                self.end_batch()

        return (
            stream.writeStream.queryName(query_name(self.connector, self.task_id))
            .foreachBatch(commit)
            .trigger(processingTime=trigger or self.services.triggers.interval)
            .option("checkpointLocation", str(self.checkpoint))
            .start()
        )


@dataclass(eq=False, kw_only=True)
class CompiledRun(TaskRun, ABC):
    """A run of a Python task, whose converters, transforms and error handling are compiled to Spark SQL."""

    pipeline: Pipeline

    def error_policy(self) -> ErrorPolicy:
        return self.pipeline.policy

    def error_counts(self) -> ErrorCounts:
        return self.pipeline.error_counts


def converts_only(pipeline: Pipeline) -> bool:
    """Records pass through converters only: no transforms, none skipped by errors.tolerance=all."""
    return not pipeline.steps and not pipeline.policy.tolerant
