"""The standalone herder: decides what every connector should be doing and keeps the stores in step.

It owns the state machine (target states, statuses, task configs, KIP-745 restarts, KIP-875 offsets)
and tells its worker (execution/worker.py) which connector instances and task queries to run; it
never touches Spark itself. One worker, one herder; a restarted herder rebuilds everything from the
stores' topics. Callers: the REST API and the CLI through the `Herder` Protocol (model.py), the
worker through `TaskEvents`, and connector instances through their `ConnectorContext`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from sparklink.api.connector import ConnectorContext
from sparklink.api.errors import AlreadyExistsError, BadRequestError, NotFoundError
from sparklink.api.files import FileAccess
from sparklink.api.metrics import MetricGroup
from sparklink.api.states import State, TargetState
from sparklink.api.task_config import CONNECTOR_CLASS, sink_group
from sparklink.clients.connect import OverridePolicy
from sparklink.worker.config import WorkerConfig
from sparklink.worker.herder import metrics, offsets, restarts, validation
from sparklink.worker.herder.group_checks import GroupChecks
from sparklink.worker.herder.lifecycle import Lifecycle, trace
from sparklink.worker.herder.model import (
    ConfigInfos,
    ConfigKeyInfo,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorState,
    ConnectorStateInfo,
    ConnectorTaskId,
    ConnectorType,
    PluginInfo,
    RawConfig,
    TaskInfo,
    TaskMetrics,
    TaskState,
    config_key_info,
)
from sparklink.worker.herder.runner import ConnectorRunner
from sparklink.worker.plugins import Plugins
from sparklink.worker.providers.registry import ConfigProviders
from sparklink.worker.request_signing import RequestSignature
from sparklink.worker.storage.config import ConfigStore, RestartRequest
from sparklink.worker.storage.group_offsets import GroupOffsetStore
from sparklink.worker.storage.offsets import OffsetStore
from sparklink.worker.storage.status import Status, StatusStore
from sparklink.worker.transforms import catalog as transform_catalog

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class Stores:
    """The herder's four stores; they never import each other."""

    configs: ConfigStore
    statuses: StatusStore
    offsets: OffsetStore
    group_offsets: GroupOffsetStore


