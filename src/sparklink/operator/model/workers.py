"""Resource -> the settings of the Connect worker group that runs its connectors.

KafkaConnect names the group and its internal topics in `spec` (v1: `groupId`, `configStorageTopic`,
...); KafkaMirrorMaker2 does the same under `spec.target`. `spec.config` (MM2: `spec.target.config`) is
passed to the workers except for the prefixes Strimzi reserves for itself (group.id, the storage
topics, security, rest., bootstrap.servers, ...), the settings sparklink's operator owns (where workers
listen and keep state) and the Spark settings `model.config_safety` does not allow, which are dropped with a
Warning each. A key or value with a line break or control character refuses the whole resource
(`config_safety.UnsafeConfig`): nothing is written. `spec.tls` and `spec.authentication` are read into a
`client_auth.ClientAuth`, which the hosts render (files for a local worker, Secret placeholders in a pod);
so are a KafkaMirrorMaker2's `spec.mirrors[].source` ones (`client_auth.SourceAuth`, rendered into the
connectors' config). The reconciler adds the Secrets' `Material`, whose digest is part of the fingerprint.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sparklink.operator.model import config_safety
from sparklink.operator.model.client_auth import ClientAuth, Material, SourceAuth
from sparklink.operator.model.conditions import REASON_INVALID_RESOURCE, ReconcileFailure
from sparklink.operator.model.resources import KAFKA_CONNECT, Resource, config_value

FORBIDDEN_PREFIXES = (
    "group.id",
    "config.storage.topic",
    "offset.storage.topic",
    "status.storage.topic",
    "ssl.",
    "sasl.",
    "security.",
    "listeners",
    "plugin.path",
    "rest.",
    "bootstrap.servers",
    "consumer.interceptor.classes",
    "producer.interceptor.classes",
    "prometheus.metrics.reporter.",
)
# sparklink's own: the operator decides where a worker keeps its state, how the group forms, and where
# the workers listen (Strimzi's `listeners` and `rest.` prefixes leave out Connect's `admin.listeners`,
# which on the local runtime would open a port on the operator's host).
# The worker setting that confines its file connectors (the worker's `api.files.ALLOWED_PATHS`).
FILE_ALLOWED_PATHS = "sparklink.file.allowed.paths"
# The host decides where a worker keeps its state and which files its connectors may touch, never a resource.
SPARKLINK_FORBIDDEN = ("sparklink.state.dir", "sparklink.worker.mode", "admin.listeners", FILE_ALLOWED_PATHS)
ALLOWED_EXCEPTIONS = (
    "ssl.endpoint.identification.algorithm",
    "ssl.cipher.suites",
    "ssl.protocol",
    "ssl.enabled.protocols",
)
DEFAULTS = {
    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
}
# Strimzi's KafkaMirrorMaker2Configuration: mirrored records are copied byte for byte.
_BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
MIRROR_MAKER_2_DEFAULTS = {"key.converter": _BYTES, "value.converter": _BYTES, "header.converter": _BYTES}
DISTRIBUTED_MODE = "sparklink.worker.mode"
REQUIRED = ("bootstrapServers", "groupId", "configStorageTopic", "statusStorageTopic", "offsetStorageTopic")


@dataclass(frozen=True)
class WorkerSettings:
    """Everything a runtime needs to run the worker group, and nothing about where it runs."""

    bootstrap_servers: str
    group_id: str
    config_topic: str
    offset_topic: str
    status_topic: str
    replicas: int
    config: Mapping[str, str] = field(default_factory=dict)
    ignored_options: tuple[str, ...] = ()
    ignored_spark: tuple[str, ...] = ()  # spark.* options outside config_safety.SPARK_ALLOWED
    client_auth: ClientAuth | None = None  # spec.tls / spec.authentication (None: PLAINTEXT)
    material: Material | None = field(default=None, repr=False)  # the Secrets' contents (set by the reconciler)
    sources: tuple[SourceAuth, ...] = ()  # MirrorMaker 2: each mirror's source cluster with tls / authentication
    # The local runtime's spec.build plugins (a directory the host adds to its own plugin.path; "" for none).
    plugin_path: str = ""

    def properties(self) -> dict[str, str]:
        """Connect worker properties (what a worker.properties file or a ConfigMap holds).

        Every replica count runs one distributed group on `group.id`, as Strimzi's Connect does: a single
        worker is a group of one, so scaling between one replica and more starts or stops workers and
        leaves the running ones alone (the replica count is not a worker setting)."""
        return {
            **self.config,
            DISTRIBUTED_MODE: "distributed",
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": self.group_id,
            "config.storage.topic": self.config_topic,
            "offset.storage.topic": self.offset_topic,
            "status.storage.topic": self.status_topic,
        }

    def fingerprint(self) -> str:
        """Changes whenever the workers must be restarted to pick up new settings."""
        import dataclasses
        import hashlib
        import json

        # A built plugin directory changes the hash; without one the hash is as before (workers are adopted).
        built = {"plugin.path": self.plugin_path} if self.plugin_path else {}
        if self.client_auth is None and not self.sources:  # as before client authentication: workers are adopted
            return hashlib.sha256(json.dumps({**self.properties(), **built}, sort_keys=True).encode()).hexdigest()[:16]
        auth = dataclasses.asdict(self.client_auth) if self.client_auth else None
        material = self.material.digest if self.material else None
        parts: list[Any] = [{**self.properties(), **built}, auth, material]
        if self.sources:  # a source's Secret that changes restarts the workers too
            parts.append(
                [[s.index, dataclasses.asdict(s.auth), s.material.digest if s.material else None] for s in self.sources]
            )
        text = json.dumps(parts, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def from_resource(resource: Resource) -> WorkerSettings:
    """KafkaConnect's spec or KafkaMirrorMaker2's spec.target; raises ReconcileFailure when a required
    field is missing (the CRD requires them, so this only happens with a CRD other than ours)."""
    spec = resource.spec if resource.kind == KAFKA_CONNECT else (resource.spec.get("target") or {})
    where = "spec" if resource.kind == KAFKA_CONNECT else "spec.target"
    missing = [f"{where}.{name}" for name in REQUIRED if not spec.get(name)]
    if missing:
        raise ReconcileFailure(
            f"{resource.kind} {resource.namespace}/{resource.name} is missing {', '.join(missing)}",
            REASON_INVALID_RESOURCE,
        )
    auth = ClientAuth.from_spec(spec, where)
    sources = _source_auths(resource) if resource.kind != KAFKA_CONNECT else ()
    _refuse_control_characters(resource, spec, where, auth, sources)
    replicas = resource.spec.get("replicas")
    if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas < 0:
        # Refused before the runtime sees it: scaling to a negative count would stop every worker.
        raise ReconcileFailure(
            f"{resource.kind} {resource.namespace}/{resource.name} has spec.replicas {replicas}: it must be 0 or "
            "more (0 stops the workers and keeps the resource)",
            REASON_INVALID_RESOURCE,
        )
    defaults = DEFAULTS if resource.kind == KAFKA_CONNECT else MIRROR_MAKER_2_DEFAULTS
    config, ignored, spark = worker_config(spec.get("config") or {}, defaults)
    return WorkerSettings(
        bootstrap_servers=str(spec["bootstrapServers"]),
        group_id=str(spec["groupId"]),
        config_topic=str(spec["configStorageTopic"]),
        offset_topic=str(spec["offsetStorageTopic"]),
        status_topic=str(spec["statusStorageTopic"]),
        replicas=replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 1,
        config=config,
        ignored_options=ignored,
        ignored_spark=spark,
        client_auth=auth,
        sources=sources,
    )


def _source_auths(resource: Resource) -> tuple[SourceAuth, ...]:
    """Each `spec.mirrors[i].source` with `tls` or `authentication` (Strimzi's KafkaMirrorMaker2ClusterSpec)."""
    out = []
    for i, mirror in enumerate(resource.spec.get("mirrors") or []):
        source = mirror.get("source") if isinstance(mirror, Mapping) else None
        auth = ClientAuth.from_spec(source, f"spec.mirrors[{i}].source") if isinstance(source, Mapping) else None
        if auth is not None:
            out.append(SourceAuth(i, auth))
    return tuple(out)


def _refuse_control_characters(
    resource: Resource, spec: Mapping[str, Any], where: str, auth: ClientAuth | None, sources: tuple[SourceAuth, ...]
) -> None:
    """UnsafeConfig when anything the workers' properties (or the connectors' cluster settings) would hold
    has a line break or control character."""
    fields = [(f"{where}.{name}", spec.get(name)) for name in REQUIRED]
    fields += [(f"{where}.{name}", value) for name, value in (auth.fields() if auth else [])]
    for s in sources:
        fields += [(f"spec.mirrors[{s.index}].source.{name}", value) for name, value in s.auth.fields()]
    problems = config_safety.field_problems(fields) + config_safety.problems_in(spec.get("config"), f"{where}.config")
    if problems:
        raise config_safety.UnsafeConfig(
            f"{resource.kind} {resource.namespace}/{resource.name}",
            problems,
            "the workers keep running with their previous settings",
        )


def worker_config(
    raw: Mapping[str, Any], defaults: Mapping[str, str] = DEFAULTS
) -> tuple[dict[str, str], tuple[str, ...], tuple[str, ...]]:
    """The workers' settings from `config` over `defaults`, the forbidden options dropped, and the Spark
    options dropped."""
    config = dict(defaults)
    ignored, spark = [], []
    for key, value in raw.items():
        lowered = str(key).lower()
        strimzis = lowered.startswith(FORBIDDEN_PREFIXES) and key not in ALLOWED_EXCEPTIONS
        if strimzis or lowered.startswith(SPARKLINK_FORBIDDEN):
            ignored.append(str(key))
        elif config_safety.spark_forbidden(str(key)):
            spark.append(str(key))
        elif value is not None:
            config[str(key)] = config_value(value)
    return config, tuple(ignored), tuple(spark)
