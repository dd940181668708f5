"""One running task, and the Python side of its query's callbacks from the JVM.

`RunningTask` is what tasks.py keeps per task; the helpers here run on Spark's threads: the batch
function's error capture, the Py4J connection a query's stream thread calls back through, and the
listener that turns query termination into a callback. Caller: execution/tasks.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import socket
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sparklink.api.connector import Task, TaskContext
from sparklink.api.task_config import TaskSettings

if TYPE_CHECKING:
    from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger(__name__)


class TaskEvents(Protocol):
    def task_failed(self, connector: str, task_id: int, trace: str) -> None: ...
    def topics_seen(self, connector: str, task_id: int, topics: list[str]) -> None: ...


@dataclass
class RunningTask:
    connector: str
    task_id: int
    task: Task
    ctx: TaskContext
    settings: TaskSettings
    events: TaskEvents
    checkpoint: Path
    query: StreamingQuery | None = None
    records: int = 0
    batches: int = 0
    stopping: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
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
    if "callback" in run.extra:
        return
    from pyspark import SparkContext

    client = getattr(SparkContext._gateway, "_gateway_client", None)
    getter = getattr(client, "get_thread_connection", None)
    run.extra["callback"] = getter() if getter is not None else None


def close_callback_connection(run: RunningTask) -> None:
    """Once the query has stopped (its stream thread is gone), end its connection and so its thread.

    Shutting the socket down makes the serving thread read end-of-stream and close the connection
    itself; closing it from here would wait on the buffer lock that thread holds while it reads.
    """
    connection = run.extra.pop("callback", None)
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
        run.extra["error"] = summary + "\n" + traceback.format_exc()
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


def _make_listener_base() -> type:
    from pyspark.sql.streaming.listener import StreamingQueryListener

    return StreamingQueryListener


class QueryListener(_make_listener_base()):  # type: ignore[misc]
    """Turns query termination, and the progress of watched queries, into callbacks; Spark calls it
    from its listener-bus thread.

    PySpark's own bridge turns every progress event into Python objects first, field by field over
    Py4J, and each field lookup makes the JVM search its classpath: measured, 40% of the Spark JVM's
    CPU with 4 connectors at 1 record/s (one progress event per task per trigger). `_jlistener`
    swaps in a bridge that reads only a terminated query's id and error, and the progress of the
    queries named in `watched` as one JSON string (tasks that write without a Python batch function
    learn their offsets there)."""

    def __init__(
        self,
        on_terminated: Callable[[str, str | None], None],
        on_progress: Callable[[str, str], None] | None = None,
        on_started: Callable[[str], None] | None = None,
    ) -> None:
        self._on_terminated = on_terminated
        self._on_progress = on_progress
        self._on_started = on_started
        self.watched: set[str] = set()

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        pass

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        pass

    @property
    def _jlistener(self) -> Any:
        from pyspark import SparkContext

        bridge = self.__dict__.get("_bridge")
        if bridge is None:
            jvm = SparkContext._jvm
            assert jvm is not None, "the listener is added to a running session"
            bridge = self.__dict__["_bridge"] = jvm.PythonStreamingQueryListenerWrapper(
                _TerminationBridge(self._on_terminated, self._on_progress, self.watched, self._on_started)
            )
        return bridge


class _TerminationBridge:
    """The Py4J proxy Spark's PythonStreamingQueryListenerWrapper calls, one method per event."""

    def __init__(
        self,
        on_terminated: Callable[[str, str | None], None],
        on_progress: Callable[[str, str], None] | None,
        watched: set[str],
        on_started: Callable[[str], None] | None = None,
    ) -> None:
        self._on_terminated = on_terminated
        self._on_progress = on_progress
        self._watched = watched
        self._on_started = on_started

    def onQueryStarted(self, jevent: Any) -> None:
        # Spark delivers this event on the query's own stream thread, so this Python thread serves that
        # thread's Py4J callback connection: a watched query (no batch function) notes it here.
        if not self._watched or self._on_started is None:
            return
        try:
            name = jevent.name()
            if name in self._watched:
                self._on_started(str(name))
        except Exception:  # never let a reporting error kill the query's start
            log.exception("handling a query start event")

    def onQueryProgress(self, jevent: Any) -> None:
        if not self._watched or self._on_progress is None:
            return  # no Py4J call at all while no query is watched
        try:
            progress = jevent.progress()
            name = progress.name()
            if name in self._watched:
                self._on_progress(str(name), str(progress.json()))
        except Exception:  # never let a reporting error kill Spark's listener thread
            log.exception("handling a query progress event")

    def onQueryIdle(self, jevent: Any) -> None:
        pass

    def onQueryTerminated(self, jevent: Any) -> None:
        query_id = "?"
        try:
            query_id = str(jevent.id().toString())
            error = jevent.exception()
            self._on_terminated(query_id, str(error.get()) if error.isDefined() else None)
        except Exception:  # never let a reporting error kill Spark's listener thread
            log.exception("handling termination of query %s", query_id)

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]