class StandaloneHerder:
    def __init__(
        self,
        config: WorkerConfig,
        stores: Stores,
        worker: ConnectorRunner,
        plugins: Plugins,
        cluster_id: str = "",
        files: FileAccess | None = None,
    ) -> None:
        self.config = config
        # The file rules plugins validate with (api/files.py); the assembly adds what Spark keeps.
        self.files = files or config.file_access()
        self.configs = stores.configs
        self.statuses = stores.statuses
        self.offsets = stores.offsets
        self.group_offsets = stores.group_offsets
        self.worker = worker
        self._plugins = plugins
        self._cluster_id = cluster_id
        # connector.client.config.override.policy: which `*.override.*` keys a connector config may hold.
        self._override_policy = OverridePolicy.from_worker(config.kafka_client_properties)
        self._offsets_editor = offsets.Editor(stores.offsets, stores.group_offsets, worker)
        # The providers connector configs may use: the worker's own declaration (Connect's Worker does the same).
        self._providers = ConfigProviders.from_properties(config.model_extra or {})
        self._run = Lifecycle(
            self.configs, self.statuses, worker, config.worker_id, self, plugins, providers=self._providers
        )
        self._ready = threading.Event()
        self._lock = threading.RLock()
        # Asynchronous work (KIP-745 restarts, task reconfiguration) runs here, one item at a time.
        self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="herder")

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    @property
    def worker_id(self) -> str:
        return self.config.worker_id

    @property
    def cluster_id(self) -> str:
        return self._cluster_id

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Replay the stores and bring every connector to its target state."""
        self.configs.start()
        self.statuses.start()
        self.offsets.start()
        self.worker.await_warm_up()
        with self._lock:
            for name in self.configs.connectors():
                self.configs.clear_restart_request(name)  # requests replayed from the log were handled
                self._run.start_connector(name)
        self._ready.set()

    def stop(self) -> None:
        """Stop every task query and connector (recorded UNASSIGNED, as Connect does), then the stores."""
        self._ready.clear()
        self._background.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            for name in self.configs.connectors():
                if self.worker.is_running(name):
                    self._run.stop_connector(name, final_state=State.UNASSIGNED)
            self.worker.close()
        self.configs.stop()
        self.statuses.stop()
        self.offsets.stop()
        self._providers.close()

    # ------------------------------------------------------------------ reads
    def connectors(self) -> list[str]:
        return self.configs.connectors()

    def connector_config(self, name: str) -> dict[str, str]:
        return self._require(name, f"Connector {name} not found")

    def connector_info(self, name: str) -> ConnectorInfo:
        config = self.connector_config(name)
        tasks = [ConnectorTaskId(connector=name, task=i) for i in range(len(self.configs.task_configs(name)))]
        return ConnectorInfo(name=name, config=config, tasks=tasks, type=self._type_of(config))

    def connector_status(self, name: str) -> ConnectorStateInfo:
        status = self.statuses.connector(name)
        config = self.configs.connector_config(name)
        if status is None or config is None:
            raise NotFoundError(f"No status found for connector {name}")
        tasks = [_task_state(i, s) for i, s in sorted(self.statuses.tasks(name).items())]
        connector = ConnectorState(
            state=status.state, worker_id=status.worker_id, trace=status.trace, version=status.version
        )
        return ConnectorStateInfo(name=name, connector=connector, tasks=tasks, type=self._type_of(config))

    def task_status(self, name: str, task_id: int) -> TaskState:
        status = self.statuses.task(name, task_id)
        if status is None or self.configs.connector_config(name) is None:
            raise NotFoundError(f"No status found for task {name}-{task_id}")
        return _task_state(task_id, status)

    def task_configs(self, name: str) -> list[TaskInfo]:
        self.connector_config(name)
        return [
            TaskInfo(id=ConnectorTaskId(connector=name, task=i), config=c)
            for i, c in enumerate(self.configs.task_configs(name))
        ]

    # ------------------------------------------------------------------ config changes
    def create_connector(self, name: str, config: RawConfig, initial_state: TargetState | None = None) -> ConnectorInfo:
        with self._lock:
            if self.configs.connector_config(name) is not None:
                raise AlreadyExistsError(f"Connector {name} already exists")
            self.configs.put_connector_config(name, self._validated(name, config), initial_state)
            self._run.start_connector(name)
            return self.connector_info(name)

    def put_connector_config(self, name: str, config: RawConfig) -> tuple[bool, ConnectorInfo]:
        with self._lock:
            created = self.configs.connector_config(name) is None
            validated = self._validated(name, config)
            if not created:
                self._run.stop_connector(name, final_state=None)
            self.configs.put_connector_config(name, validated)
            self._run.start_connector(name, regenerate_tasks=True)
            return created, self.connector_info(name)

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo:
        with self._lock:
            merged = {**self.connector_config(name), **patch}
            return self.put_connector_config(name, {k: v for k, v in merged.items() if v is not None})[1]

    def delete_connector(self, name: str) -> None:
        with self._lock:
            self.connector_config(name)
            self._run.stop_connector(name, final_state=None)
            self.configs.remove_connector(name)
            self.statuses.remove_connector(name)
            self.statuses.remove_topics(name)

    # ------------------------------------------------------------------ target states
    def pause_connector(self, name: str) -> None:
        with self._lock:
            self._require(name, f"Unknown connector {name}")
            if self.configs.target_state(name) is TargetState.PAUSED:
                return
            self._run.stop_connector(name, final_state=None)
            self.configs.put_target_state(name, TargetState.PAUSED)
            # From STOPPED, pausing regenerates the tasks (paused) like Connect does.
            self._run.start_connector(name, regenerate_tasks=not self.configs.task_configs(name))

    def resume_connector(self, name: str) -> None:
        with self._lock:
            self._require(name, f"Unknown connector {name}")
            if self.configs.target_state(name) is TargetState.STARTED and self.worker.is_running(name):
                return
            self._run.stop_connector(name, final_state=None)
            self.configs.put_target_state(name, TargetState.STARTED)
            self._run.start_connector(name)

    def stop_connector(self, name: str) -> None:
        """KIP-875 STOPPED: no tasks at all (empty task configs), the connector instance shut down."""
        with self._lock:
            self._require(name, f"Unknown connector {name}")
            had_tasks = bool(self.configs.task_configs(name))
            self._run.stop_connector(name, final_state=None)
            if had_tasks:
                self.configs.put_task_configs(name, [])
            self.configs.put_target_state(name, TargetState.STOPPED)
            for task_id in self.statuses.tasks(name):
                self.statuses.remove_task(name, task_id)
            self._run.put_status(name, None, State.STOPPED)

    # ------------------------------------------------------------------ restarts (KIP-745)
    def restart_connector(self, name: str, include_tasks: bool, only_failed: bool) -> ConnectorStateInfo | None:
        self._require(name, f"Unknown connector: {name}")
        if not include_tasks and not only_failed:
            with self._lock:
                self._run.restart_instance(name)
            return None
        connector = self.statuses.connector(name)
        if connector is None:
            raise NotFoundError(f"Status for connector {name} not found")
        request = RestartRequest(name, include_tasks, only_failed)
        plan = restarts.build_plan(request, connector, self.statuses.tasks(name))
        self.configs.put_restart_request(request)
        body = restarts.marked(plan, self.connector_status(name))
        if plan.is_noop:
            self.configs.clear_restart_request(name)
        else:
            self._background.submit(self._execute_restart, plan)
        return body

    def restart_task(self, name: str, task_id: int) -> None:
        with self._lock:
            self._require(name, f"Unknown connector: {name}")
            task_configs = self.configs.task_configs(name)
            if not 0 <= task_id < len(task_configs):
                raise NotFoundError(f"Unknown task: {name}-{task_id}")
            self.worker.stop_task(name, task_id)
            self._run.start_task(name, task_id, task_configs[task_id])

    def put_task_configs(
        self, name: str, configs: list[dict[str, str]], signature: RequestSignature | None = None
    ) -> None:
        raise BadRequestError(
            "Task configs are only accepted from other workers of a group; this worker runs standalone "
            "(set sparklink.worker.mode=distributed to form a group)"
        )

    # ------------------------------------------------------------------ offsets (KIP-875)
    def connector_offsets(self, name: str) -> list[ConnectorOffset]:
        config = self.connector_config(name)
        if self._type_of(config) == "sink":
            return offsets.sink_entries(self.group_offsets.read(sink_group(name, config)))
        return [ConnectorOffset(partition=p, offset=o) for p, o in self.offsets.get(name)]

    def alter_offsets(self, name: str, entries: Sequence[ConnectorOffset]) -> str:
        return self._modify_offsets(name, entries)

    def reset_offsets(self, name: str) -> str:
        return self._modify_offsets(name, None)

    def _modify_offsets(self, name: str, entries: Sequence[ConnectorOffset] | None) -> str:
        with self._lock:
            config = self.connector_config(name)
            if self.configs.target_state(name) is not TargetState.STOPPED or self.configs.task_configs(name):
                raise BadRequestError(offsets.STOPPED_REQUIRED.format(name=name))
            sink = self._plugins.resolve(config[CONNECTOR_CLASS]).type == "sink"
            # The connector is asked with its resolved config, as Connect's modifyConnectorOffsets does.
            handled = self._offsets_editor.modify(name, self._run.resolved(name, config), sink, entries)
        return offsets.success_message("altered" if entries is not None else "reset", handled)

    # ------------------------------------------------------------------ active topics (KIP-558)
    def active_topics(self, name: str) -> list[str]:
        validation.require_topic_tracking(self.config, reset=False)
        return self.statuses.topics(name)

    def reset_active_topics(self, name: str) -> None:
        validation.require_topic_tracking(self.config, reset=True)
        self.statuses.remove_topics(name)

    # ------------------------------------------------------------------ plugins and metrics
    def plugins(self, connectors_only: bool = True) -> list[PluginInfo]:
        connectors = [
            PluginInfo(class_name=d.class_name, type=d.type, version=d.version()) for d in self._plugins.all()
        ]
        if connectors_only:
            return connectors
        # Connect's order: connectors, then transformations, predicates, converters, header converters;
        # plugin.path's Java ones after the built-ins of each type, unless a built-in has their name.
        built_in = [(c.class_name, kind, c.version()) for c, kind in transform_catalog.listing()]
        names = {(name, kind) for name, kind, _ in built_in}
        java = [
            (c.class_name, c.kind, c.version())
            for c in sorted(self._plugins.components(), key=lambda c: c.class_name)
            if (c.class_name, c.kind) not in names
        ]
        order = {kind: i for i, kind in enumerate(("transformation", "predicate", "converter", "header_converter"))}
        others = sorted([*built_in, *java], key=lambda entry: order[entry[1]])
        return connectors + [PluginInfo(class_name=name, type=kind, version=version) for name, kind, version in others]

    def plugin_config(self, plugin: str) -> list[ConfigKeyInfo]:
        desc = self._plugins.find(plugin)
        if desc is not None:
            return [config_key_info(k) for k in validation.definition(desc).keys.values()]
        other = transform_catalog.find_any(plugin)
        if other is not None:
            return [config_key_info(k) for k in other.config_def().keys.values()]
        component = self._plugins.component(plugin)
        if component is not None:
            return [config_key_info(k) for k in component.config_def().keys.values()]
        problem = self._plugins.problem(plugin)
        raise NotFoundError(
            f"Unknown plugin {plugin}." + (f" It was found but cannot be used: {problem}" if problem else "")
        )

    def validate(self, plugin: str, config: RawConfig) -> ConfigInfos:
        return validation.config_infos(self._checks(), plugin, config)

    def task_metrics(self) -> list[TaskMetrics]:
        return [TaskMetrics(c.connector, c.task, c.records, c.batches) for c in self.worker.task_counters()]

    def metric_groups(self) -> list[MetricGroup]:
        types = {}
        for name in self.configs.connectors():
            config = self.configs.connector_config(name)
            types[name] = self._type_of(config) if config is not None else "unknown"
        return metrics.worker_groups(
            self.configs, self.statuses, self.worker_id, self.worker, self._membership(), types
        )

    def _membership(self) -> metrics.Membership:
        """A standalone worker is its own group: never rebalanced, assigned all it runs."""
        return metrics.Membership(client_id=f"sparklink-{self.config.group_id}")

    # ------------------------------------------------------------------ connector context and task events
    def context(self, name: str) -> ConnectorContext:
        return _Context(self, name)

    def request_task_reconfiguration(self, name: str) -> None:
        self._background.submit(self._locked, self._run.reconfigure, name)

    def connector_failed(self, name: str, error: Exception) -> None:
        self._run.put_status(name, None, State.FAILED, trace(error))

    def _execute_restart(self, plan: restarts.RestartPlan) -> None:
        try:
            self._locked(self._run.execute_restart, plan)
        except Exception:
            log.exception("restart of connector %s failed", plan.request.connector)

    def _locked(self, action: Callable[[T], None], arg: T) -> None:
        with self._lock:
            action(arg)

    def task_failed(self, connector: str, task_id: int, trace: str) -> None:
        if self.configs.connector_config(connector) is not None:
            self._run.put_status(connector, task_id, State.FAILED, trace)

    def topics_seen(self, connector: str, task_id: int, topics: list[str]) -> None:
        if not self.config.topic_tracking_enable:
            return
        for topic in topics:
            if not self.statuses.has_topic(connector, topic):
                self.statuses.put_topic(connector, topic, task_id)

    # ------------------------------------------------------------------ internals
    def _require(self, name: str, message: str) -> dict[str, str]:
        config = self.configs.connector_config(name)
        if config is None:
            raise NotFoundError(message)
        return config

    def _validated(self, name: str, config: RawConfig) -> dict[str, str]:
        return validation.validated(self._checks(), name, config)

    def _checks(self) -> validation.Checks:
        return validation.Checks(
            self._plugins,
            self.config.tasks_max_limit,
            self._providers,
            self.files,
            self._override_policy,
            self._group_checks(),
        )

    def _group_checks(self) -> GroupChecks | None:
        """The checks only a worker of a group makes (none for a standalone worker, as in Connect)."""
        return None

    def _type_of(self, config: Mapping[str, str]) -> ConnectorType:
        desc = self._plugins.find(config.get(CONNECTOR_CLASS, ""))
        return desc.type if desc else "unknown"


class _Context:
    """The ConnectorContext a connector instance gets; calls back into the herder."""

    def __init__(self, herder: StandaloneHerder, name: str) -> None:
        self._herder = herder
        self._name = name

    def request_task_reconfiguration(self) -> None:
        self._herder.request_task_reconfiguration(self._name)

    def raise_error(self, error: Exception) -> None:
        self._herder.connector_failed(self._name, error)


def _task_state(task_id: int, status: Status) -> TaskState:
    return TaskState(
        id=task_id, state=status.state, worker_id=status.worker_id, trace=status.trace, version=status.version
    )
