"""A task's log context on the Spark side: every JVM thread that works for the task's query logs it.

Python threads get the context from sparklink.worker.log_context. In the Spark JVM three kinds of
thread work for a task's query, and each gets Connect's `[name|task-0] ` in the MDC key
`mdc.connector.context` (printed by the layout in log4j2.properties):

- the executor threads that run its Spark tasks: Spark copies a job's local properties named `mdc.*`
  into their MDC (Executor.setMDCForTask, Spark 4.2), and a query's jobs take the local properties of
  the thread that started the query, so the property is set around `start()`;
- the query's stream thread, and the threads it makes (its Kafka admin client's): the worker's JVM
  keeps log4j's context map inheritable (`-Dlog4j2.isThreadContextMapInheritable=true`, spark.py),
  so the MDC put on the starting thread around `start()` is copied into the stream thread as it is made;
- the starting thread itself (a Py4J thread serving a Python thread, reused for other work): both are
  removed from it as soon as the query has started.
Caller: the registry (tasks.py), around a run's start.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sparklink.worker import log_context

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


@contextmanager
def starting_query(spark: SparkSession, connector: str, task: int) -> Iterator[None]:
    """Start a task's query inside this block: its Python and JVM threads log the task's context."""
    text = log_context.task_text(connector, task)
    with log_context.context(text):
        mdc = _mdc(spark)
        spark.sparkContext.setLocalProperty(log_context.MDC_KEY, text)
        if mdc is not None:
            mdc.put(log_context.MDC_KEY, text)
        try:
            yield
        finally:
            spark.sparkContext.setLocalProperty(log_context.MDC_KEY, None)  # type: ignore[arg-type]
            if mdc is not None:
                mdc.remove(log_context.MDC_KEY)


def _mdc(spark: SparkSession) -> Any:
    try:
        return spark._jvm.org.slf4j.MDC  # type: ignore[union-attr,no-any-return]
    except Exception:  # a session without a JVM of its own (Spark Connect): executors still get the property
        log.debug("no slf4j MDC in the session's JVM", exc_info=True)
        return None
