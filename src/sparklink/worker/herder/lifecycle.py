"""Bringing one connector and its tasks to their target state, one status write at a time.

The herder decides *what* should happen (a create, a pause, a KIP-745 plan); this module carries it
out through the worker and records each step in the status store, in Connect's order. Caller: the
herder, holding its lock.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from sparklink.api.connector import ConnectorContext
from sparklink.api.errors import ConnectError
from sparklink.api.states import State, TargetState
from sparklink.api.task_config import CONNECTOR_CLASS
from sparklink.clients.secrets import redact, secret_values
from sparklink.worker import log_context, redaction
from sparklink.worker.herder import restarts, validation
from sparklink.worker.herder.runner import ConnectorRunner
from sparklink.worker.plugins import Plugins
from sparklink.worker.plugins.desc import JavaError
from sparklink.worker.providers.references import reapply
from sparklink.worker.providers.registry import ConfigProviders, UnresolvedError
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
    providers: ConfigProviders = field(default_factory=ConfigProviders)

    def put_status(self, name: str, task_id: int | None, state: State, trace: str | None = None) -> None:
        """The connector's status (task_id None) or one task's, with its plugin's version as Connect 4.x records.
        A trace never carries a secret the worker resolved."""
        trace = redaction.scrub(trace) if trace else trace
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

    def resolved(self, name: str, config: Mapping[str, str], task_id: int | None = None) -> dict[str, str]:
        """`config` with its placeholders resolved; its secret values are kept out of every later log line."""
        try:
            values = self.providers.resolve(config)
        except UnresolvedError as exc:
            raise UnresolvedConfigError(name, task_id, exc) from None
        out = {k: v for k, v in values.items() if v is not None}
        redaction.remember(secret_values(out, validation.declared_types(self.plugins, config)))
        return out

    def launch(self, name: str) -> bool:
        """Start the connector instance unless its target is STOPPED; FAILED if it will not start."""
        config = self.configs.connector_config(name)
        if config is None:
            return False
        if self.configs.target_state(name) is TargetState.STOPPED:
            self.put_status(name, None, State.STOPPED)
            return False
        types = validation.declared_types(self.plugins, config)
        with log_context.connector_context(name):  # Connect logs the connector's config in its context
            log.info("starting connector %s with config %s", name, redact(config, types))
        for undeclared in self.providers.undeclared(config):
            log.warning(
                "connector %s: %s names a config provider this worker does not declare (config.providers); "
                "it is passed on as written",
                name,
                undeclared,
            )
        try:
            self.worker.start_connector(name, self.resolved(name, config), self.listener.context(name))
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
        """The running connector's task configs, checked against tasks.max, with the connector config's
        placeholders put back (nothing written)."""
        resolved = self.resolved(name, config)
        tasks_max = validation.tasks_max(resolved)
        task_configs = self.worker.connector_task_configs(name, tasks_max)
        if len(task_configs) > tasks_max:
            # Connect's Worker#checkTasksMax: fail the connector, or with tasks.max.enforce=false warn.
            if validation.tasks_max_enforce(resolved):
                raise TooManyTasksError(name, len(task_configs), tasks_max)
            log.warning(
                "connector %s generated %d task configs, more than tasks.max=%d (tasks.max.enforce=false)",
                name,
                len(task_configs),
                tasks_max,
            )
        return reapply(config, task_configs)

    def start_task(self, name: str, task_id: int, task_config: dict[str, str]) -> None:
        # RUNNING goes first: a query that fails on its first batch reports FAILED from Spark's
        # listener thread, and that report must not be overwritten by a late RUNNING.
        self.put_status(name, task_id, State.RUNNING)
        try:
            resolved, connector_config = self._resolved_task(name, task_id, task_config)
            self.worker.start_task(name, task_id, resolved, self.listener, connector_config)
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
        failures: dict[int, Exception] = {}
        resolved: dict[int, dict[str, str]] = {}
        connector_config: dict[str, str] | None = None
        for task_id, task_config in task_configs.items():
            try:
                resolved[task_id], connector_config = self._resolved_task(name, task_id, task_config)
            except UnresolvedConfigError as unresolved:
                failures[task_id] = unresolved
        if resolved:
            failures.update(self.worker.start_tasks(name, resolved, self.listener, connector_config))
        for task_id, exc in sorted(failures.items()):
            log.error("task %s-%d failed to start: %s", name, task_id, exc)
            self.put_status(name, task_id, State.FAILED, trace(exc))

    def _resolved_task(
        self, name: str, task_id: int, task_config: Mapping[str, str]
    ) -> tuple[dict[str, str], dict[str, str] | None]:
        """A task's config and its connector's (converters, transforms, client overrides), resolved."""
        connector_config = self.configs.connector_config(name)
        resolved_connector = None if connector_config is None else self.resolved(name, connector_config, task_id)
        return self.resolved(name, task_config, task_id), resolved_connector

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


class UnresolvedConfigError(ConnectError):
    """A connector's or task's config holds placeholders its providers could not resolve."""

    def __init__(self, name: str, task_id: int | None, error: UnresolvedError) -> None:
        what = f"connector {name}" if task_id is None else f"task {name}-{task_id}"
        super().__init__(f"The config of {what} could not be resolved: {error}")


class ContextFactory(TaskEvents, Protocol):
    """The herder: it hears from tasks and hands each connector instance its context."""

    def context(self, name: str) -> ConnectorContext: ...


def trace(exc: BaseException) -> str:
    """A FAILED status's trace: a Java plugin's own Java trace, else the Python one."""
    if isinstance(exc, JavaError):
        return exc.trace
    return "".join(traceback.format_exception(exc))
