"""The status each kind's reconcile writes, typed with Strimzi's field names (its v1 `*Status` classes).

`Status` holds what every kind has (conditions, observedGeneration); `KafkaMirrorMaker2Status` extends
`KafkaConnectStatus` as in Strimzi. Fields are declared in Strimzi's `@JsonPropertyOrder`; a field left
None is left out of the JSON, and MirrorMaker 2's `connectors` and `autoRestartStatuses` (NON_EMPTY in
Strimzi) and the Kafka's `listeners` also when empty. Conditions are given unstamped: `reconcile.context`
stamps them and renders the status with `model.rendering`. Reading a status back (`from_json`) is only
needed where a reconcile keeps what the previous status said (a failed Kafka reconcile, an orphan pool).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparklink.operator.model.autorestart import AutoRestartStatus
from sparklink.operator.model.conditions import Condition
from sparklink.operator.model.rendering import json_name, non_empty

# Connect's own JSON, copied into the status as Connect sent it (Strimzi: Map<String, Object>).
ConnectJson = Mapping[str, object]


@dataclass(frozen=True, kw_only=True)
class Status:
    conditions: Sequence[Condition] = ()
    observed_generation: int | None = None


@dataclass(frozen=True, kw_only=True)
class ConnectorPlugin:
    """One entry of GET /connector-plugins, as KafkaConnect's status lists it."""

    connector_class: str | None = field(default=None, metadata=json_name("class"))
    type: str | None = None
    version: str | None = None

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> ConnectorPlugin:
        return cls(connector_class=_str(raw.get("class")), type=_str(raw.get("type")), version=_str(raw.get("version")))


@dataclass(frozen=True, kw_only=True)
class KafkaConnectStatus(Status):
    url: str | None = None
    connector_plugins: Sequence[ConnectorPlugin] | None = None
    replicas: int | None = None
    label_selector: str | None = None


@dataclass(frozen=True, kw_only=True)
class KafkaMirrorMaker2Status(KafkaConnectStatus):
    connectors: Sequence[ConnectJson] = field(default=(), metadata=non_empty())  # sorted by name
    auto_restart_statuses: Sequence[AutoRestartStatus] = field(default=(), metadata=non_empty())


@dataclass(frozen=True, kw_only=True)
class KafkaConnectorStatus(Status):
    auto_restart: AutoRestartStatus | None = None
    connector_status: ConnectJson | None = None
    tasks_max: int | None = None
    topics: Sequence[str] | None = None


@dataclass(frozen=True)
class ListenerAddress:
    host: str
    port: int


@dataclass(frozen=True)
class ListenerStatus:
    name: str
    addresses: Sequence[ListenerAddress]
    bootstrap_servers: str
    certificates: Sequence[str] | None = None  # TLS listeners: the cluster CA's certificate (PEM)

    @classmethod
    def from_json(cls, raw: object) -> ListenerStatus | None:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
            return None
        addresses = [
            ListenerAddress(a["host"], a["port"])
            for a in _list(raw.get("addresses"))
            if isinstance(a, Mapping) and isinstance(a.get("host"), str) and isinstance(a.get("port"), int)
        ]
        certificates = [c for c in _list(raw.get("certificates")) if isinstance(c, str)] or None
        return cls(raw["name"], addresses, _str(raw.get("bootstrapServers")) or "", certificates)


@dataclass(frozen=True)
class UsedNodePoolStatus:
    name: str


@dataclass(frozen=True, kw_only=True)
class KafkaStatus(Status):
    listeners: Sequence[ListenerStatus] = field(default=(), metadata=non_empty())
    kafka_node_pools: Sequence[UsedNodePoolStatus] | None = None
    cluster_id: str | None = None
    operator_last_successful_version: str | None = None
    kafka_version: str | None = None
    kafka_metadata_version: str | None = None

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> KafkaStatus:
        """What a previous status said about what runs (its conditions are not read)."""
        pools = raw.get("kafkaNodePools")
        named = (
            [p for p in pools if isinstance(p, Mapping) and isinstance(p.get("name"), str)]
            if isinstance(pools, list)
            else None
        )
        return cls(
            observed_generation=_int(raw.get("observedGeneration")),
            listeners=[s for s in map(ListenerStatus.from_json, _list(raw.get("listeners"))) if s is not None],
            kafka_node_pools=None if named is None else [UsedNodePoolStatus(p["name"]) for p in named],
            cluster_id=_str(raw.get("clusterId")),
            operator_last_successful_version=_str(raw.get("operatorLastSuccessfulVersion")),
            kafka_version=_str(raw.get("kafkaVersion")),
            kafka_metadata_version=_str(raw.get("kafkaMetadataVersion")),
        )


@dataclass(frozen=True, kw_only=True)
class KafkaUserStatus(Status):
    username: str | None = None
    secret: str | None = None


@dataclass(frozen=True, kw_only=True)
class KafkaNodePoolStatus(Status):
    node_ids: Sequence[int] | None = None
    cluster_id: str | None = None
    roles: Sequence[str] | None = None
    replicas: int | None = None
    label_selector: str | None = None

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> KafkaNodePoolStatus:
        """What a previous status said (its conditions are not read)."""
        ids = raw.get("nodeIds")
        roles = raw.get("roles")
        return cls(
            observed_generation=_int(raw.get("observedGeneration")),
            node_ids=[i for i in ids if _int(i) is not None] if isinstance(ids, list) else None,
            cluster_id=_str(raw.get("clusterId")),
            roles=[r for r in roles if isinstance(r, str)] if isinstance(roles, list) else None,
            replicas=_int(raw.get("replicas")),
            label_selector=_str(raw.get("labelSelector")),
        )


def _str(raw: object) -> str | None:
    return raw if isinstance(raw, str) else None


def _int(raw: object) -> int | None:
    return raw if isinstance(raw, int) and not isinstance(raw, bool) else None


def _list(raw: object) -> list[object]:
    return list(raw) if isinstance(raw, list) else []
