"""Connect's wire entities as pydantic models, and the `Herder` Protocol every front end talks to.

The herder answers with these models and the REST API renders them as they are (`Entity.json_body`):
Connect's JSON byte for byte (runtime/rest/entities: key names, nulls, traces left out when empty,
the `version` filter), and FastAPI publishes them in the OpenAPI schema. The routes, the fast reads
and the CLI therefore share one declaration of each shape. Only pydantic and the SPI's types are
imported here (the `wire-model` import contract keeps it so): no web framework, stores or execution.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal, Protocol, TypeAlias

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetPydanticSchema,
    JsonValue,
    WithJsonSchema,
)
from pydantic_core import core_schema

from sparklink.api.config import ConfigKey
from sparklink.api.metrics import MetricGroup
from sparklink.api.states import State, TargetState

if TYPE_CHECKING:
    from sparklink.worker.request_signing import RequestSignature

ConnectorType = Literal["source", "sink", "unknown"]
RawConfig = Mapping[str, str | None]
"""A connector config as a request sent it; null values are reported as errors, not dropped."""

# Python sees the precise types; on the wire and in the published schema a type and a state are plain
# strings and an offset is any JSON, as in Connect's entities. Offsets are not validated here: the
# herder checks their shape and answers a 400 that says what is wrong.
WireType = Annotated[ConnectorType, WithJsonSchema({"type": "string"})]
WireJson = Annotated[JsonValue, GetPydanticSchema(lambda _type, _handler: core_schema.any_schema())]
if TYPE_CHECKING:
    WireState: TypeAlias = State
else:
    # A State, validated from its string. FastAPI publishes every enum named in a field's annotation
    # as a schema of its own, so the annotation it reads names only `str`.
    WireState = Annotated[str, AfterValidator(State)]
# An empty trace is no trace: Connect leaves `trace` out unless there is one.
Trace = Annotated[str | None, BeforeValidator(lambda value: value or None)]


def _none(value: object) -> bool:
    return value is None


def _undefined(value: object) -> bool:
    # PluginInfo.NoVersionFilter: a version Connect could not determine is left out; null stays.
    return value == "undefined"


class Entity(BaseModel):
    # Built by field name (`populate_by_name`), rendered by alias (PluginInfo's `class`).
    model_config = ConfigDict(frozen=True, populate_by_name=True)

    def json_body(self) -> object:
        """The JSON value Connect sends for this entity."""
        return self.model_dump(mode="json", by_alias=True)


class ErrorMessage(Entity):
    error_code: int
    message: str


class ServerInfo(Entity):
    version: str
    commit: str
    kafka_cluster_id: str


class WorkerStatus(Entity):
    status: str
    message: str


class Message(Entity):
    message: str


class ConnectorTaskId(Entity):
    # A task's address, also the key of the group's assignments: ordered by connector, then task.
    connector: str
    task: int

    def __lt__(self, other: ConnectorTaskId) -> bool:
        return (self.connector, self.task) < (other.connector, other.task)


class ConnectorInfo(Entity):
    name: str
    config: dict[str, str]
    tasks: list[ConnectorTaskId]
    type: WireType


class TaskInfo(Entity):
    id: ConnectorTaskId
    config: dict[str, str]


class ConnectorState(Entity):
    state: WireState
    worker_id: str
    trace: Trace = Field(default=None, exclude_if=_none)
    version: str | None = Field(default=None, exclude_if=_undefined)


class TaskState(Entity):
    # Not a ConnectorState subclass: Connect writes `id` first.
    id: int
    state: WireState
    worker_id: str
    trace: Trace = Field(default=None, exclude_if=_none)
    version: str | None = Field(default=None, exclude_if=_undefined)


class ConnectorStateInfo(Entity):
    name: str
    connector: ConnectorState
    tasks: list[TaskState]
    type: WireType


class ConnectorOffset(Entity):
    # One source partition (or sink topic partition) and its offset; a None offset removes it.
    partition: WireJson
    offset: WireJson


class ConnectorOffsets(Entity):
    offsets: list[ConnectorOffset]


class PluginInfo(Entity):
    class_name: str = Field(validation_alias="class", serialization_alias="class")
    type: str
    version: str


class ConfigKeyInfo(Entity):
    name: str
    type: str
    required: bool
    default_value: str | None
    importance: str
    documentation: str
    group: str | None
    order_in_group: int
    width: str
    display_name: str
    dependents: list[str]


def config_key_info(key: ConfigKey) -> ConfigKeyInfo:
    """A config declaration as `/config` and `/config/validate` show it (AbstractHerder#convertConfigKey)."""
    return ConfigKeyInfo(
        name=key.name,
        type=key.type,
        required=key.required,
        default_value=key.default_string(),
        importance=key.importance,
        documentation=key.documentation,
        group=key.group,
        order_in_group=key.order,
        width=key.width,
        display_name=key.display_name or key.name,
        dependents=list(key.dependents),
    )


class ConfigValueInfo(Entity):
    name: str
    value: str | None
    recommended_values: list[str]
    errors: list[str]
    visible: bool


class ConfigInfo(Entity):
    definition: ConfigKeyInfo | None
    value: ConfigValueInfo


class ConfigInfos(Entity):
    name: str
    error_count: int
    groups: list[str]
    configs: list[ConfigInfo]


@dataclass(frozen=True)
class TaskMetrics:
    """A task's counters for `/metrics` (Prometheus text, not one of Connect's entities)."""

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
    def put_task_configs(
        self, name: str, configs: list[dict[str, str]], signature: RequestSignature | None = None
    ) -> None:
        """Internal: the leader of a group writes task configs another worker generated and signed (KIP-507)."""
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

    def plugin_config(self, plugin: str) -> list[ConfigKeyInfo]:
        """The plugin's config declarations (Connect's Herder#connectorPluginConfig)."""
        ...

    def validate(self, plugin: str, config: RawConfig) -> ConfigInfos: ...

    # metrics
    def task_metrics(self) -> list[TaskMetrics]: ...
    def metric_groups(self) -> list[MetricGroup]:
        """Every metric group of this worker, read now (Connect's groups, its tasks', the Spark JVM's)."""
        ...
