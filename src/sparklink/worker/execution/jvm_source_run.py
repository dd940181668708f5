"""A Java source task's run: a Connect SourceTask in one long-running Spark task. Caller: the registry,
through factory.py.

The run submits a Spark job of one task (the bridge's SourceJob) whose body, on an executor (in the
driver's JVM in local mode), runs the Connect host's SourceTaskRunner: poll, transforms and converters,
the task's own producer, commitRecord per acknowledgement, and the task's source offsets in Connect's
format in the worker's offsets topic every `offset.flush.interval.ms`. Nothing of it passes through
Python. Stopping cancels the job: the task sees it, stops polling, commits its last offsets and returns,
and the stop waits for that. A task that fails ends its job with its Java trace, which the registry's
watchdog turns into a FAILED task (`JobQuery`): Spark does not retry it, as Connect would not.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sparklink.api.task_config import CONNECTOR_CLASS
from sparklink.clients.settings import KafkaClientSettings
from sparklink.worker.execution.run import TaskRun, TaskStart
from sparklink.worker.plugins.java import JavaSourceTask, JavaTask
from sparklink.worker.plugins.jvm_host import java_call
from sparklink.worker.transforms.errors import ErrorCounts, ErrorPolicy

log = logging.getLogger(__name__)

OFFSET_COMMIT_TIMEOUT_MS = 5000
"""Connect's offset.flush.timeout.ms: how long a commit waits for the brokers (and a stop for the last one)."""


class JobQuery:
    """A source task's Spark job, as the registry and its watchdog see a run's query."""

    def __init__(self, job: Any, stop_wait_s: float) -> None:
        self._job = job
        self._stop_wait_s = stop_wait_s

    @property
    def id(self) -> str:
        return str(self._job.id())

    @property
    def isActive(self) -> bool:
        return bool(self._job.isActive())

    def stop(self) -> None:
        job, wait_ms = self._job, int(self._stop_wait_s * 1000)
        if not java_call(lambda: job.stop(wait_ms)):
            log.warning("source job %s: its Spark task still ran %.0fs after the stop", self.id, self._stop_wait_s)

    def exception(self) -> str | None:
        failure = self._job.failure()
        return str(failure) if failure is not None else None

    def executor(self) -> str | None:
        """The Spark executor running the task ("driver" in local mode), once it has started."""
        executor = self._job.executor()
        return str(executor) if executor is not None else None


def task_spec(run: TaskRun, java: JavaTask, worker_converters: Mapping[str, str]) -> dict[str, Any]:
    """What the Connect host starts a Java task from (jvm/connect-host TaskSpec)."""
    runtime = java.plugin.runtime
    connector_config = dict(run.connector_config or run.ctx.config)
    services = run.services
    return {
        "connector": run.connector,
        "task": run.task_id,
        "connectorClass": connector_config.get(CONNECTOR_CLASS) or java.plugin.class_name,
        "taskClass": java.java_class,
        "taskConfig": dict(run.ctx.config),
        "connectorConfig": connector_config,
        "workerConverters": dict(worker_converters),
        "pluginPath": runtime.plugin_path,
        "discovery": runtime.discovery,
        "offsetsTopic": runtime.offsets_topic,
        "clients": producer_settings(run).java(),
        "offsetFlushMs": int(services.progress.flush_s * 1000),
        "offsetCommitTimeoutMs": OFFSET_COMMIT_TIMEOUT_MS,
        "stopGraceMs": int(services.triggers.stop_grace_s * 1000),
    }


def producer_settings(run: TaskRun) -> KafkaClientSettings:
    """The Java task's Kafka clients (its producer, its offsets reader and writer, a sink's dead letter
    queue): the task producer's settings as sparklink.clients composes them (the worker's `producer.*`,
    the connector's `producer.override.*`), checked against the brokers once."""
    clients = run.services.clients
    return clients.checked(clients.producer(run.client_config), run.client_name("producer"))


@dataclass(eq=False, kw_only=True)
class JvmSourceRun(TaskRun):
    java: JavaSourceTask
    """The run's task (`task`): the Java class the host runs."""
    worker_converters: dict[str, str] = field(default_factory=dict)
    policy: ErrorPolicy
    """The connector's error handling (the JVM applies it to records; the worker, to outages)."""
    counts: ErrorCounts = field(default_factory=ErrorCounts)
    """The worker's converter settings, for a connector that sets none."""

    def start(self) -> JobQuery:
        spec = task_spec(self, self.java, self.worker_converters)
        job = self.java.plugin.runtime.host.start_source(spec, f"{self.connector}-{self.task_id}")
        log.info("task %s-%d: %s runs as a Spark task", self.connector, self.task_id, self.java.java_class)
        # The task finishes the poll in hand, then commits (waiting up to the commit timeout).
        triggers = self.services.triggers
        return JobQuery(job, triggers.stop_grace_s + OFFSET_COMMIT_TIMEOUT_MS / 1000 + 30)

    def _kind_values(self) -> tuple[str, str, int, dict[str, float]]:
        # Polls and writes are counted in the JVM's task; the worker sees only what it measures itself.
        return "source-task-metrics", self.connector, self.task_id, self.measures.source_values()

    def trigger(self) -> str:
        return "LongRunningTask"

    def _spark_query(self) -> None:
        return None  # a Spark job, not a streaming query: no streaming progress to report

    def error_policy(self) -> ErrorPolicy:
        return self.policy

    def error_counts(self) -> ErrorCounts:
        return self.counts

    def fresh_start(self) -> TaskStart:
        return TaskStart(self.task_id, self.java.fresh(), self.ctx.config, self.events, self.connector_config)

    def _finish_batches(self, grace: float) -> None:
        self.stop_batches(0)  # no batches here: the stop itself waits for the task (JobQuery.stop)
