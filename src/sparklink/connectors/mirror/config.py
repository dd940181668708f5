"""MirrorMaker 2 config names, defaults and client-config prefixes, as in connect-mirror 4.3.1.

Callers: the three mirror connectors (their ConfigDefs and parsed settings) and dedicated mode.
Names and defaults follow Mirror{Connector,Source,Checkpoint,Heartbeat}Config and the Default*Filter
classes. Cluster clients are built like MirrorConnectorConfig does: `source.cluster.<k>` /
`target.cluster.<k>` (only client keys: bootstrap.servers, security.protocol, ssl.*, sasl.*), then
`consumer.*` / `producer.*` / `admin.*`, then `source.consumer.*`, `target.producer.*`, ... on top.
Every client takes the whole of its config, security included, through sparklink.clients: the Java ones
(Spark's Kafka source and sink, the interceptors' producers) as Java properties, the control plane's
confluent-kafka clients (admins, the offset-sync producer, the offset-sync and checkpoint readers) rendered
for librdkafka (`rdkafka`).

sparklink additions: `source.cluster.bootstrap.servers` and `target.cluster.bootstrap.servers` are
declared (required), so a missing one fails validation instead of the first admin call.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparklink.api import config as cfg
from sparklink.clients.errors import ClientSettingsError
from sparklink.clients.settings import KafkaClientSettings
from sparklink.connectors.mirror.policy import DEFAULT_POLICY, POLICIES, ReplicationPolicy

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------- names
ENABLED = "enabled"
SOURCE_ALIAS = "source.cluster.alias"
TARGET_ALIAS = "target.cluster.alias"
SOURCE_BOOTSTRAP = "source.cluster.bootstrap.servers"
TARGET_BOOTSTRAP = "target.cluster.bootstrap.servers"
TOPICS = "topics"
TOPICS_EXCLUDE = "topics.exclude"
GROUPS = "groups"
GROUPS_EXCLUDE = "groups.exclude"
OFFSET_LAG_MAX = "offset.lag.max"
OFFSET_SYNCS_LOCATION = "offset-syncs.topic.location"
EMIT_OFFSET_SYNCS = "emit.offset-syncs.enabled"
EMIT_CHECKPOINTS = "emit.checkpoints.enabled"
EMIT_CHECKPOINTS_INTERVAL = "emit.checkpoints.interval.seconds"
SYNC_GROUP_OFFSETS = "sync.group.offsets.enabled"
SYNC_GROUP_OFFSETS_INTERVAL = "sync.group.offsets.interval.seconds"
EMIT_HEARTBEATS = "emit.heartbeats.enabled"
EMIT_HEARTBEATS_INTERVAL = "emit.heartbeats.interval.seconds"
TASK_PARTITIONS = "task.assigned.partitions"
TASK_GROUPS = "task.assigned.groups"
TASK_INDEX = "task.index"

TOPICS_EXCLUDE_DEFAULT = ["mm2.*\\.internal", ".*\\.replica", "__.*"]
GROUPS_EXCLUDE_DEFAULT = ["console-consumer-.*", "connect-.*", "__.*"]
CONFIG_PROPERTIES_EXCLUDE_DEFAULT = [
    "follower.replication.throttled.replicas",
    "leader.replication.throttled.replicas",
    "message.timestamp.difference.max.ms",
    "log.message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms",
    "message.timestamp.type",
    "unclean.leader.election.enable",
    "min.insync.replicas",
]

# Defaults of the pluggable classes; sparklink implements these and only these.
TOPIC_FILTER = "org.apache.kafka.connect.mirror.DefaultTopicFilter"
GROUP_FILTER = "org.apache.kafka.connect.mirror.DefaultGroupFilter"
CONFIG_PROPERTY_FILTER = "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter"
FORWARDING_ADMIN = "org.apache.kafka.clients.admin.ForwardingAdmin"


def _only(*names: str) -> cfg.Validator:
    allowed = {*names, *(n.rsplit(".", 1)[-1] for n in names)}

    def check(_name: str, value: Any) -> str | None:
        return None if str(value) in allowed else f"sparklink supports only {', '.join(names)}"

    return check


def _policy(_name: str, value: Any) -> str | None:
    return None if str(value) in POLICIES else f"Class {value} could not be found."


def _key(name: str, type_: cfg.ConfigType, doc: str, default: Any = cfg.NO_DEFAULT, **kw: Any) -> cfg.ConfigKey:
    return cfg.ConfigKey(name, type_, doc, default, group="MirrorMaker", **kw)


def _fixed_class(name: str, doc: str, default: str) -> cfg.ConfigKey:
    """A plugin class key of MM2 that sparklink supports only at its default (the one it implements)."""
    return _key(name, "CLASS", doc, default, importance="LOW", validator=_only(default))


def _base() -> cfg.ConfigDef:
    return (
        cfg.ConfigDef()
        .define(_key(ENABLED, "BOOLEAN", "Whether to replicate source->target.", True, importance="LOW"))
        .define(_key(SOURCE_ALIAS, "STRING", "Alias of source cluster", importance="HIGH", validator=cfg.non_empty))
        .define(_key(TARGET_ALIAS, "STRING", "Alias of target cluster. Used in metrics reporting.", "target"))
        .define(_key(SOURCE_BOOTSTRAP, "STRING", "Bootstrap servers of the source cluster.", importance="HIGH"))
        .define(_key(TARGET_BOOTSTRAP, "STRING", "Bootstrap servers of the target cluster.", importance="HIGH"))
        .define(_key("admin.timeout.ms", "LONG", "Timeout for administrative tasks, e.g. detecting new topics.", 60000))
        .define(
            _key(
                "replication.policy.class",
                "CLASS",
                "Class which defines the remote topic naming convention.",
                DEFAULT_POLICY,
                importance="LOW",
                validator=_policy,
            )
        )
        .define(
            _key("replication.policy.separator", "STRING", "Separator used in remote topic naming convention.", ".")
        )
        .define(
            _key(
                "replication.policy.internal.topic.separator.enabled",
                "BOOLEAN",
                "Whether to use replication.policy.separator to control the names of topics used for checkpoints "
                "and offset syncs.",
                True,
                importance="LOW",
            )
        )
        .define(
            _fixed_class(
                "forwarding.admin.class",
                "Class which extends ForwardingAdmin to define custom cluster resource management.",
                FORWARDING_ADMIN,
            )
        )
    )


def _topic_filter(keys: cfg.ConfigDef) -> cfg.ConfigDef:
    return (
        keys.define(
            _key(TOPICS, "LIST", "Topics to replicate. Supports comma-separated topic names and regexes.", [".*"])
        )
        .define(
            _key(
                TOPICS_EXCLUDE,
                "LIST",
                "Excluded topics. Supports comma-separated topic names and regexes. Excludes take precedence "
                "over includes.",
                TOPICS_EXCLUDE_DEFAULT,
            )
        )
        .define(_fixed_class("topic.filter.class", "TopicFilter to use. Selects topics to replicate.", TOPIC_FILTER))
    )


def _location(keys: cfg.ConfigDef) -> cfg.ConfigDef:
    return keys.define(
        _key(
            OFFSET_SYNCS_LOCATION,
            "STRING",
            "The location (source/target) of the offset-syncs topic.",
            "source",
            importance="LOW",
            validator=cfg.one_of(["source", "target"]),
            recommended=("source", "target"),
        )
    )


def _interval(keys: cfg.ConfigDef, stem: str, what: str, enabled: bool, seconds: int) -> cfg.ConfigDef:
    return keys.define(_key(f"{stem}.enabled", "BOOLEAN", f"Whether to {what}.", enabled, importance="LOW")).define(
        _key(f"{stem}.interval.seconds", "LONG", f"Frequency to {what}.", seconds, importance="LOW")
    )


def source_def() -> cfg.ConfigDef:
    keys = _topic_filter(_base())
    keys.define(
        _key(
            "config.properties.exclude",
            "LIST",
            "Topic config properties that should not be replicated. Supports comma-separated property names and "
            "regexes.",
            CONFIG_PROPERTIES_EXCLUDE_DEFAULT,
        )
    )
    keys.define(
        _fixed_class(
            "config.property.filter.class",
            "ConfigPropertyFilter to use. Selects topic config properties to replicate.",
            CONFIG_PROPERTY_FILTER,
        )
    )
    keys.define(
        _key(
            "use.defaults.from",
            "STRING",
            "Which cluster's defaults (source or target) to use when syncing topic configurations that have default "
            "values.",
            "target",
            validator=cfg.one_of(["source", "target"]),
        )
    )
    keys.define(
        _key("consumer.poll.timeout.ms", "LONG", "Timeout when polling source cluster.", 1000, importance="LOW")
    )
    _interval(keys, "refresh.topics", "periodically check for new topics and partitions", True, 600)
    _interval(keys, "sync.topic.configs", "periodically configure remote topics to match upstream topics", True, 600)
    _interval(keys, "sync.topic.acls", "periodically configure remote topic ACLs to match upstream", True, 600)
    keys.define(_key("replication.factor", "INT", "Replication factor for newly created remote topics.", 2))
    keys.define(_key("offset-syncs.topic.replication.factor", "SHORT", "Replication factor for offset-syncs topic.", 3))
    keys.define(_key(OFFSET_LAG_MAX, "LONG", "How out-of-sync a remote partition can be before it is resynced.", 100))
    _location(keys)
    keys.define(
        _key(
            EMIT_OFFSET_SYNCS,
            "BOOLEAN",
            "Whether to store the new offset of the replicated records in offset-syncs topic or not.",
            True,
            importance="LOW",
        )
    )
    keys.define(
        _key(
            "heartbeats.replication.enabled",
            "BOOLEAN",
            "Whether to replicate the heartbeats topics even when the topic filter does not include them.",
            True,
            importance="LOW",
        )
    )
    return keys


def checkpoint_def() -> cfg.ConfigDef:
    keys = _topic_filter(_base())
    keys.define(
        _key("consumer.poll.timeout.ms", "LONG", "Timeout when polling source cluster.", 1000, importance="LOW")
    )
    keys.define(
        _key(GROUPS, "LIST", "Consumer groups to replicate. Supports comma-separated group IDs and regexes.", [".*"])
    )
    keys.define(
        _key(
            GROUPS_EXCLUDE,
            "LIST",
            "Exclude groups. Supports comma-separated group IDs and regexes. Excludes take precedence over includes.",
            GROUPS_EXCLUDE_DEFAULT,
        )
    )
    keys.define(
        _fixed_class("group.filter.class", "GroupFilter to use. Selects consumer groups to replicate.", GROUP_FILTER)
    )
    _interval(keys, "refresh.groups", "periodically check for new consumer groups", True, 600)
    _interval(keys, "emit.checkpoints", "replicate consumer offsets to target cluster", True, 60)
    _interval(keys, "sync.group.offsets", "periodically write translated offsets to idle target groups", False, 60)
    keys.define(_key("checkpoints.topic.replication.factor", "SHORT", "Replication factor for checkpoints topic.", 3))
    _location(keys)
    return keys


def heartbeat_def() -> cfg.ConfigDef:
    keys = _base()
    _interval(keys, "emit.heartbeats", "emit heartbeats to target cluster", True, 1)
    keys.define(_key("heartbeats.topic.replication.factor", "SHORT", "Replication factor for heartbeats topic.", 3))
    return keys


SOURCE_DEF, CHECKPOINT_DEF, HEARTBEAT_DEF = source_def(), checkpoint_def(), heartbeat_def()


# ---------------------------------------------------------------------- parsed settings
@dataclass(frozen=True)
class MirrorSettings:
    """A connector's config, parsed, with its policy and internal topic names."""

    raw: dict[str, str]
    values: dict[str, Any]
    policy: ReplicationPolicy

    @classmethod
    def parse(cls, definition: cfg.ConfigDef, config: Mapping[str, str]) -> MirrorSettings:
        raw = {str(k): str(v) for k, v in config.items()}
        return cls(raw, definition.parse(raw), ReplicationPolicy.from_config(raw))

    def __getitem__(self, key: str) -> Any:
        return self.values[key] if key in self.values else self.raw[key]

    @property
    def source(self) -> str:
        return str(self.values[SOURCE_ALIAS])

    @property
    def target(self) -> str:
        return str(self.values[TARGET_ALIAS])

    @property
    def enabled(self) -> bool:
        return bool(self.values.get(ENABLED, True))

    @property
    def syncs_on_source(self) -> bool:
        return str(self.values.get(OFFSET_SYNCS_LOCATION, "source")) == "source"

    def offset_syncs_topic(self) -> str:
        # The topic is named after the *other* cluster (MirrorSourceConfig#offsetSyncsTopic).
        return self.policy.offset_syncs_topic(self.target if self.syncs_on_source else self.source)

    def checkpoints_topic(self) -> str:
        return self.policy.checkpoints_topic(self.source)

    def interval(self, stem: str) -> float | None:
        """`<stem>.interval.seconds`, or None when `<stem>.enabled` is false (MM2's negative interval)."""
        if not self.values.get(f"{stem}.enabled", True):
            return None
        return float(self.values[f"{stem}.interval.seconds"])

    # Java client configs (Spark's Kafka reader/writer take these as `kafka.<key>` options).
    def source_consumer(self) -> dict[str, str]:
        props = client_config(self.raw, "source.cluster.", "consumer.", "source.consumer.")
        props["enable.auto.commit"] = "false"
        props.setdefault("auto.offset.reset", "earliest")
        return props

    def target_consumer(self) -> dict[str, str]:
        props = client_config(self.raw, "target.cluster.", "consumer.", "target.consumer.")
        props["enable.auto.commit"] = "false"
        props.setdefault("auto.offset.reset", "earliest")
        return props

    def source_producer(self) -> dict[str, str]:
        return client_config(self.raw, "source.cluster.", "producer.", "source.producer.")

    def target_producer(self) -> dict[str, str]:
        return client_config(self.raw, "target.cluster.", "producer.", "target.producer.")

    def source_admin(self) -> dict[str, str]:
        return client_config(self.raw, "source.cluster.", "admin.", "source.admin.")

    def target_admin(self) -> dict[str, str]:
        return client_config(self.raw, "target.cluster.", "admin.", "target.admin.")

    def offset_syncs_admin(self) -> dict[str, str]:
        return self.source_admin() if self.syncs_on_source else self.target_admin()

    def offset_syncs_producer(self) -> dict[str, str]:
        return self.source_producer() if self.syncs_on_source else self.target_producer()

    def offset_syncs_consumer(self) -> dict[str, str]:
        return self.source_consumer() if self.syncs_on_source else self.target_consumer()


