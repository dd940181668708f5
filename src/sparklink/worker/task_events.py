"""How a running task reports back to the herder: the one task-event Protocol.

The herder implements it and hands it to the worker with each task; execution calls it from Spark's
threads (a batch function, the query listener, the watchdog). It sits below both, so the herder,
which may not import execution (.importlinter), and execution share one declaration.
"""

from __future__ import annotations

from typing import Protocol


class TaskEvents(Protocol):
    def task_failed(self, connector: str, task_id: int, trace: str) -> None:
        """The task's query stopped with an error no automatic restart covers: the task is FAILED with `trace`."""
        ...

    def topics_seen(self, connector: str, task_id: int, topics: list[str]) -> None:
        """The task wrote to or read from these topics (Connect's active topics, KIP-558)."""
        ...
