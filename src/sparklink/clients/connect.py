"""Connect's client prefixes: which settings the worker's own clients and each task client get, and the
connector-level override policy. Mirrors Worker.java (Kafka 4.3.1) baseProducerConfigs, baseConsumerConfigs
and adminConfigs:

- the worker's own clients (internal topics, group membership): the top-level settings;
- task producers and consumers: the worker's `bootstrap.servers`, then `producer.*` / `consumer.*`, then the
  connector's `producer.override.*` / `consumer.override.*`. They do NOT inherit the top-level security
  settings: a secured worker repeats them under each prefix, as in Connect;
- task admins: the top-level settings (all but `producer.*`, `consumer.*`, `admin.*`), then `admin.*`, then
  the connector's `admin.override.*`. Of the inherited top-level keys, sparklink keeps the security and
  the common client settings (`WORKER_CLIENT_KEYS`); the others are worker settings, which a Java admin
  ignores too.
Overrides must pass `connector.client.config.override.policy`: All (Connect's default), None, Principal
(security.protocol, sasl.mechanism, sasl.jaas.config) or Allowlist (`connector.client.config.override.
allowlist`). `WorkerClients` holds one worker's properties and policy, checks every worker-level client's
settings at start and hands out each composition, parsed once. An unusable setting is reported under the
key the user wrote (`producer.security.protocol`, `admin.override.sasl.jaas.config`, ...).
Callers: the worker (stores, group, tasks, DLQ), the herder's validation, MirrorMaker 2.
"""

from __future__ import annotations

import enum
import functools
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from sparklink.clients.errors import ClientOverrideError, ClientSettingsError
from sparklink.clients.security import is_security_key
from sparklink.clients.settings import KafkaClientSettings

__all__ = [
    "ALLOWLIST_CONFIG",
    "POLICY_CONFIG",
    "ClientKind",
    "OverridePolicy",
    "WorkerClients",
    "overrides",
    "task_clients",
    "worker_clients",
]

POLICY_CONFIG = "connector.client.config.override.policy"
ALLOWLIST_CONFIG = "connector.client.config.override.allowlist"
DEFAULT_BOOTSTRAP = "localhost:9092"  # WorkerConfig's default
PRINCIPAL_KEYS = frozenset({"security.protocol", "sasl.mechanism", "sasl.jaas.config"})
_POLICY_PACKAGE = "org.apache.kafka.connect.connector.policy."
_POLICY_SUFFIX = "ConnectorClientConfigOverridePolicy"
# Worker settings Connect defines for all its clients (CommonClientConfigs in DistributedConfig).
WORKER_CLIENT_KEYS = frozenset(
    {
        "client.id",
        "client.dns.lookup",
        "connections.max.idle.ms",
        "metadata.max.age.ms",
        "receive.buffer.bytes",
        "reconnect.backoff.max.ms",
        "reconnect.backoff.ms",
        "request.timeout.ms",
        "retry.backoff.max.ms",
        "retry.backoff.ms",
        "send.buffer.bytes",
        "socket.connection.setup.timeout.max.ms",
        "socket.connection.setup.timeout.ms",
    }
)


class ClientKind(enum.StrEnum):
    PRODUCER = "producer"
    CONSUMER = "consumer"
    ADMIN = "admin"

    @property
    def prefix(self) -> str:
        return f"{self.value}."

    @property
    def override_prefix(self) -> str:
        return f"{self.value}.override."


@dataclass(frozen=True)
class OverridePolicy:
    """`connector.client.config.override.policy` and, for Allowlist, the keys it allows."""

    name: str = "All"
    allowlist: frozenset[str] = frozenset()

    @classmethod
    def from_worker(cls, props: Mapping[str, object]) -> OverridePolicy:
        raw = str(props.get(POLICY_CONFIG) or "All").strip()
        name = raw.removeprefix(_POLICY_PACKAGE).removesuffix(_POLICY_SUFFIX)
        known = {"All", "None", "Principal", "Allowlist"}
        if name not in known:
            raise ClientSettingsError(
                POLICY_CONFIG, f"{POLICY_CONFIG} must be one of All, None, Principal, Allowlist; not {raw!r}"
            )
        listed = str(props.get(ALLOWLIST_CONFIG) or "")
        return cls(name, frozenset(k.strip() for k in listed.split(",") if k.strip()))

    def allows(self, key: str) -> bool:
        """Whether a connector may override the client setting `key` (unprefixed)."""
        if self.name == "All":
            return True
        if self.name == "Principal":
            return key in PRINCIPAL_KEYS
        if self.name == "Allowlist":
            return key in self.allowlist
        return False

    def violations(self, connector_config: Mapping[str, object]) -> dict[str, str]:
        """{`producer.override.x`: Connect's message} for each override the policy refuses."""
        out = {}
        for kind in ClientKind:
            for key in overrides(connector_config, kind):
                if not self.allows(key):
                    out[kind.override_prefix + key] = (
                        f"The '{self.name}' policy does not allow '{key}' to be overridden in the connector "
                        "configuration."
                    )
        return out


