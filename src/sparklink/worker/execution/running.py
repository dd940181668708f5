"""One running task's state, and the Python side of its query's callbacks from the JVM.

`RunningTask` is what every kind of run (run.py) shares with Spark's threads: who it is, its query,
its counters, whether it is stopping, how its query ended. The helpers here run on those threads:
the batch function's error capture and the Py4J connection a query's stream thread calls back
through. Callers: the runs (source_run.py, sink_run.py, direct_run.py), direct.ProgressOffsets and
the registry (tasks.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import socket
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from sparklink.api.connector import Task, TaskContext
from sparklink.api.task_config import TaskSettings
from sparklink.worker.execution.task_metrics import RunMeasures
from sparklink.worker.plugins.desc import JavaError
from sparklink.worker.task_events import TaskEvents

log = logging.getLogger(__name__)


class Query(Protocol):
    """What the registry and its watchdog use of a run's query: Spark's StreamingQuery, or a Java source
    task's long-running Spark job (jvm_source_run.JobQuery)."""

    @property
    def id(self) -> object: ...

    @property
    def isActive(self) -> bool: ...

    def stop(self) -> None: ...

    def exception(self) -> object | None: ...


@dataclass(eq=False)
class RunningTask:
    """What one run of a task shares with Spark's threads; each kind of run (run.TaskRun) adds its own."""

    connector: str
    task_id: int
    task: Task
    ctx: TaskContext
    settings: TaskSettings
    events: TaskEvents
    checkpoint: Path
    query: Query | None = None
    records: int = 0
    batches: int = 0
    stopping: bool = False
    terminated: bool = False
    """Its query's termination has been handled: the watchdog does not inspect it again."""
    reported: bool = False
    """Its failure has gone to `events` (once)."""
    error: str = ""
    """The Python trace of the batch that failed its query (`remember_error`)."""
    exception: BaseException | None = None
    """The exception behind `error`, kept to tell a Kafka outage from other failures (outages.py)."""
    callback: object | None = None
    """The Py4J connection its query's stream thread calls Python through (`remember_callback_connection`)."""
    callback_noted: bool = False
    measures: RunMeasures = field(default_factory=RunMeasures)
    """What the run measured of itself, for Connect's task-level metric groups (task_metrics.py)."""
    _in_batch: int = 0
    _batch_done: threading.Condition = field(default_factory=threading.Condition, repr=False)

    @property
    def key(self) -> tuple[str, int]:
        return (self.connector, self.task_id)

    def begin_batch(self) -> bool:
        """Called as a batch reaches Python: False once the task is stopping (the batch must do nothing)."""
        with self._batch_done:
            if self.stopping:
                return False
            self._in_batch += 1
            return True

    def end_batch(self) -> None:
        with self._batch_done:
            self._in_batch -= 1
            self._batch_done.notify_all()

    def stop_batches(self, grace: float) -> bool:
        """Let no batch begin from now on and give the one in hand up to `grace` seconds to finish;
        False if it is still running then (stopping the query will cancel its Spark jobs)."""
        with self._batch_done:
            self.stopping = True
            return self._batch_done.wait_for(lambda: self._in_batch == 0, grace)


def remember_callback_connection(run: RunningTask) -> None:
    """Note the Py4J connection this query's stream thread calls Python through.

    Py4J gives every JVM thread that calls back into Python its own connection, served by its own
    Python thread, and keeps it open after the JVM thread has died: one thread and one socket leaked
    per query started. The batch function runs on that Python thread, so it can name the connection.
    """
    if run.callback_noted:
        return
    from pyspark import SparkContext

    client = getattr(SparkContext._gateway, "_gateway_client", None)
    getter = getattr(client, "get_thread_connection", None)
    run.callback = getter() if getter is not None else None
    run.callback_noted = True


def close_callback_connection(run: RunningTask) -> None:
    """Once the query has stopped (its stream thread is gone), end its connection and so its thread.

    Shutting the socket down makes the serving thread read end-of-stream and close the connection
    itself; closing it from here would wait on the buffer lock that thread holds while it reads.
    """
    connection, run.callback, run.callback_noted = run.callback, None, False
    sock = getattr(connection, "socket", None)
    if sock is not None:
        with contextlib.suppress(OSError):  # already closed by the other side
            sock.shutdown(socket.SHUT_RDWR)


class TaskBatchError(RuntimeError):
    """Fails a task's query with a short message; the full trace stays with the task's status."""


@contextmanager
def remember_error(run: RunningTask) -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        if run.stopping:
            # The batch was cut short by our own stop: its offsets were not recorded, so the next
            # run replays it. Ending quietly lets the query stop without an error trace.
            log.debug("batch of %s-%d interrupted by stop: %s", run.connector, run.task_id, exc)
            return
        summary = "".join(traceback.format_exception_only(exc)).strip()
        # A Java plugin's failure is told with its Java trace (a Java sink task's put, for one).
        run.error = exc.trace if isinstance(exc, JavaError) else summary + "\n" + traceback.format_exc()
        run.exception = exc
        # Spark runs regexes over the failure text of a query; a long Py4J-wrapped trace can overflow
        # the stream thread's stack and kill it before the termination event is sent.
        raise TaskBatchError(summary.splitlines()[0][:500]) from None


def safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:60]


def query_name(connector: str, task_id: int) -> str:
    """Unique per connector and task: a readable prefix plus a digest of the exact name, since Spark
    refuses two active queries of one name (`adv;x` and `adv+x` sanitise alike)."""
    digest = hashlib.sha1(connector.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{safe_name(connector)}-{digest}-{task_id}"
