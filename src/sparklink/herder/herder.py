"""The herder: every action on connectors goes through here; REST and CLI are thin wrappers.

It keeps the three stores (config, status, offsets) and the worker (task queries) in step. One worker,
one herder: connector instances run in this process and each task is a Spark query started by the
worker. A restarted herder rebuilds everything from the stores' topics.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sparklink.api.connector import Connector
from sparklink.api.errors import (
    AlreadyExistsError,
    BadRequestError,
    ConfigValidationError,
    ForbiddenError,
    NotFoundError,
)
from sparklink.execution import kafka_io
from sparklink.execution.worker import Worker
from sparklink.herder import sink_offsets, source_offsets, validation
from sparklink.herder.plugins import Plugins
from sparklink.herder.restarts import RestartPlan, build_plan
from sparklink.storage import config as cfgstore
from sparklink.storage import status as st
from sparklink.storage.config import ConfigStore, RestartRequest
from sparklink.storage.offsets import OffsetStore
from sparklink.storage.status import Status, StatusStore
from sparklink.worker_config import WorkerConfig

log = logging.getLogger(__name__)

TASK_COUNT_KEY = "sparklink.task.count"
STOPPED_REQUIRED = (
    "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the "
    "specified connector by issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint"
)


class Herder:
    def __init__(
        self,
        config: WorkerConfig,
        configs: ConfigStore,
        statuses: StatusStore,
        offsets: OffsetStore,
        worker: Worker | None,
        plugins: Plugins | None = None,
        cluster_id: str = "",
    ) -> None:
        self.config = config
        self.configs = configs
        self.statuses = statuses
        self.offsets = offsets
        self.worker = worker
        self.plugins = plugins or Plugins()
        self.cluster_id = cluster_id
        self.worker_id = config.worker_id
        self.generation = 0
        self.ready = False
        self._lock = threading.RLock()
        self._instances: dict[str, Connector] = {}
        # Asynchronous work (KIP-745 restarts, task reconfiguration) runs here, one item at a time.
        self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="herder")

    def attach_worker(self, worker: Worker) -> None:
        self.worker = worker

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Replay the stores and bring every connector to its target state."""
        self.configs.start()
        self.statuses.start()
        self.offsets.start()
        for name in self.configs.connectors():
            self.configs.clear_restart_request(name)  # requests replayed from the log were handled
        for name in self.configs.connectors():
            self._start_connector(name)
        self.ready = True

    def stop(self) -> None:
        self.ready = False
        self._background.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            for name in list(self._instances):
                self._stop_connector(name, final_state=st.UNASSIGNED)
        if self.worker is not None:
            self.worker.close()
        self.configs.stop()
        self.statuses.stop()
        self.offsets.stop()

    # ------------------------------------------------------------------ reads
    def connectors(self) -> list[str]:
        return self.configs.connectors()

    def connector_config(self, name: str) -> dict[str, str]:
        config = self.configs.connector_config(name)
        if config is None:
            raise NotFoundError(f"Connector {name} not found")
        return config

    def connector_info(self, name: str) -> dict[str, Any]:
        config = self.connector_config(name)
        tasks = self.configs.task_configs(name)
        return {
            "name": name,
            "config": config,
            "tasks": [{"connector": name, "task": i} for i in range(len(tasks))],
            "type": self._type_of(config),
        }

    def connector_status(self, name: str) -> dict[str, Any]:
        status = self.statuses.connector(name)
        config = self.configs.connector_config(name)
        if status is None or config is None:
            raise NotFoundError(f"No status found for connector {name}")
        tasks = self.statuses.tasks(name)
        return {
            "name": name,
            "connector": _state_entry(status),
            "tasks": [{"id": i, **_state_entry(s)} for i, s in sorted(tasks.items())],
            "type": self._type_of(config),
        }

    def task_status(self, name: str, task_id: int) -> dict[str, Any]:
        status = self.statuses.task(name, task_id)
        if status is None or self.configs.connector_config(name) is None:
            raise NotFoundError(f"No status found for task {name}-{task_id}")
        return {"id": task_id, **_state_entry(status)}

    def task_configs(self, name: str) -> list[dict[str, str]]:
        self.connector_config(name)
        return self.configs.task_configs(name)

    # ------------------------------------------------------------------ config changes
    def create_connector(self, name: str, config: dict[str, str], initial_state: str | None = None) -> dict[str, Any]:
        with self._lock:
            if self.configs.connector_config(name) is not None:
                raise AlreadyExistsError(f"Connector {name} already exists")
            config = self._validated(name, config)
            target = {"RUNNING": cfgstore.STARTED, None: None}.get(initial_state, initial_state)
            self.configs.put_connector_config(name, config, target)
            self._start_connector(name)
            return self.connector_info(name)

    def put_connector_config(self, name: str, config: dict[str, str]) -> tuple[bool, dict[str, Any]]:
        """Create or replace; returns (created, info)."""
        with self._lock:
            created = self.configs.connector_config(name) is None
            config = self._validated(name, config)
            if not created:
                self._stop_connector(name, final_state=None)
            self.configs.put_connector_config(name, config)
            self._start_connector(name, regenerate_tasks=True)
            return created, self.connector_info(name)

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> dict[str, Any]:
        with self._lock:
            current = self.connector_config(name)
            merged = {k: v for k, v in {**current, **patch}.items() if v is not None}
            merged = {k: str(v) for k, v in merged.items()}
            return self.put_connector_config(name, merged)[1]

    def delete_connector(self, name: str) -> None:
        with self._lock:
            self.connector_config(name)
            self._stop_connector(name, final_state=None)
            self.configs.remove_connector(name)
            self.statuses.remove_connector(name)
            self.statuses.remove_topics(name)

    def validate(self, config: dict[str, str]) -> dict[str, list[str]]:
        return validation.validate(self.plugins, config)

    # ------------------------------------------------------------------ target states
    def pause_connector(self, name: str) -> None:
        with self._lock:
            self._require(name, f"Unknown connector {name}")
            if self.configs.target_state(name) == cfgstore.PAUSED:
                return
            self._stop_connector(name, final_state=None)
            self.configs.put_target_state(name, cfgstore.PAUSED)
            # From STOPPED, pausing regenerates the tasks (paused) like Connect does.
            self._start_connector(name, regenerate_tasks=not self.configs.task_configs(name))

    def resume_connector(self, name: str) -> None:
        with self._lock:
            self._require(name, f"Unknown connector {name}")
            if self.configs.target_state(name) == cfgstore.STARTED and name in self._instances:
                return
            self._stop_connector(name, final_state=None)
            self.configs.put_target_state(name, cfgstore.STARTED)
            self._start_connector(name)

    def stop_connector(self, name: str) -> None:
        """KIP-875 STOPPED: no tasks at all (empty task configs), the connector instance shut down."""
        with self._lock:
            self._require(name, f"Unknown connector {name}")
            old_tasks = len(self.configs.task_configs(name))
            self._stop_connector(name, final_state=None)
            if old_tasks:
                self.configs.put_task_configs(name, [])
            self.configs.put_target_state(name, cfgstore.STOPPED)
            for task_id in self.statuses.tasks(name):
                self.statuses.remove_task(name, task_id)
            self._put_connector_status(name, st.STOPPED)

    # ------------------------------------------------------------------ restarts (KIP-745)
    def restart_connector(self, name: str, include_tasks: bool, only_failed: bool) -> dict[str, Any] | None:
        """Connector only and not only-failed: restart now, return None (204). Otherwise record the
        request, run it in the background and return the plan with RESTARTING marked (202)."""
        self._require(name, f"Unknown connector: {name}")
        if not include_tasks and not only_failed:
            with self._lock:
                self._restart_instance(name)
            return None
        connector = self.statuses.connector(name)
        if connector is None:
            raise NotFoundError(f"Status for connector {name} not found")
        request = RestartRequest(name, include_tasks, only_failed)
        plan = build_plan(request, connector, self.statuses.tasks(name))
        self.configs.put_restart_request(request)
        body = self.connector_status(name)
        if plan.restart_connector:
            body["connector"]["state"] = st.RESTARTING
        for task in body["tasks"]:
            if task["id"] in plan.task_ids:
                task["state"] = st.RESTARTING
        if not plan.is_noop:
            self._background.submit(self._execute_restart, plan)
        else:
            self.configs.clear_restart_request(name)
        return body

    def restart_task(self, name: str, task_id: int) -> None:
        with self._lock:
            self._require(name, f"Unknown connector: {name}")
            task_configs = self.configs.task_configs(name)
            if not 0 <= task_id < len(task_configs):
                raise NotFoundError(f"Unknown task: {name}-{task_id}")
            if self.worker is not None:
                self.worker.stop_task(name, task_id)
            self._start_task(name, task_id, task_configs[task_id])

    def _execute_restart(self, plan: RestartPlan) -> None:
        name = plan.request.connector
        try:
            with self._lock:
                pending = self.configs.pending_restart(name)
                self.configs.clear_restart_request(name)
                if self.configs.connector_config(name) is None:
                    return
                if pending is not None and pending != plan.request:
                    # A wider request arrived meanwhile and replaced ours: plan that one instead.
                    status = self.statuses.connector(name)
                    if status is not None:
                        plan = build_plan(pending, status, self.statuses.tasks(name))
                for task_id in plan.task_ids:
                    if self.worker is not None:
                        self.worker.stop_task(name, task_id)
                    self._put_task_status(name, task_id, st.RESTARTING)
                if plan.restart_connector:
                    self._put_connector_status(name, st.RESTARTING)
                    self._restart_instance(name)
                task_configs = self.configs.task_configs(name)
                running = self.configs.target_state(name) == cfgstore.STARTED
                for task_id in plan.task_ids:
                    if task_id < len(task_configs):
                        if running:
                            self._start_task(name, task_id, task_configs[task_id])
                        else:
                            self._put_task_status(name, task_id, _paused_or_stopped(self.configs.target_state(name)))
        except Exception:
            log.exception("restart of connector %s failed", name)

    def _restart_instance(self, name: str) -> None:
        """Restart the Connector instance only; tasks keep running unless their configs change."""
        self._stop_instance(name)
        if self._launch_instance(name) is not None:
            running = self.configs.target_state(name) == cfgstore.STARTED
            self._put_connector_status(name, st.RUNNING if running else st.PAUSED)

    # ------------------------------------------------------------------ offsets (KIP-875)
    def connector_offsets(self, name: str) -> list[dict[str, Any]]:
        config = self.connector_config(name)
        if self._type_of(config) == "sink":
            return sink_offsets.read(self.config.bootstrap_servers, kafka_io.sink_group(name, config))
        return [{"partition": p, "offset": o} for p, o in self.offsets.get(name)]

    def alter_offsets(self, name: str, offsets: list[tuple[Any, Any]]) -> str:
        return self._modify_offsets(name, offsets)

    def reset_offsets(self, name: str) -> str:
        return self._modify_offsets(name, None)

    def _modify_offsets(self, name: str, offsets: list[tuple[Any, Any]] | None) -> str:
        verb = "altered" if offsets is not None else "reset"
        with self._lock:
            config = self.connector_config(name)
            if self.configs.target_state(name) != cfgstore.STOPPED or self.configs.task_configs(name):
                raise BadRequestError(STOPPED_REQUIRED.format(name=name))
            desc = self.plugins.resolve(config["connector.class"])
            if desc.type == "sink":
                group = kafka_io.sink_group(name, config)
                if offsets is None:
                    current = sink_offsets.read(self.config.bootstrap_servers, group)
                    handled = source_offsets.connector_alter(
                        desc.cls, name, config, [(o["partition"], None) for o in current]
                    )
                    sink_offsets.reset(self.config.bootstrap_servers, name, group)
                else:
                    changes = sink_offsets.parse(offsets)
                    handled = source_offsets.connector_alter(desc.cls, name, config, offsets)
                    sink_offsets.alter(self.config.bootstrap_servers, name, group, changes)
            else:
                if offsets is None:
                    offsets = [(p, None) for p, _ in self.offsets.get(name)]
                for partition, offset in offsets:
                    source_offsets.check(partition, offset)
                handled = source_offsets.connector_alter(desc.cls, name, config, offsets)
                self.offsets.put(name, offsets)
        return source_offsets.success_message(verb, handled)

    # ------------------------------------------------------------------ active topics (KIP-558)
    def active_topics(self, name: str) -> list[str]:
        if not self.config.topic_tracking_enable:
            raise ForbiddenError("Topic tracking is disabled.")
        return self.statuses.topics(name)

    def reset_active_topics(self, name: str) -> None:
        if not self.config.topic_tracking_enable:
            raise ForbiddenError("Topic tracking is disabled.")
        if not self.config.topic_tracking_allow_reset:
            raise ForbiddenError("Topic tracking reset is disabled.")
        self.statuses.remove_topics(name)

    # ------------------------------------------------------------------ connector context
    def request_task_reconfiguration(self, name: str) -> None:
        self._background.submit(self._reconfigure, name)

    def connector_failed(self, name: str, error: Exception) -> None:
        self._put_connector_status(name, st.FAILED, _trace(error))

    def _reconfigure(self, name: str) -> None:
        with self._lock:
            instance = self._instances.get(name)
            config = self.configs.connector_config(name)
            if instance is None or config is None or self.configs.target_state(name) != cfgstore.STARTED:
                return
            old = self.configs.task_configs(name)
            try:
                new = self._generate_tasks(name, instance, config)
            except Exception as exc:
                self._put_connector_status(name, st.FAILED, _trace(exc))
                return
            for task_id in range(len(new), len(old)):
                if self.worker is not None:
                    self.worker.stop_task(name, task_id)
            for task_id, task_config in enumerate(new):
                if task_id >= len(old) or old[task_id] != task_config:
                    self._start_task(name, task_id, task_config)

    # ------------------------------------------------------------------ internals
    def _require(self, name: str, message: str) -> dict[str, str]:
        config = self.configs.connector_config(name)
        if config is None:
            raise NotFoundError(message)
        return config

    def _launch_instance(self, name: str) -> Connector | None:
        """Start the Connector instance unless the target state is STOPPED; FAILED if it will not start."""
        config = self.configs.connector_config(name)
        if config is None:
            return None
        if self.configs.target_state(name) == cfgstore.STOPPED:
            self._put_connector_status(name, st.STOPPED)
            return None
        try:
            instance = self.plugins.resolve(config["connector.class"]).cls()
            instance.context = _Context(self, name)
            instance.start(config)
        except Exception as exc:
            log.error("connector %s failed to start: %s", name, exc)
            self._put_connector_status(name, st.FAILED, _trace(exc))
            return None
        self._instances[name] = instance
        return instance

    def _stop_instance(self, name: str) -> None:
        instance = self._instances.pop(name, None)
        if instance is not None:
            try:
                instance.stop()
            except Exception:
                log.exception("connector %s failed while stopping", name)

    def _validated(self, name: str, config: dict[str, str]) -> dict[str, str]:
        config = {str(k): "" if v is None else str(v) for k, v in config.items()}
        if "name" in config and config["name"] != name:
            raise BadRequestError(
                f"Connector name configuration ({config['name']}) doesn't match connector name in the URL ({name})"
            )
        config["name"] = name
        if not config.get("connector.class"):
            raise BadRequestError(f"Connector config {_java_map(config)} contains no connector type")
        self.plugins.resolve(config["connector.class"])
        errors = {k: v for k, v in self.validate(config).items() if v}
        if errors:
            lines = [e for errs in errors.values() for e in errs]
            raise ConfigValidationError(
                f"Connector configuration is invalid and contains the following {len(lines)} error(s):\n"
                + "\n".join(lines)
                + "\nYou can also find the above list of errors at the endpoint "
                "`/connector-plugins/{connectorType}/config/validate`",
                errors,
            )
        return config

    def _type_of(self, config: Mapping[str, str]) -> str:
        desc = self.plugins.find(config.get("connector.class", ""))
        return desc.type if desc else "unknown"

    def _start_connector(self, name: str, regenerate_tasks: bool = False) -> None:
        """Bring one connector (and its tasks) to the target state recorded in the config store."""
        config = self.configs.connector_config(name)
        instance = self._launch_instance(name)
        if config is None or instance is None:
            return
        target = self.configs.target_state(name)
        task_configs = self.configs.task_configs(name)
        if target == cfgstore.PAUSED and not task_configs and not regenerate_tasks:
            self._put_connector_status(name, st.PAUSED)
            return
        if regenerate_tasks or not task_configs:
            task_configs = self._generate_tasks(name, instance, config)
        if target == cfgstore.PAUSED:
            self._put_connector_status(name, st.PAUSED)
            for i in range(len(task_configs)):
                self._put_task_status(name, i, st.PAUSED)
            return
        self._put_connector_status(name, st.RUNNING)
        for i, task_config in enumerate(task_configs):
            self._start_task(name, i, task_config)

    def _generate_tasks(self, name: str, instance: Connector, config: Mapping[str, str]) -> list[dict[str, str]]:
        max_tasks = int(config.get("tasks.max", "1"))
        generated = instance.task_configs(max_tasks)[:max_tasks]
        task_class = type(instance).task_class
        task_configs = [
            {
                **t,
                "task.class": f"{task_class.__module__}.{task_class.__qualname__}",
                TASK_COUNT_KEY: str(len(generated)),
            }
            for t in generated
        ]
        old = len(self.configs.task_configs(name))
        if task_configs != self.configs.task_configs(name):
            self.configs.put_task_configs(name, task_configs)
        for i in range(len(task_configs), old):
            self.statuses.remove_task(name, i)
        return task_configs

    def _start_task(self, name: str, task_id: int, task_config: dict[str, str]) -> None:
        if self.worker is None:
            self._put_task_status(name, task_id, st.UNASSIGNED)
            return
        # RUNNING goes first: a query that fails on its first batch reports FAILED from Spark's
        # listener thread, and that report must not be overwritten by a late RUNNING.
        self._put_task_status(name, task_id, st.RUNNING)
        try:
            config = self.configs.connector_config(name) or {}
            task = self.plugins.resolve(config["connector.class"]).cls.task_class()
            self.worker.start_task(name, task_id, task, task_config, config)
        except Exception as exc:
            log.error("task %s-%d failed to start: %s", name, task_id, exc)
            self._put_task_status(name, task_id, st.FAILED, _trace(exc))

    def _stop_tasks(self, name: str, final_state: str | None) -> None:
        for task_id in range(len(self.configs.task_configs(name))):
            if self.worker is not None:
                self.worker.stop_task(name, task_id)
            if final_state is not None:
                self._put_task_status(name, task_id, final_state)

    def _stop_connector(self, name: str, final_state: str | None) -> None:
        self._stop_tasks(name, final_state)
        self._stop_instance(name)
        if final_state is not None:
            self._put_connector_status(name, final_state)

    def _put_connector_status(self, name: str, state: str, trace: str | None = None) -> None:
        self.statuses.put_connector(name, Status(state, self.worker_id, trace, self.generation))

    def _put_task_status(self, name: str, task_id: int, state: str, trace: str | None = None) -> None:
        self.statuses.put_task(name, task_id, Status(state, self.worker_id, trace, self.generation))

    # ------------------------------------------------------------------ TaskEvents (from the worker)
    def task_failed(self, connector: str, task_id: int, trace: str) -> None:
        if self.configs.connector_config(connector) is None:
            return
        self._put_task_status(connector, task_id, st.FAILED, trace)

    def topics_seen(self, connector: str, task_id: int, topics: list[str]) -> None:
        if not self.config.topic_tracking_enable:
            return
        for topic in topics:
            if not self.statuses.has_topic(connector, topic):
                self.statuses.put_topic(connector, topic, task_id)


class _Context:
    """The ConnectorContext a connector instance gets; calls back into the herder."""

    def __init__(self, herder: Herder, name: str) -> None:
        self._herder = herder
        self._name = name

    def request_task_reconfiguration(self) -> None:
        self._herder.request_task_reconfiguration(self._name)

    def raise_error(self, error: Exception) -> None:
        self._herder.connector_failed(self._name, error)


def _paused_or_stopped(target: str) -> str:
    return st.PAUSED if target == cfgstore.PAUSED else st.STOPPED


def _state_entry(status: Status) -> dict[str, Any]:
    entry: dict[str, Any] = {"state": status.state, "worker_id": status.worker_id}
    if status.trace:
        entry["trace"] = status.trace
    return entry


def _trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))


def _java_map(config: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in config.items()) + "}"