def is_client_key(key: str) -> bool:
    """MirrorClientConfig.CLIENT_CONFIG_DEF: bootstrap, security protocol, SSL and SASL settings."""
    return key in ("bootstrap.servers", "security.protocol") or key.startswith(("ssl.", "sasl."))


def client_config(config: Mapping[str, str], cluster: str, role: str, cluster_role: str) -> dict[str, str]:
    props = {k.removeprefix(cluster): v for k, v in config.items() if k.startswith(cluster)}
    props = {k: v for k, v in props.items() if is_client_key(k)}
    props.update({k.removeprefix(role): v for k, v in config.items() if k.startswith(role)})
    props.update({k.removeprefix(cluster_role): v for k, v in config.items() if k.startswith(cluster_role)})
    return props


def client_errors(config: Mapping[str, str]) -> dict[str, list[str]]:
    """Client settings no client could use (an unknown security.protocol, a missing key store, JAAS text
    without a password, ...), each under the key the config holds it in; for the connectors' `validate`."""
    errors: dict[str, list[str]] = {}
    for cluster in ("source", "target"):
        for role in ("consumer", "producer", "admin"):
            props = client_config(config, f"{cluster}.cluster.", f"{role}.", f"{cluster}.{role}.")
            if "bootstrap.servers" not in props:
                continue  # reported as the missing bootstrap servers
            try:
                client_settings(props)
            except ClientSettingsError as exc:
                key = _written_as(config, exc.key, cluster, role)
                message = f"{key}: {exc}"
                if message not in errors.get(key, []):
                    errors.setdefault(key, []).append(message)
    return errors


