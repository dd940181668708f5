"""Connect's wire entities (runtime/rest/entities) as pydantic models, and their mapping from the herder's answers.

The routes return these; their JSON is Connect's byte for byte (key names, nulls, omitted empty traces),
and FastAPI publishes them in the OpenAPI schema.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from sparklink.api.config import ConfigKey
from sparklink.worker.herder import model


def _none(value: object) -> bool:
    return value is None


def _undefined(value: object) -> bool:
    # PluginInfo.NoVersionFilter: a version Connect could not determine is left out; null stays.
    return value == "undefined"


class Entity(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True)

    def json_body(self) -> object:
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


class ConnectorTaskId(Entity):
    connector: str
    task: int


class ConnectorInfo(Entity):
    name: str
    config: dict[str, str]
    tasks: list[ConnectorTaskId]
    type: str

    @classmethod
    def of(cls, info: model.ConnectorInfo) -> ConnectorInfo:
        tasks = [ConnectorTaskId(connector=t.connector, task=t.task) for t in info.tasks]
        return cls(name=info.name, config=dict(info.config), tasks=tasks, type=info.type)


class TaskInfo(Entity):
    id: ConnectorTaskId
    config: dict[str, str]

    @classmethod
    def of(cls, info: model.TaskInfo) -> TaskInfo:
        return cls(id=ConnectorTaskId(connector=info.id.connector, task=info.id.task), config=dict(info.config))


class ConnectorState(Entity):
    state: str
    worker_id: str
    trace: str | None = Field(default=None, exclude_if=_none)
    version: str | None = Field(default=None, exclude_if=_undefined)


class TaskState(Entity):
    id: int
    state: str
    worker_id: str
    trace: str | None = Field(default=None, exclude_if=_none)
    version: str | None = Field(default=None, exclude_if=_undefined)

    @classmethod
    def of(cls, task: model.TaskState) -> TaskState:
        return cls(
            id=task.id, state=task.state, worker_id=task.worker_id, trace=task.trace or None, version=task.version
        )


class ConnectorStateInfo(Entity):
    name: str
    connector: ConnectorState
    tasks: list[TaskState]
    type: str

    @classmethod
    def of(cls, info: model.ConnectorStateInfo) -> ConnectorStateInfo:
        c = info.connector
        connector = ConnectorState(state=c.state, worker_id=c.worker_id, trace=c.trace or None, version=c.version)
        return cls(name=info.name, connector=connector, tasks=[TaskState.of(t) for t in info.tasks], type=info.type)


class ConnectorOffset(Entity):
    partition: object
    offset: object


class ConnectorOffsets(Entity):
    offsets: list[ConnectorOffset]

    @classmethod
    def of(cls, offsets: list[model.ConnectorOffset]) -> ConnectorOffsets:
        return cls(offsets=[ConnectorOffset(partition=o.partition, offset=o.offset) for o in offsets])


class Message(Entity):
    message: str


class PluginInfo(Entity):
    class_name: str = Field(alias="class")
    type: str
    version: str

    @classmethod
    def of(cls, info: model.PluginInfo) -> PluginInfo:
        return cls.model_validate({"class": info.class_name, "type": info.type, "version": info.version})


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

    @classmethod
    def of(cls, key: ConfigKey) -> ConfigKeyInfo:
        return cls(
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
            dependents=[],
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

    @classmethod
    def of(cls, infos: model.ConfigInfos) -> ConfigInfos:
        configs = [
            ConfigInfo(
                definition=ConfigKeyInfo.of(c.definition) if c.definition else None,
                value=ConfigValueInfo(
                    name=c.value.name,
                    value=c.value.value,
                    recommended_values=list(c.value.recommended_values),
                    errors=list(c.value.errors),
                    visible=c.value.visible,
                ),
            )
            for c in infos.configs
        ]
        return cls(name=infos.name, error_count=infos.error_count, groups=list(infos.groups), configs=configs)


class LoggerLevel(Entity):
    level: str
    last_modified: int | None
