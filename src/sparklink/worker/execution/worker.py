"""The worker runs what the herder decides: connector instances and their task queries.

Connect's Herder/Worker split: the herder owns the stores and the state machine; the worker
instantiates a connector from its plugin, starts and stops it, asks it for task configs, and starts
or stops each task's run (tasks.py). Nothing here writes a status: the worker reports
task failures to the `TaskEvents` given with each task, and raises when a start fails.
Caller: the herder, which gets its worker at construction.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sparklink.api.connector import Connector, ConnectorContext, Offset, Partition
from sparklink.api.errors import BadRequestError, ConnectError
from sparklink.api.task_config import CONNECTOR_CLASS, TASK_CLASS, TASK_COUNT
from sparklink.worker.execution.run import TaskStart
from sparklink.worker.execution.tasks import TaskRuns
from sparklink.worker.plugins import Plugins
from sparklink.worker.task_events import TaskEvents

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TaskCounters:
    connector: str
    task: int
    records: int
    batches: int


class Worker:
    def __init__(self, plugins: Plugins, tasks: TaskRuns) -> None:
        self.plugins = plugins
        self.tasks = tasks
        self._connectors: dict[str, Connector] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ connectors
    def start_connector(self, name: str, config: Mapping[str, str], context: ConnectorContext) -> None:
        """Instantiate and start the connector; raises what its plugin raises."""
        self.stop_connector(name)
        instance = self.plugins.resolve(config[CONNECTOR_CLASS]).cls()
        instance.context = context
        instance.files = self.tasks.services.files
        instance.start(config)
        with self._lock:
            self._connectors[name] = instance
        log.info("started connector %s", name)

    def stop_connector(self, name: str) -> None:
        with self._lock:
            instance = self._connectors.pop(name, None)
        if instance is None:
            return
        try:
            instance.stop()
        except Exception:
            log.exception("connector %s failed while stopping", name)

    def is_running(self, name: str) -> bool:
        with self._lock:
            return name in self._connectors

    def connector_task_configs(self, name: str, max_tasks: int) -> list[dict[str, str]]:
        """The running connector's task configs, with the keys the runtime adds (the herder checks their count)."""
        with self._lock:
            instance = self._connectors.get(name)
        if instance is None:
            raise ConnectError(f"Connector {name} is not running on this worker")
        generated = instance.task_configs(max_tasks)
        task_class = type(instance).task_class
        extra = {TASK_CLASS: f"{task_class.__module__}.{task_class.__qualname__}", TASK_COUNT: str(len(generated))}
        return [{**task, **extra} for task in generated]

    def connector_alter_offsets(
        self, name: str, config: Mapping[str, str], offsets: Sequence[tuple[Partition, Offset | None]]
    ) -> bool:
        """Ask a fresh instance of the connector about an offsets change (Connect's Worker#modifyConnectorOffsets).

        True if the connector applied it itself; its refusals (ValueError) become 400s.
        """
        cls = self.plugins.resolve(config[CONNECTOR_CLASS]).cls
        try:
            return bool(cls().alter_offsets(config, list(offsets)))
        except NotImplementedError:
            raise ConnectError(
                f"Failed to modify offsets for connector {name} because it doesn't support external "
                "modification of offsets"
            ) from None
        except ValueError as exc:
            raise BadRequestError(str(exc)) from None

    # ------------------------------------------------------------------ tasks
    def start_task(
        self,
        name: str,
        task_id: int,
        config: dict[str, str],
        events: TaskEvents,
        connector_config: Mapping[str, str] | None = None,
    ) -> None:
        """Start the query of the task class the config names (`task.class`); raises if it cannot be built.

        The connector's config carries its converters, transforms and error policy (Connect's Worker#startTask)."""
        task = self.plugins.task_class(config[TASK_CLASS])()
        self.tasks.start_task(name, task_id, task, config, events, connector_config)

    def start_tasks(
        self,
        name: str,
        configs: Mapping[int, dict[str, str]],
        events: TaskEvents,
        connector_config: Mapping[str, str] | None = None,
    ) -> dict[int, Exception]:
        """Start several tasks of one connector together (see `TaskRuns.start_tasks`); returns the
        ones that could not start, with their error."""
        failures: dict[int, Exception] = {}
        starts = []
        for task_id, config in configs.items():
            try:
                task = self.plugins.task_class(config[TASK_CLASS])()
            except Exception as exc:
                failures[task_id] = exc
                continue
            starts.append(TaskStart(task_id, task, config, events, connector_config))
        return {**failures, **self.tasks.start_tasks(name, starts)}

    def stop_task(self, name: str, task_id: int) -> None:
        self.tasks.stop_task(name, task_id)

    def stop_tasks(self, name: str, task_ids: Sequence[int]) -> None:
        self.tasks.stop_tasks(name, task_ids)

    def running(self, name: str, task_id: int) -> bool:
        return self.tasks.running(name, task_id)

    def task_counters(self) -> list[TaskCounters]:
        return [TaskCounters(r.connector, r.task_id, r.records, r.batches) for r in self.tasks.runs()]

    def close(self) -> None:
        """Stop every task query first (they write through the connectors' clients), then the connectors."""
        self.tasks.close()
        with self._lock:
            names = list(self._connectors)
        for name in names:
            self.stop_connector(name)
