"""What the control plane answers with, and the `Herder` Protocol every front end talks to.

The REST API, the CLI and (later) a distributed herder share this interface; it holds no storage or
execution types. Answers are frozen dataclasses that `rest/entities.py` turns into Connect's JSON.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, Protocol, TypeAlias

from sparklink.api.config import ConfigKey
from sparklink.api.metrics import MetricGroup
from sparklink.api.states import State, TargetState

JsonValue: TypeAlias = str | int | float | bool | list["JsonValue"] | dict[str, "JsonValue"] | None
ConnectorType = Literal["source", "sink", "unknown"]
RawConfig = Mapping[str, str | None]
"""A connector config as a request sent it; null values are reported as errors, not dropped."""


class ConnectorTaskId(NamedTuple):
    connector: str
    task: int


@dataclass(frozen=True)
class ConnectorInfo:
    name: str
    config: Mapping[str, str]
    tasks: tuple[ConnectorTaskId, ...]
    type: ConnectorType


@dataclass(frozen=True)
class TaskInfo:
    id: ConnectorTaskId
    config: Mapping[str, str]


@dataclass(frozen=True)
class ConnectorState:
    state: State
    worker_id: str
    trace: str | None = None
    version: str | None = None


@dataclass(frozen=True)
class TaskState(ConnectorState):
    id: int = field(kw_only=True)


@dataclass(frozen=True)
class ConnectorStateInfo:
    name: str
    connector: ConnectorState
    tasks: tuple[TaskState, ...]
    type: ConnectorType


@dataclass(frozen=True)
class ConnectorOffset:
    """One source partition (or sink topic partition) and its offset; None offset = remove it.

    Values are JSON as the request carried it: the herder checks their shape (a 400 says what is wrong).
    """

    partition: JsonValue
    offset: JsonValue


@dataclass(frozen=True)
class PluginInfo:
    class_name: str
    type: str
    version: str


@dataclass(frozen=True)
class ConfigValueInfo:
    name: str
    value: str | None
    recommended_values: tuple[str, ...]
    errors: tuple[str, ...]
    visible: bool = True


@dataclass(frozen=True)
class ConfigInfo:
    definition: ConfigKey | None
    value: ConfigValueInfo


@dataclass(frozen=True)
class ConfigInfos:
    name: str
    error_count: int
    groups: tuple[str, ...]
    configs: tuple[ConfigInfo, ...]


@dataclass(frozen=True)
class TaskMetrics:
    connector: str
    task: int
    records: int
    batches: int


class Herder(Protocol):
    """Every action on connectors; REST and the CLI are thin wrappers over it (Connect's Herder)."""

    @property
    def ready(self) -> bool:
        """True once the stores are loaded and every connector is at its target state."""
        ...

    @property
    def worker_id(self) -> str: ...

    @property
    def cluster_id(self) -> str: ...

    # reads
    def connectors(self) -> list[str]: ...
    def connector_info(self, name: str) -> ConnectorInfo: ...
    def connector_config(self, name: str) -> dict[str, str]: ...
    def connector_status(self, name: str) -> ConnectorStateInfo: ...
    def task_status(self, name: str, task_id: int) -> TaskState: ...
    def task_configs(self, name: str) -> list[TaskInfo]: ...

    # config changes
    def create_connector(
        self, name: str, config: RawConfig, initial_state: TargetState | None = None
    ) -> ConnectorInfo: ...
    def put_connector_config(self, name: str, config: RawConfig) -> tuple[bool, ConnectorInfo]:
        """Create or replace; returns (created, info)."""
        ...

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo: ...
    def delete_connector(self, name: str) -> None: ...

    # target states and restarts
    def pause_connector(self, name: str) -> None: ...
    def resume_connector(self, name: str) -> None: ...
    def stop_connector(self, name: str) -> None: ...
    def restart_connector(self, name: str, include_tasks: bool, only_failed: bool) -> ConnectorStateInfo | None:
        """None: restarted now (204). Otherwise the KIP-745 plan, executed in the background (202)."""
        ...

    def restart_task(self, name: str, task_id: int) -> None: ...
    def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        """Internal: the leader of a group writes task configs another worker generated."""
        ...

    # offsets (KIP-875) and active topics (KIP-558)
    def connector_offsets(self, name: str) -> list[ConnectorOffset]: ...
    def alter_offsets(self, name: str, offsets: Sequence[ConnectorOffset]) -> str: ...
    def reset_offsets(self, name: str) -> str: ...
    def active_topics(self, name: str) -> list[str]: ...
    def reset_active_topics(self, name: str) -> None: ...

    # plugins
    def plugins(self, connectors_only: bool = True) -> list[PluginInfo]:
        """Connector plugins; with connectors_only=False also transformations, predicates and converters."""
        ...

    def plugin_config(self, plugin: str) -> list[ConfigKey]: ...
    def validate(self, plugin: str, config: RawConfig) -> ConfigInfos: ...

    # metrics
    def task_metrics(self) -> list[TaskMetrics]: ...
    def metric_groups(self) -> list[MetricGroup]:
        """Every metric group of this worker, read now (Connect's groups, its tasks', the Spark JVM's)."""
        ...
