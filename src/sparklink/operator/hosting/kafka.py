"""Hosts run the KRaft nodes of a Kafka resource: `kafka_local.LocalKafkaHost` as processes on this
machine (a platform KafkaCluster with broker-state agents, rolled by sparklink's roller), and
`kafka_kubernetes.KubernetesKafkaHost` as the objects Strimzi would create in a cluster. The Kafka
reconciler sees only this protocol: it decides (the pure model), the host acts. The CAs come with the
desired cluster (the reconcile keeps them in Secrets); the host gives its nodes certificates from them, and
gives the operator's own clients (the User Operator's) their settings with `admin`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from sparklink.clients.settings import KafkaClientSettings
from sparklink.operator.model.kafka import DesiredCluster, DesiredNode
from sparklink.operator.model.kafka_changes import NodeChange, RunningNode
from sparklink.operator.model.resources import Key, Resource

# In `KafkaState.addresses`: where every plain, unauthenticated listener is served (a cluster without
# listeners of its own, made by an earlier sparklink).
PLAIN_LISTENERS = "*"


@dataclass(frozen=True)
class KafkaState:
    """What runs for one Kafka resource. `detail` says why it is not ready."""

    cluster_id: str | None
    nodes: Mapping[int, RunningNode]
    addresses: Mapping[str, tuple[tuple[str, int], ...]]  # per served listener: where clients reach it
    ready: bool
    detail: str | None = None
    default_heap: str = ""
    metadata_version: str | None = None  # what storage was formatted with (None: the jars' latest)
    can_add_brokers: bool = True
    node_ids: Mapping[str, tuple[int, ...]] | None = None  # per pool, when `nodes` does not say

    def pool_ids(self) -> dict[str, list[int]]:
        if self.node_ids is not None:
            return {pool: list(ids) for pool, ids in self.node_ids.items()}
        out: dict[str, list[int]] = {}
        for node in sorted(self.nodes.values(), key=lambda n: n.node_id):
            if node.pool is not None:
                out.setdefault(node.pool, []).append(node.node_id)
        return out


@dataclass(frozen=True)
class RollReport:
    """How a roll went: on failure, the roller's problem (its Strimzi class name) and message."""

    ok: bool
    restarted: tuple[int, ...] = ()
    reconfigured: tuple[int, ...] = ()
    reason: str | None = None
    message: str | None = None
    steps: tuple[str, ...] = field(default=())


class KafkaHost(Protocol):
    def running(self, owner: Resource) -> KafkaState | None:
        """What runs for the resource now, changing nothing (None: nothing runs or it is another resource's)."""
        ...

    def ensure(self, owner: Resource, desired: DesiredCluster, add: Sequence[DesiredNode]) -> KafkaState:
        """Create the cluster if nothing runs, adopt what runs, start nodes that died, and add `add`; never
        restarts a running node (that is the roll's)."""
        ...

    def roll(self, owner: Resource, desired: DesiredCluster, changes: Sequence[NodeChange]) -> RollReport:
        """Bring the nodes to their desired settings: restarts and dynamic updates, safely, one at a time."""
        ...

    def remove(self, key: Key) -> None:
        """The resource was deleted: stop its nodes."""
        ...

    def admin(self, owner: Resource) -> KafkaClientSettings | None:
        """The operator's own client settings for the cluster (its super-user identity: a certificate from the
        cluster CA on the mutual-TLS replication listener, as Strimzi's operator connects); None when this
        operator cannot reach the cluster."""
        ...

    def close(self) -> None:
        """The operator stops."""
        ...
