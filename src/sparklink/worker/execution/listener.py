"""The listener that turns query termination, and the progress of direct queries, into callbacks.

Spark calls it from its listener-bus thread; the registry (tasks.py) hears of terminations, and
direct.ProgressOffsets of the progress and start of the queries it watches. Caller: tasks.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


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