def overrides(connector_config: Mapping[str, object], kind: ClientKind) -> dict[str, str]:
    """The connector's `<kind>.override.*` settings, prefix stripped."""
    return _with_prefix(connector_config, kind.override_prefix)


def worker_clients(props: Mapping[str, object]) -> KafkaClientSettings:
    """The settings of the worker's own clients (stores, log followers, group membership, metadata admins)."""
    top = {k: v for k, v in props.items() if is_security_key(k) or k in WORKER_CLIENT_KEYS}
    return KafkaClientSettings.from_properties({"bootstrap.servers": _bootstrap(props), **top})


def task_clients(
    worker_props: Mapping[str, object],
    kind: ClientKind | str,
    connector_config: Mapping[str, object] | None = None,
    policy: OverridePolicy | None = None,
) -> KafkaClientSettings:
    """The settings of a task's (or a connector's) producer, consumer or admin, as Connect composes them.
    Raises ClientOverrideError when a connector override is not allowed by the worker's policy."""
    kind = ClientKind(kind)
    merged: dict[str, object] = {"bootstrap.servers": _bootstrap(worker_props)}
    if kind is ClientKind.ADMIN:
        merged.update(
            (k, v)
            for k, v in worker_props.items()
            if (is_security_key(k) or k in WORKER_CLIENT_KEYS)
            and not k.startswith(("admin.", "producer.", "consumer."))
        )
    prefixed = _with_prefix(worker_props, kind.prefix)
    merged.update(prefixed)
    wanted: dict[str, str] = {}
    if connector_config is not None:
        wanted = overrides(connector_config, kind)
        policy = policy or OverridePolicy.from_worker(worker_props)
        refused = sorted(k for k in wanted if not policy.allows(k))
        if refused:
            raise ClientOverrideError(
                kind.override_prefix + refused[0],
                f"Client Config Overrides not allowed: the '{policy.name}' policy ({POLICY_CONFIG}) does not allow "
                f"{', '.join(kind.override_prefix + k for k in refused)} in the connector configuration",
            )
        merged.update(wanted)
    try:
        return KafkaClientSettings.from_properties(merged)
    except ClientSettingsError as exc:
        written = _written_as(exc.key, kind, wanted, prefixed, worker_props)
        if written == exc.key:
            raise
        raise type(exc)(written, f"{written}: {exc}") from None


def _written_as(
    key: str, kind: ClientKind, wanted: Mapping[str, str], prefixed: Mapping[str, str], worker: Mapping[str, object]
) -> str:
    """Where the user wrote (or, for a missing one, should write) the setting `key` of a task client: under the
    connector's override prefix, the worker's client prefix, or at the worker's top level (admins only)."""
    if key in wanted:
        return kind.override_prefix + key
    if key in prefixed:
        return kind.prefix + key
    if kind is ClientKind.ADMIN and key in worker:
        return key
    if wanted:  # missing: next to the overrides that asked for it
        return kind.override_prefix + key
    return key if kind is ClientKind.ADMIN and not prefixed else kind.prefix + key


def _bootstrap(props: Mapping[str, object]) -> str:
    return str(props.get("bootstrap.servers") or DEFAULT_BOOTSTRAP)


def _with_prefix(props: Mapping[str, object], prefix: str) -> dict[str, str]:
    return {k[len(prefix) :]: str(v) for k, v in props.items() if k.startswith(prefix) and v is not None}


@dataclass(frozen=True)
class WorkerClients:
    """One worker's Kafka client settings, composed as Connect does: its own clients' (`worker`) and each
    task client's (`task`). `from_worker` checks them all, so a worker with an unusable client setting is
    refused at start with the key to fix; compositions are parsed once and kept."""

    properties: Mapping[str, object]
    policy: OverridePolicy = field(default_factory=OverridePolicy)
    _cache: dict[tuple[object, ...], KafkaClientSettings] = field(default_factory=dict, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def from_worker(cls, props: Mapping[str, object]) -> WorkerClients:
        """Raises ClientSettingsError naming the key (e.g. `consumer.ssl.truststore.location`) when the worker's
        own settings or its `producer.`/`consumer.`/`admin.` ones cannot be used."""
        clients = cls(dict(props), OverridePolicy.from_worker(props))
        _ = clients.worker
        for kind in ClientKind:
            clients.task(kind)
        return clients

    @functools.cached_property
    def worker(self) -> KafkaClientSettings:
        """The worker's own clients: stores, log followers, group membership, metadata."""
        return worker_clients(self.properties)

    def task(self, kind: ClientKind | str, connector_config: Mapping[str, object] | None = None) -> KafkaClientSettings:
        """A task's (or connector's) producer, consumer or admin; raises ClientOverrideError for an override the
        policy refuses."""
        kind = ClientKind(kind)
        wanted = overrides(connector_config or {}, kind)
        key = (kind, tuple(sorted(wanted.items())))
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None:
            return cached
        settings = task_clients(self.properties, kind, connector_config, self.policy)
        with self._lock:
            return self._cache.setdefault(key, settings)
