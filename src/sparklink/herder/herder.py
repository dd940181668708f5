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
from typing import Any

from sparklink.api.connector import Connector
from sparklink.api.errors import BadRequestError, ConfigValidationError, NotFoundError
from sparklink.execution.worker import Worker
from sparklink.herder import validation
from sparklink.herder.plugins import Plugins
from sparklink.storage import config as cfgstore
from sparklink.storage import status as st
from sparklink.storage.config import ConfigStore
from sparklink.storage.offsets import OffsetStore
from sparklink.storage.status import Status, StatusStore
from sparklink.worker_config import WorkerConfig

log = logging.getLogger(__name__)

TASK_COUNT_KEY = "sparklink.task.count"


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
                from sparklink.api.errors import AlreadyExistsError

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

    # ------------------------------------------------------------------ internals
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
        if config is None:
            return
        target = self.configs.target_state(name)
        if target == cfgstore.STOPPED:
            self._put_connector_status(name, st.STOPPED)
            return
        try:
            desc = self.plugins.resolve(config["connector.class"])
            instance = desc.cls()
            instance.start(config)
        except Exception as exc:
            log.error("connector %s failed to start: %s", name, exc)
            self._put_connector_status(name, st.FAILED, _trace(exc))
            return
        self._instances[name] = instance
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
        try:
            config = self.configs.connector_config(name) or {}
            task = self.plugins.resolve(config["connector.class"]).cls.task_class()
            self.worker.start_task(name, task_id, task, task_config)
        except Exception as exc:
            log.error("task %s-%d failed to start: %s", name, task_id, exc)
            self._put_task_status(name, task_id, st.FAILED, _trace(exc))
            return
        self._put_task_status(name, task_id, st.RUNNING)

    def _stop_tasks(self, name: str, final_state: str | None) -> None:
        for task_id in range(len(self.configs.task_configs(name))):
            if self.worker is not None:
                self.worker.stop_task(name, task_id)
            if final_state is not None:
                self._put_task_status(name, task_id, final_state)

    def _stop_connector(self, name: str, final_state: str | None) -> None:
        self._stop_tasks(name, final_state)
        instance = self._instances.pop(name, None)
        if instance is not None:
            try:
                instance.stop()
            except Exception:
                log.exception("connector %s failed while stopping", name)
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


def _state_entry(status: Status) -> dict[str, Any]:
    entry: dict[str, Any] = {"state": status.state, "worker_id": status.worker_id}
    if status.trace:
        entry["trace"] = status.trace
    return entry


def _trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))


def _java_map(config: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in config.items()) + "}"
