"""What the herder needs from its worker: run connector instances and task queries, report back.

A Protocol, so the herder depends on no execution code: `execution.worker.Worker` satisfies it, and
unit tests of the herder's state machine use a twin that runs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from sparklink.api.connector import ConnectorContext, Offset, Partition
from sparklink.api.metrics import MetricGroup
from sparklink.worker.task_events import TaskEvents


class Counters(Protocol):
    @property
    def connector(self) -> str: ...
    @property
    def task(self) -> int: ...
    @property
    def records(self) -> int: ...
    @property
    def batches(self) -> int: ...


class ConnectorRunner(Protocol):
    def await_warm_up(self) -> None:
        """Return once the worker can start tasks at full speed (bounded; a worker that cannot warm up
        still starts)."""
        ...

    def start_connector(self, name: str, config: Mapping[str, str], context: ConnectorContext) -> None:
        """Instantiate and start the connector; raises what its plugin raises."""
        ...

    def stop_connector(self, name: str) -> None: ...
    def is_running(self, name: str) -> bool: ...
    def connector_task_configs(self, name: str, max_tasks: int) -> list[dict[str, str]]: ...
    def connector_alter_offsets(
        self, name: str, config: Mapping[str, str], offsets: Sequence[tuple[Partition, Offset | None]]
    ) -> bool: ...
    def start_task(
        self,
        name: str,
        task_id: int,
        config: dict[str, str],
        events: TaskEvents,
        connector_config: Mapping[str, str] | None = None,
    ) -> None:
        """Start the query of the task the config describes; raises if its pipeline cannot be built.

        `connector_config` holds the converters, transforms and error policy the task runs with."""
        ...

    def start_tasks(
        self,
        name: str,
        configs: Mapping[int, dict[str, str]],
        events: TaskEvents,
        connector_config: Mapping[str, str] | None = None,
    ) -> dict[int, Exception]:
        """Start several tasks of one connector together; the ones that could not start, with why."""
        ...

    def stop_task(self, name: str, task_id: int) -> None: ...
    def stop_tasks(self, name: str, task_ids: Sequence[int]) -> None:
        """Stop several tasks of one connector together (their waits for a current batch overlap)."""
        ...

    def running(self, name: str, task_id: int) -> bool: ...
    def task_counters(self) -> Sequence[Counters]: ...
    def metric_groups(self, owned: Sequence[tuple[str, int, Mapping[str, str]]]) -> Sequence[MetricGroup]:
        """What the runner measured, read now; `owned` are the tasks (connector, id, config) assigned to
        this worker, running or not (a paused sink task's lag is still read)."""
        ...

    def close(self) -> None: ...
