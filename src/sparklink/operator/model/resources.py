"""Typed views of the custom resources the operator reads (raw Kubernetes JSON in, frozen values out).

Only what the operator uses is typed; the rest of a user's object is never touched, because the
operator writes nothing back but `/status` and the removal of annotations it acted on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

GROUP = "kafka.strimzi.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"

KAFKA_CONNECT = "KafkaConnect"
KAFKA_CONNECTOR = "KafkaConnector"
KAFKA_MIRROR_MAKER_2 = "KafkaMirrorMaker2"
KAFKA = "Kafka"
KAFKA_NODE_POOL = "KafkaNodePool"
KAFKA_USER = "KafkaUser"
PLURALS = {
    KAFKA_CONNECT: "kafkaconnects",
    KAFKA_CONNECTOR: "kafkaconnectors",
    KAFKA_MIRROR_MAKER_2: "kafkamirrormaker2s",
    KAFKA: "kafkas",
    KAFKA_NODE_POOL: "kafkanodepools",
    KAFKA_USER: "kafkausers",
}


@dataclass(frozen=True, order=True)
class Key:
    """Names one resource: what the work queue holds and every log line starts with."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.kind}/{self.name}"


@dataclass(frozen=True)
class Resource:
    """One custom object as read from the API server."""

    kind: str
    namespace: str
    name: str
    uid: str
    generation: int | None
    api_version: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    spec: Mapping[str, Any] = field(default_factory=dict)
    status: Mapping[str, Any] = field(default_factory=dict)
    deleting: bool = False

    @property
    def key(self) -> Key:
        return Key(self.kind, self.namespace, self.name)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Resource:
        meta = body.get("metadata") or {}
        return cls(
            kind=str(body.get("kind", "")),
            namespace=str(meta.get("namespace", "")),
            name=str(meta.get("name", "")),
            uid=str(meta.get("uid", "")),
            generation=meta.get("generation"),
            api_version=str(body.get("apiVersion", API_VERSION)),
            labels=dict(meta.get("labels") or {}),
            annotations=dict(meta.get("annotations") or {}),
            spec=dict(body.get("spec") or {}),
            status=dict(body.get("status") or {}),
            deleting=meta.get("deletionTimestamp") is not None,
        )

    def owner_reference(self, controller: bool = False) -> dict[str, Any]:
        """The reference Strimzi puts on what it creates for a resource (`blockOwnerDeletion: true`)."""
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "blockOwnerDeletion": True,
            "controller": controller,
        }


@dataclass(frozen=True)
class Secret:
    """A Kubernetes Secret as the operator reads and writes it: `data` decoded (the API's base64 is the
    store's business), and the metadata Strimzi sets on the Secrets it owns."""

    namespace: str
    name: str
    data: Mapping[str, bytes] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    owner_references: tuple[Mapping[str, Any], ...] = ()

    def text(self, key: str) -> str | None:
        value = self.data.get(key)
        return None if value is None else value.decode("utf-8", errors="replace")


def config_value(value: Any) -> str:
    """A `config` value as Connect expects it: every value a string (YAML numbers and booleans included,
    written as Java writes them: `true`, not `True`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return f"{value:.1f}"
    if isinstance(value, (dict, list)):
        import json

        return json.dumps(value)
    return str(value)
