"""Dedicated-mode configuration: Apache MirrorMaker 2's `mm2.properties`, as MirrorMakerConfig reads it.

Caller: `sparklink mirror-maker` (cli/mirror_maker.py). The file names clusters (`clusters = A, B`),
their clients (`A.bootstrap.servers`, `A.security.protocol`, `A.producer.*`, ...), flows
(`A->B.enabled = true`) and settings at three levels: top level (`topics = .*`), per cluster
(`A.<key>`, turned into `source.cluster.<key>`/`target.cluster.<key>` and `source.<client>.*`)
and per flow (`A->B.<key>`, which wins). Like MirrorMaker, one worker ("herder") runs per
source->target pair whose flow or heartbeats are enabled, against the target cluster, with internal
topics `mm2-{configs,offsets,status}.<source>.internal` and group `<source>-mm2`, and three
connectors named after their classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sparklink.api.config import read_properties
from sparklink.connectors.mirror import config as mm
from sparklink.connectors.mirror.config import is_client_key

CONNECTORS = (
    "org.apache.kafka.connect.mirror.MirrorSourceConnector",
    "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
    "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
)
# Connect's own connector keys, which MirrorMakerConfig#allConfigNames also passes through.
_CONNECT_KEYS = {
    "name",
    "connector.class",
    "tasks.max",
    "tasks.max.enforce",
    "key.converter",
    "value.converter",
    "header.converter",
    "config.action.reload",
    "transforms",
    "predicates",
    "errors.retry.timeout",
    "errors.retry.delay.max.ms",
    "errors.tolerance",
    "errors.log.enable",
    "errors.log.include.messages",
    "exactly.once.support",
    "transaction.boundary",
    "offsets.storage.topic",
    "metric.reporters",
    "metric.names.formats",
    "security.protocol",
    "config.providers",
}
_MM2_KEYS = (set(mm.SOURCE_DEF.keys) | set(mm.CHECKPOINT_DEF.keys) | set(mm.HEARTBEAT_DEF.keys)) - {
    mm.SOURCE_BOOTSTRAP,
    mm.TARGET_BOOTSTRAP,
}
_WORKER_PREFIXES = (
    "offset.storage",
    "config.storage",
    "status.storage",
    "key.converter",
    "value.converter",
    "header.converter",
    "task",
    "worker",
    "replication.policy",
    "spark.",
    "sparklink.",
)
_CLIENT_ROLES = ("consumer", "producer", "admin")


@dataclass(frozen=True)
class Flow:
    source: str
    target: str

    def __str__(self) -> str:
        return f"{self.source}->{self.target}"


@dataclass(frozen=True)
class MirrorMakerConfig:
    props: dict[str, str]

    @classmethod
    def load(cls, path: Path) -> MirrorMakerConfig:
        return cls(read_properties(path))

    def clusters(self) -> list[str]:
        raw = self.props.get("clusters")
        if raw is None:
            raise ValueError('Missing required configuration "clusters" which has no default value.')
        return [c.strip() for c in raw.split(",") if c.strip()]

    def flows(self) -> list[Flow]:
        """MirrorMakerConfig#clusterPairs: enabled flows, plus every pair that only emits heartbeats."""
        heartbeats = self.props.get(mm.EMIT_HEARTBEATS, "true").strip().lower() == "true"
        out = []
        for source in self.clusters():
            for target in self.clusters():
                if source == target:
                    continue
                prefix = f"{source}->{target}."
                enabled = self.props.get(prefix + "enabled", "false").strip().lower() == "true"
                beats = self.props.get(prefix + mm.EMIT_HEARTBEATS)
                beating = heartbeats if beats is None else beats.strip().lower() == "true"
                if enabled or beating:
                    out.append(Flow(source, target))
        return out

    def cluster_props(self, cluster: str) -> dict[str, str]:
        """`<cluster>.x` stripped; client keys copied to producer/consumer/admin; top-level client keys as defaults."""
        props = _stripped(self.props, f"{cluster}.")
        for key in [k for k in props if is_client_key(k)]:
            for role in _CLIENT_ROLES:
                props.setdefault(f"{role}.{key}", props[key])
        for key in [k for k in self.props if is_client_key(k)]:
            for role in _CLIENT_ROLES:
                props.setdefault(f"{role}.{key}", self.props[key])
            props.setdefault(key, self.props[key])
        return props

    def worker_config(self, flow: Flow) -> dict[str, str]:
        """The worker of one flow: on the target cluster, MM2's internal topic names and group.

        As MirrorMakerConfig#workerConfig, the target cluster's properties go in whole: its bootstrap servers
        and security settings at the top level configure the worker's own clients (internal topics, group
        membership), and their copies under `producer.`/`consumer.`/`admin.` the clients of its tasks."""
        props = dict(self.cluster_props(flow.target))
        props.update({k: v for k, v in self.props.items() if k.startswith(_WORKER_PREFIXES)})
        props.setdefault("client.id", str(flow))
        props.setdefault("group.id", f"{flow.source}-mm2")
        props.setdefault("offset.storage.topic", f"mm2-offsets.{flow.source}.internal")
        props.setdefault("status.storage.topic", f"mm2-status.{flow.source}.internal")
        props.setdefault("config.storage.topic", f"mm2-configs.{flow.source}.internal")
        return props

    def connector_config(self, flow: Flow, connector_class: str) -> dict[str, str]:
        """MirrorMakerConfig#connectorBaseConfig."""
        props = {k: v for k, v in self.props.items() if _is_connector_key(k)}
        props.update({k: v for k, v in self.props.items() if k.startswith(("config.providers", "replication.policy"))})
        for prefix, cluster in (("source", flow.source), ("target", flow.target)):
            cluster_props = self.cluster_props(cluster)
            for key, value in cluster_props.items():
                if key.startswith(_CLIENT_ROLES):
                    props[f"{prefix}.{key}"] = value
                else:
                    props[f"{prefix}.cluster.{key}"] = value
        name = connector_class.rsplit(".", 1)[-1]
        props.setdefault("name", name)
        props.setdefault("connector.class", connector_class)
        props.setdefault(mm.SOURCE_ALIAS, flow.source)
        props.setdefault(mm.TARGET_ALIAS, flow.target)
        props.update(_stripped(self.props, f"{flow}."))
        props.setdefault(mm.ENABLED, "false")
        return props


def _stripped(props: dict[str, str], prefix: str) -> dict[str, str]:
    return {k.removeprefix(prefix): v for k, v in props.items() if k.startswith(prefix)}


def _is_connector_key(key: str) -> bool:
    return (
        key in _MM2_KEYS
        or key in _CONNECT_KEYS
        or key.startswith(("ssl.", "sasl.", "errors.", "sparklink."))
        or key.startswith(("producer.override.", "consumer.override.", "admin.override."))
    )
