"""Resource -> the connectors Connect should run: configs, target state, auto-restart and offsets settings.

A KafkaConnector gives one connector named like the resource; a KafkaMirrorMaker2 gives a
MirrorSourceConnector and a MirrorCheckpointConnector per mirror (`<source>-><target>.<Class>`; the v1
API has no heartbeat connector). `name`, `connector.class`, `tasks.max` and `connector.plugin.version`
may not be set in `config` (a stray `tasks.max` there made Strimzi restart connectors on every
reconcile, #6438): they are dropped, and each one becomes a Warning so the user learns why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sparklink.operator.model.annotations import ConnectorRequests
from sparklink.operator.model.autorestart import AutoRestartSpec, AutoRestartStatus
from sparklink.operator.model.resources import KAFKA_CONNECTOR, Resource, config_value

FORBIDDEN_OPTIONS = ("name", "connector.class", "tasks.max", "connector.plugin.version")
MIRROR_PACKAGE = "org.apache.kafka.connect.mirror"
SOURCE_SUFFIX = ".MirrorSourceConnector"
CHECKPOINT_SUFFIX = ".MirrorCheckpointConnector"
MIRROR_CONNECTORS = (("sourceConnector", SOURCE_SUFFIX), ("checkpointConnector", CHECKPOINT_SUFFIX))

TargetState = Literal["running", "paused", "stopped"]


@dataclass(frozen=True)
class DesiredConnector:
    name: str
    class_name: str | None
    tasks_max: int | None
    version: str | None
    config: Mapping[str, str]
    state: TargetState | None = None  # None: not set in the spec, which means running
    auto_restart: AutoRestartSpec | None = None
    list_offsets_to: str | None = None
    alter_offsets_from: str | None = None
    ignored_options: tuple[str, ...] = field(default=())

    @property
    def target_state(self) -> TargetState:
        return self.state or "running"

    def connect_config(self) -> dict[str, str]:
        """The body of PUT /connectors/<name>/config (and of POST /connectors' `config`)."""
        out = dict(self.config)
        if self.tasks_max is not None:
            out["tasks.max"] = str(self.tasks_max)
        if self.version is not None:
            out["connector.plugin.version"] = self.version
        if self.class_name is not None:
            out["connector.class"] = self.class_name
        return out

    def needs_reconfiguring(self, actual: Mapping[str, str]) -> bool:
        """Connect's stored config includes `name`; compare like for like (Strimzi's needsReconfiguring)."""
        desired = {**self.connect_config(), "name": self.name}
        return desired != dict(actual)


@dataclass(frozen=True)
class ConnectorJob:
    """One connector to reconcile: what it should be, what its owner's annotations ask of it, and the
    auto-restart status its owner's status last recorded."""

    owner: Resource  # the KafkaConnector or KafkaMirrorMaker2 the connector belongs to
    desired: DesiredConnector
    requests: ConnectorRequests
    previous_auto_restart: AutoRestartStatus | None


def connector_spec(name: str, spec: Mapping[str, Any], class_name: str | None) -> DesiredConnector:
    raw_config = spec.get("config") or {}
    config: dict[str, str] = {}
    ignored: list[str] = []
    for key, value in raw_config.items() if isinstance(raw_config, Mapping) else ():
        if str(key).lower() in FORBIDDEN_OPTIONS:
            ignored.append(str(key))
        else:
            config[str(key)] = config_value(value)
    raw_state = spec.get("state")
    state = str(raw_state).lower() if isinstance(raw_state, str) else None
    tasks_max = spec.get("tasksMax")
    return DesiredConnector(
        name=name,
        class_name=class_name,
        tasks_max=tasks_max if isinstance(tasks_max, int) and not isinstance(tasks_max, bool) else None,
        version=spec.get("version") if isinstance(spec.get("version"), str) else None,
        config=config,
        state=state if state in ("running", "paused", "stopped") else None,  # type: ignore[arg-type]
        auto_restart=AutoRestartSpec.from_json(spec.get("autoRestart")),
        list_offsets_to=_ref_name(spec.get("listOffsets"), "toConfigMap"),
        alter_offsets_from=_ref_name(spec.get("alterOffsets"), "fromConfigMap"),
        ignored_options=tuple(ignored),
    )


def from_kafka_connector(resource: Resource) -> DesiredConnector:
    assert resource.kind == KAFKA_CONNECTOR
    class_name = resource.spec.get("class")
    return connector_spec(resource.name, resource.spec, class_name if isinstance(class_name, str) else None)


def from_mirror_maker_2(
    resource: Resource,
    target_security: Mapping[str, str] | None = None,
    source_security: Mapping[int, Mapping[str, str]] | None = None,
) -> list[DesiredConnector]:
    """Strimzi's KafkaMirrorMaker2Connectors.generateConnectorDefinitions, for the v1 API. The clusters'
    `tls` / `authentication` come rendered (`worker_security.connector_settings`): the target's, and each
    mirror's source by its index; a cluster without them is PLAINTEXT."""
    target = resource.spec.get("target") or {}
    out = []
    for index, mirror in enumerate(resource.spec.get("mirrors") or []):
        source = mirror.get("source") or {}
        for field_name, suffix in MIRROR_CONNECTORS:
            connector = mirror.get(field_name)
            if not isinstance(connector, Mapping):
                continue
            name = f"{source.get('alias')}->{target.get('alias')}{suffix}"
            desired = connector_spec(name, connector, MIRROR_PACKAGE + suffix)
            config = {
                **_cluster_config(target, "target.cluster.", target_security),
                **_cluster_config(source, "source.cluster.", (source_security or {}).get(index)),
                **desired.config,
            }
            for spec_key, config_key in (
                ("topicsPattern", "topics"),
                ("topicsExcludePattern", "topics.exclude"),
                ("groupsPattern", "groups"),
                ("groupsExcludePattern", "groups.exclude"),
            ):
                if mirror.get(spec_key) is not None:
                    config[config_key] = str(mirror[spec_key])
            out.append(_replace_config(desired, config))
    return out


def _cluster_config(cluster: Mapping[str, Any], prefix: str, security: Mapping[str, str] | None) -> dict[str, str]:
    out = {
        prefix + "alias": str(cluster.get("alias")),
        prefix + "bootstrap.servers": str(cluster.get("bootstrapServers")),
        **(security or {prefix + "security.protocol": "PLAINTEXT"}),
    }
    for key, value in (cluster.get("config") or {}).items():
        out[prefix + str(key)] = config_value(value)
    return out


def _replace_config(desired: DesiredConnector, config: dict[str, str]) -> DesiredConnector:
    from dataclasses import replace

    return replace(desired, config=config)


def _ref_name(raw: Any, field_name: str) -> str | None:
    if not isinstance(raw, Mapping):
        return None
    ref = raw.get(field_name)
    if isinstance(ref, Mapping) and isinstance(ref.get("name"), str):
        return str(ref["name"])
    return None