def _written_as(config: Mapping[str, str], key: str, cluster: str, role: str) -> str:
    """Where a client key of this cluster and role comes from (the last of MirrorConnectorConfig's layers
    that holds it)."""
    for candidate in (f"{cluster}.{role}.{key}", f"{role}.{key}", f"{cluster}.cluster.{key}"):
        if candidate in config:
            return candidate
    return f"{cluster}.cluster.{key}"


def client_settings(props: Mapping[str, str]) -> KafkaClientSettings:
    """A client's Java config parsed by sparklink.clients, once per distinct config: tasks and their restarts
    ask again and again, and parsing reads key stores (a JKS one is converted with keytool for librdkafka)."""
    return _parsed(tuple(sorted((str(k), str(v)) for k, v in props.items())))


@functools.lru_cache(maxsize=128)
def _parsed(items: tuple[tuple[str, str], ...]) -> KafkaClientSettings:
    return KafkaClientSettings.from_properties(dict(items))


def rdkafka(props: Mapping[str, str], **extra: Any) -> dict[str, Any]:
    """A confluent-kafka client's settings (the control plane) from a Java client config: bootstrap servers,
    security in librdkafka's words, the client keys librdkafka knows by the same name, then `extra`."""
    return client_settings(props).librdkafka(**extra)
