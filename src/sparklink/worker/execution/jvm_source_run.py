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
from dataclasses import dataclass
from typing import Any

from sparklink.worker.execution.jvm_run import OFFSET_COMMIT_TIMEOUT_MS, JvmRun
from sparklink.worker.plugins.java import JavaSourceTask
from sparklink.worker.plugins.jvm_host import java_call

log = logging.getLogger(__name__)


class JobQuery:
    """A source task's Spark job, as the registry and its watchdog see a run's query."""

    def __init__(self, job: Any, stop_wait_s: float, task: str = "") -> None:
        self._job = job
        self._stop_wait_s = stop_wait_s
        self._task = task
        self._placed: str | None = None

    @property
    def id(self) -> str:
        return str(self._job.id())

    @property
    def isActive(self) -> bool:
        active = bool(self._job.isActive())
        if active:
            self._note_placement()
        return active

    def _note_placement(self) -> None:
        """Log where the task runs once Spark has placed it, and again if it moves (Spark re-runs the task of
        a lost executor elsewhere). The watchdog's poll of `isActive` is the worker's regular look at the job,
        so this is where a user learns which executor's log holds the task's own (the plugin's) log lines."""
        where = self.executor()
        if where is None or where == self._placed:
            return
        self._placed = where
        if where == "driver":
            log.info("task %s runs in the Spark driver's JVM (a local master)", self._task)
        else:
            log.info("task %s runs on Spark executor %s", self._task, where)

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


@dataclass(eq=False, kw_only=True)
class JvmSourceRun(JvmRun[JavaSourceTask]):
    def start(self) -> JobQuery:
        spec = self.task_spec()
        job = self.java.plugin.runtime.host.start_source(spec, f"{self.connector}-{self.task_id}")
        log.info("task %s-%d: %s runs as a Spark task", self.connector, self.task_id, self.java.java_class)
        # The task finishes the poll in hand, then commits (waiting up to the commit timeout).
        triggers = self.services.triggers
        stop_wait_s = triggers.stop_grace_s + OFFSET_COMMIT_TIMEOUT_MS / 1000 + 30
        return JobQuery(job, stop_wait_s, f"{self.connector}-{self.task_id}")

    def _kind_values(self) -> tuple[str, str, int, dict[str, float]]:
        # Polls and writes are counted in the JVM's task; the worker sees only what it measures itself.
        return "source-task-metrics", self.connector, self.task_id, self.measures.source_values()

    def trigger(self) -> str:
        return "LongRunningTask"

    def _spark_query(self) -> None:
        return None  # a Spark job, not a streaming query: no streaming progress to report

    def _finish_batches(self, grace: float) -> None:
        self.stop_batches(0)  # no batches here: the stop itself waits for the task (JobQuery.stop)
