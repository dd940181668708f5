"""Remote topic naming: MirrorMaker 2's DefaultReplicationPolicy and IdentityReplicationPolicy.

Callers: every mirror connector (remote topic names, internal topic names, cycle detection) and the
checkpoint translation (renaming a group's topics). The rules follow connect-mirror-client 4.3.1
(`DefaultReplicationPolicy`, `IdentityReplicationPolicy`, `ReplicationPolicy` defaults):

- default: remote topic = `<source alias><separator><topic>`; `topic_source` is the text before the
  first separator (None when there is none); `upstream_topic` the rest;
- identity: names are kept, except topics ending in `heartbeats`, which follow the default rule;
- internal topics use the separator unless `replication.policy.internal.topic.separator.enabled`
  is false, when they keep `.`: `mm2-offset-syncs.<alias>.internal`, `<alias>.checkpoints.internal`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_POLICY = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
IDENTITY_POLICY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
POLICIES = {
    DEFAULT_POLICY: "default",
    "DefaultReplicationPolicy": "default",
    IDENTITY_POLICY: "identity",
    "IdentityReplicationPolicy": "identity",
}
HEARTBEATS_TOPIC = "heartbeats"


def _java_split(text: str, separator: str) -> list[str]:
    """`Pattern.compile(Pattern.quote(sep)).split(text)`: trailing empty strings are dropped."""
    parts = text.split(separator) if separator else [text]
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


@dataclass(frozen=True)
class ReplicationPolicy:
    """One configured policy. `kind` is "default" or "identity"."""

    kind: str = "default"
    separator: str = "."
    internal_separator_enabled: bool = True
    source_cluster_alias: str | None = None  # only the identity policy uses it (topic_source)

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> ReplicationPolicy:
        name = config.get("replication.policy.class", DEFAULT_POLICY).strip()
        kind = POLICIES.get(name)
        if kind is None:
            raise ValueError(
                f"Invalid value {name} for configuration replication.policy.class: "
                f"sparklink supports {DEFAULT_POLICY} and {IDENTITY_POLICY}"
            )
        # Like DefaultReplicationPolicy.configure: the internal-separator flag only counts when a
        # separator is configured explicitly.
        separator = config.get("replication.policy.separator")
        internal = True
        if separator is not None:
            flag = config.get("replication.policy.internal.topic.separator.enabled")
            internal = flag is None or flag.strip().lower() == "true"
        return cls(kind, "." if separator is None else separator, internal, config.get("source.cluster.alias"))

    # ------------------------------------------------------------------ remote topics
    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        if self.kind == "identity" and not self._looks_like_heartbeat(topic):
            return topic
        return f"{source_alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        if self.kind == "identity" and not self._looks_like_heartbeat(topic):
            return self.source_cluster_alias
        parts = _java_split(topic, self.separator)
        return parts[0] if len(parts) >= 2 else None

    def upstream_topic(self, topic: str) -> str | None:
        if self.kind == "identity" and not self._looks_like_heartbeat(topic):
            return topic
        source = self.topic_source(topic)
        if source is None:
            return None
        return topic[len(source) + len(self.separator) :]

    def original_topic(self, topic: str) -> str:
        upstream = self.upstream_topic(topic)
        if upstream is None or upstream == topic:
            return topic
        return self.original_topic(upstream)

    def _looks_like_heartbeat(self, topic: str) -> bool:
        return topic.endswith(HEARTBEATS_TOPIC)

    # ------------------------------------------------------------------ internal topics
    @property
    def _internal_separator(self) -> str:
        return self.separator if self.internal_separator_enabled else "."

    @property
    def _internal_suffix(self) -> str:
        return f"{self._internal_separator}internal"

    def heartbeats_topic(self) -> str:
        return HEARTBEATS_TOPIC

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        return f"mm2-offset-syncs{self._internal_separator}{cluster_alias}{self._internal_suffix}"

    def checkpoints_topic(self, cluster_alias: str) -> str:
        return f"{cluster_alias}{self._internal_separator}checkpoints{self._internal_suffix}"

    def is_checkpoints_topic(self, topic: str) -> bool:
        return topic.endswith(f"{self._internal_separator}checkpoints{self._internal_suffix}")

    def is_heartbeats_topic(self, topic: str) -> bool:
        return self.original_topic(topic) == HEARTBEATS_TOPIC

    def is_mm2_internal_topic(self, topic: str) -> bool:
        return (topic.startswith("mm2") and topic.endswith(self._internal_suffix)) or self.is_checkpoints_topic(topic)

    def is_internal_topic(self, topic: str) -> bool:
        return self.is_mm2_internal_topic(topic) or topic.startswith(("__", "."))
