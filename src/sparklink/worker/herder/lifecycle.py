"""Bringing one connector and its tasks to their target state, one status write at a time.

The herder decides *what* should happen (a create, a pause, a KIP-745 plan); this module carries it
out through the worker and records each step in the status store, in Connect's order. Caller: the
herder, holding its lock.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from sparklink.api.connector import ConnectorContext
from sparklink.api.errors import ConnectError
from sparklink.api.states import State, TargetState
from sparklink.api.task_config import CONNECTOR_CLASS
from sparklink.worker.herder import restarts, validation
from sparklink.worker.herder.runner import ConnectorRunner
from sparklink.worker.plugins import Plugins
from sparklink.worker.storage.config import ConfigStore
from sparklink.worker.storage.status import Status, StatusStore
from sparklink.worker.task_events import TaskEvents

log = logging.getLogger(__name__)


@dataclass
class Lifecycle:
    configs: ConfigStore
    statuses: StatusStore
    worker: ConnectorRunner
    worker_id: str
    listener: ContextFactory
    plugins: Plugins
    generation: int = 0

    def put_status(self, name: str, task_id: int | None, state: State, trace: str | None = None) -> None:
        """The connector's status (task_id None) or one task's, with its plugin's version as Connect 4.x records."""
        status = Status(state, self.worker_id, trace, self.generation, self._version(name, task_id))
        # Connect's putSafe for the states an old owner may still write after a rebalance.
        safe = state in (State.UNASSIGNED, State.FAILED)
        if task_id is None:
            self.statuses.put_connector(name, status, safe=safe)
        else:
            self.statuses.put_task(name, task_id, status, safe=safe)

    def _version(self, name: str, task_id: int | None) -> str | None:
        config = self.configs.connector_config(name) or {}
        desc = self.plugins.find(config.get(CONNECTOR_CLASS, ""))
        if desc is None:
            return None
        try:
            return desc.version() if task_id is None else desc.task_version()
        except Exception:  # a plugin whose version() fails still gets its status recorded
            log.debug("version of %s", name, exc_info=True)
            return None

    def launch(self, name: str) -> bool:
        """Start the connector instance unless its target is STOPPED; FAILED if it will not start."""
        config = self.configs.connector_config(name)
        if config is None:
            return False
        if self.configs.target_state(name) is TargetState.STOPPED:
            self.put_status(name, None, State.STOPPED)
            return False
        try:
            self.worker.start_connector(name, config, self.listener.context(name))
        except Exception as exc:
            log.error("connector %s failed to start: %s", name, exc)
            self.put_status(name, None, State.FAILED, trace(exc))
            return False
        return True

    def start_connector(self, name: str, regenerate_tasks: bool = False) -> None:
        """Bring one connector (and its tasks) to the target state recorded in the config store."""
        config = self.configs.connector_config(name)
        if config is None or not self.launch(name):
            return
        target = self.configs.target_state(name)
        task_configs = self.configs.task_configs(name)
        if target is TargetState.PAUSED and not task_configs and not regenerate_tasks:
            self.put_status(name, None, State.PAUSED)
            return
        if regenerate_tasks or not task_configs:
            try:
                task_configs = self.generate_tasks(name, config)
            except Exception as exc:  # the connector failed, not the request (Connect: workerConnector.fail)
                log.error("connector %s failed to generate task configs: %s", name, exc)
                self.put_status(name, None, State.FAILED, trace(exc))
                return
        if target is TargetState.PAUSED:
            for task_id in (None, *range(len(task_configs))):
                self.put_status(name, task_id, State.PAUSED)
            return
        self.put_status(name, None, State.RUNNING)
        self.start_tasks(name, dict(enumerate(task_configs)))

    def generate_tasks(self, name: str, config: Mapping[str, str]) -> list[dict[str, str]]:
        task_configs = self.task_configs_of(name, config)
        old = self.configs.task_configs(name)
        if task_configs != old:
            self.configs.put_task_configs(name, task_configs)
        for task_id in range(len(task_configs), len(old)):
            self.statuses.remove_task(name, task_id)
        return task_configs

    def task_configs_of(self, name: str, config: Mapping[str, str]) -> list[dict[str, str]]:
        """The running connector's task configs, checked against tasks.max (nothing written)."""
        tasks_max = validation.tasks_max(config)
        task_configs = self.worker.connector_task_configs(name, tasks_max)
        if len(task_configs) > tasks_max:
            # Connect's Worker#checkTasksMax: fail the connector, or with tasks.max.enforce=false warn.
            if validation.tasks_max_enforce(config):
                raise TooManyTasksError(name, len(task_configs), tasks_max)
            log.warning(
                "connector %s generated %d task configs, more than tasks.max=%d (tasks.max.enforce=false)",
                name,
                len(task_configs),
                tasks_max,
            )
        return task_configs

    def start_task(self, name: str, task_id: int, task_config: dict[str, str]) -> None:
        # RUNNING goes first: a query that fails on its first batch reports FAILED from Spark's
        # listener thread, and that report must not be overwritten by a late RUNNING.
        self.put_status(name, task_id, State.RUNNING)
        try:
            self.worker.start_task(name, task_id, task_config, self.listener, self.configs.connector_config(name))
        except Exception as exc:
            log.error("task %s-%d failed to start: %s", name, task_id, exc)
            self.put_status(name, task_id, State.FAILED, trace(exc))

    def start_tasks(self, name: str, task_configs: Mapping[int, dict[str, str]]) -> None:
        """Start several tasks of the connector together: all are recorded RUNNING first (as in
        `start_task`), then their queries start side by side; a task that cannot start is FAILED."""
        if len(task_configs) == 1:
            for task_id, task_config in task_configs.items():
                self.start_task(name, task_id, task_config)
            return
        for task_id in task_configs:
            self.put_status(name, task_id, State.RUNNING)
        failures = self.worker.start_tasks(name, task_configs, self.listener, self.configs.connector_config(name))
        for task_id, exc in sorted(failures.items()):
            log.error("task %s-%d failed to start: %s", name, task_id, exc)
            self.put_status(name, task_id, State.FAILED, trace(exc))

    def stop_connector(self, name: str, final_state: State | None) -> None:
        for task_id in range(len(self.configs.task_configs(name))):
            self.worker.stop_task(name, task_id)
            if final_state is not None:
                self.put_status(name, task_id, final_state)
        self.worker.stop_connector(name)
        if final_state is not None:
            self.put_status(name, None, final_state)

    def restart_instance(self, name: str) -> None:
        """Restart the Connector instance only; tasks keep running unless their configs change."""
        self.worker.stop_connector(name)
        if self.launch(name):
            running = self.configs.target_state(name) is TargetState.STARTED
            self.put_status(name, None, State.RUNNING if running else State.PAUSED)

    def execute_restart(self, plan: restarts.RestartPlan) -> None:
        """Carry out a KIP-745 plan (or the wider request that replaced it meanwhile)."""
        name = plan.request.connector
        pending = self.configs.pending_restart(name)
        self.configs.clear_restart_request(name)
        status = self.statuses.connector(name)
        if self.configs.connector_config(name) is None or status is None:
            return
        if pending is not None and pending != plan.request:
            plan = restarts.build_plan(pending, status, self.statuses.tasks(name))
        # The tasks stop together (each waits for its query's current batch), then each is
        # recorded RESTARTING, as Connect does once a task has stopped.
        self.worker.stop_tasks(name, plan.task_ids)
        for task_id in plan.task_ids:
            self.put_status(name, task_id, State.RESTARTING)
        if plan.restart_connector:
            self.put_status(name, None, State.RESTARTING)
            self.restart_instance(name)
        task_configs = self.configs.task_configs(name)
        target = self.configs.target_state(name)
        restarting = {i: task_configs[i] for i in plan.task_ids if i < len(task_configs)}
        if target is TargetState.STARTED:
            self.start_tasks(name, restarting)
            return
        for task_id in restarting:
            self.put_status(name, task_id, target.idle_state)

    def reconfigure(self, name: str) -> None:
        """The connector asked for new task configs: restart the tasks whose config changed."""
        config = self.configs.connector_config(name)
        if config is None or not self.worker.is_running(name):
            return
        if self.configs.target_state(name) is not TargetState.STARTED:
            return
        old = self.configs.task_configs(name)
        try:
            new = self.generate_tasks(name, config)
        except Exception as exc:
            self.put_status(name, None, State.FAILED, trace(exc))
            return
        for task_id in range(len(new), len(old)):
            self.worker.stop_task(name, task_id)
        for task_id, task_config in enumerate(new):
            if task_id >= len(old) or old[task_id] != task_config:
                self.start_task(name, task_id, task_config)


class TooManyTasksError(ConnectError):
    def __init__(self, name: str, generated: int, tasks_max: int) -> None:
        super().__init__(
            f"The connector {name} has generated {generated} tasks, which is greater than {tasks_max}, the maximum "
            "number of tasks it is configured to create. This behaviour should be considered a bug and is "
            "disallowed. If necessary, it can be permitted by reconfiguring the connector with "
            "'tasks.max.enforce' set to false; however, this option will be removed in a future release of "
            "Kafka Connect."
        )


class ContextFactory(TaskEvents, Protocol):
    """The herder: it hears from tasks and hands each connector instance its context."""

    def context(self, name: str) -> ConnectorContext: ...


def trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))
