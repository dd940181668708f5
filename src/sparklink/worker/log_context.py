"""Connect's log context on the worker's Python threads: `[name|task-0] ` before each line a task causes.

Kafka Connect puts the context of the connector or task a thread works for in the `connector.context`
MDC key (`[my-sink|task-0] `, `[my-sink|worker] ` for the connector itself) and its log layout prints
it before the message, so one grep finds a task's story. sparklink does the same on both sides:

- Python: a context variable, set on each thread while it works for a task (a query's start and stop,
  each batch function call, the handling of its query's end) or a connector (its start and stop);
  `install` makes every log record carry it as `connector_context`, which `LOG_FORMAT` prints;
- the Spark JVM: the same text in the `mdc.connector.context` MDC key, which the layout of
  execution/log4j2.properties prints (execution/contexts.py sets it for a task's query).

Callers: the CLI (`install`, `LOG_FORMAT`), the worker and the task registry (`task_context`,
`connector_context`). Setting and reading a context variable costs nanoseconds and no lock.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(connector_context)s%(message)s"
"""The worker's log line: Connect's context right before the message (its layout: `%X{connector.context}%m`)."""
MDC_KEY = "mdc.connector.context"
"""Where the Spark JVM holds the context: Spark copies local properties named `mdc.*` into the MDC of
the executor threads that run a job's tasks, under the same name."""

_CONTEXT: contextvars.ContextVar[str] = contextvars.ContextVar("connector_context", default="")
_installed = False


def task_text(connector: str, task: int) -> str:
    """Connect's context of a task: `[name|task-0] ` (LoggingContext.forTask)."""
    return f"[{connector}|task-{task}] "


def connector_text(connector: str) -> str:
    """Connect's context of a connector's own work: `[name|worker] ` (LoggingContext.forConnector)."""
    return f"[{connector}|worker] "


def current() -> str:
    return _CONTEXT.get()


@contextmanager
def context(text: str) -> Iterator[None]:
    """Log with `text` as the context on this thread until the block ends."""
    token = _CONTEXT.set(text)
    try:
        yield
    finally:
        _CONTEXT.reset(token)


def task_context(connector: str, task: int) -> AbstractContextManager[None]:
    return context(task_text(connector, task))


def connector_context(connector: str) -> AbstractContextManager[None]:
    return context(connector_text(connector))


def install() -> None:
    """Give every log record of the process its thread's context (`connector_context`, empty outside
    any task), whichever handler formats it; idempotent."""
    global _installed
    if _installed:
        return
    _installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = previous(*args, **kwargs)  # type: ignore[arg-type]
        record.connector_context = _CONTEXT.get()
        return record

    logging.setLogRecordFactory(factory)
