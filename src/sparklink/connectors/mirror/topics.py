"""Which topics a MirrorSourceConnector replicates, and keeping their remote twins in step.

Caller: MirrorSourceConnector's scheduled jobs (source.py). Ports of MirrorSourceConnector's
topic logic: the topic filter plus heartbeats, minus internal topics and cycles; remote topics
created with the source's partition count and configs (`config.properties.exclude`,
`use.defaults.from`), grown when the source grows; configs re-synced incrementally; topic ACLs
copied with ALLOW ALL downgraded to READ and ALLOW WRITE left out.
"""

from __future__ import annotations

import logging
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from sparklink.clients.admin import RenewingAdmin
from sparklink.connectors.mirror import admin
from sparklink.connectors.mirror.config import TOPICS, TOPICS_EXCLUDE, MirrorSettings, rdkafka
from sparklink.connectors.mirror.filters import ConfigPropertyFilter, IncludeExclude, compile_patterns

log = logging.getLogger(__name__)
TopicPartitions = list[tuple[str, int]]


class RemoteTopics:
    """A flow's topic selection and the target-side topic operations, over two admin clients."""

    def __init__(self, settings: MirrorSettings) -> None:
        self.settings = s = settings
        self.policy = s.policy
        self.topic_filter = IncludeExclude.of(s[TOPICS], s[TOPICS_EXCLUDE])
        self.config_filter = ConfigPropertyFilter(
            compile_patterns(s["config.properties.exclude"]), str(s["use.defaults.from"])
        )
        self.source_admin = RenewingAdmin(rdkafka(s.source_admin()))
        self.target_admin = RenewingAdmin(rdkafka(s.target_admin()))
        self._acl_logged = False

    # ------------------------------------------------------------------ selection
    def should_replicate(self, topic: str) -> bool:
        wanted = self.topic_filter.accepts(topic) or (
            bool(self.settings["heartbeats.replication.enabled"]) and self.policy.is_heartbeats_topic(topic)
        )
        return wanted and not self.policy.is_internal_topic(topic) and not self.is_cycle(topic)

    def is_cycle(self, topic: str) -> bool:
        """Whether `topic` came from the target cluster (recursing through every hop)."""
        source = self.policy.topic_source(topic)
        if source is None:
            return False
        if source == self.settings.target:
            return True
        upstream = self.policy.upstream_topic(topic)
        if upstream is None or upstream == topic:
            return False  # identity-like policies cannot tell
        return self.is_cycle(upstream)

    def remote(self, topic: str) -> str:
        return self.policy.format_remote_topic(self.settings.source, topic)

    def find_source(self) -> TopicPartitions:
        topics = admin.topic_partitions(self.source_admin)
        return sorted((t, p) for t, n in topics.items() if self.should_replicate(t) for p in range(n))

    def find_target(self) -> TopicPartitions:
        checkpoints = self.settings.checkpoints_topic()
        topics = admin.topic_partitions(self.target_admin)
        return sorted(
            (t, p)
            for t, n in topics.items()
            if self.policy.topic_source(t) == self.settings.source and t != checkpoints
            for p in range(n)
        )

    # ------------------------------------------------------------------ target-side changes
    def create_missing(self, known_source: TopicPartitions, known_target: TopicPartitions) -> None:
        """MirrorSourceConnector#computeAndCreateTopicPartitions: new remote topics, more partitions."""
        source_counts, target_counts = _counts(known_source), _counts(known_target)
        new_topics = [t for t in source_counts if self.remote(t) not in target_counts]
        if new_topics:
            configs = admin.describe_topic_configs(self.source_admin, new_topics)
            replication = int(self.settings["replication.factor"])
            admin.create_topics(
                self.target_admin,
                [
                    NewTopic(
                        self.remote(t),
                        source_counts[t],
                        replication,
                        config={e.name: e.value for e in self.target_config(configs.get(t, []), False) if e.value},
                    )
                    for t in new_topics
                ],
            )
        grow = {
            self.remote(t): n
            for t, n in source_counts.items()
            if self.remote(t) in target_counts and n > target_counts[self.remote(t)]
        }
        admin.create_partitions(self.target_admin, grow)

    def target_config(self, entries: list[admin.TopicConfig], incremental: bool) -> list[admin.TopicConfig]:
        """MirrorSourceConnector#targetConfig: which source topic properties go to the remote topic."""
        use_default = self.config_filter.should_replicate_source_default
        return [
            e
            for e in entries
            if (incremental or (e.is_default and use_default(e.name)) or not e.is_default)
            and not e.is_read_only
            and not e.is_sensitive
            and not e.static_broker
            and self.config_filter.should_replicate(e.name)
        ]

    def sync_configs(self, known_source: TopicPartitions, known_target: TopicPartitions) -> None:
        """Incremental alter: set replicated properties, delete defaults unless `use.defaults.from=source`."""
        target_topics = {t for t, _ in known_target}
        replicated = sorted({t for t, _ in known_source if self.remote(t) in target_topics})
        configs = admin.describe_topic_configs(self.source_admin, replicated)
        changes = {
            self.remote(topic): [
                (e.name, e.value, e.is_default and not self.config_filter.should_replicate_source_default(e.name))
                for e in self.target_config(entries, True)
            ]
            for topic, entries in configs.items()
        }
        admin.alter_topic_configs(self.target_admin, changes)

    def sync_acls(self) -> None:
        # None matches any name, principal and host (librdkafka's NULL filter fields).
        anything: Any = None
        query = AclBindingFilter(
            ResourceType.TOPIC,
            anything,
            ResourcePatternType.ANY,
            anything,
            anything,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        try:
            with self.source_admin.request() as source:
                bindings = source.describe_acls(query, request_timeout=admin.TIMEOUT_S).result(admin.TIMEOUT_S)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.SECURITY_DISABLED:
                raise
            if not self._acl_logged:
                self._acl_logged = True
                log.info(
                    "No ACL authorizer is configured on the source Kafka cluster, so no topic ACL syncing will take "
                    "place. Consider disabling topic ACL syncing by setting sync.topic.acls.enabled to 'false'."
                )
            return
        wanted = [
            AclBinding(
                ResourceType.TOPIC,
                self.remote(b.name),
                ResourcePatternType.LITERAL,
                b.principal,
                b.host,
                AclOperation.READ if b.operation == AclOperation.ALL else b.operation,
                b.permission_type,
            )
            for b in bindings
            if b.resource_pattern_type == ResourcePatternType.LITERAL
            and not (b.permission_type == AclPermissionType.ALLOW and b.operation == AclOperation.WRITE)
            and self.should_replicate(b.name)
        ]
        if wanted:
            with self.target_admin.request() as target:
                created = target.create_acls(wanted, request_timeout=admin.TIMEOUT_S)
                for binding, future in created.items():
                    try:
                        future.result(admin.TIMEOUT_S)
                    except KafkaException as exc:
                        log.warning("Could not sync ACL of topic %s: %s", binding.name, exc)


def _counts(partitions: TopicPartitions) -> dict[str, int]:
    out: dict[str, int] = {}
    for topic, _ in partitions:
        out[topic] = out.get(topic, 0) + 1
    return out
