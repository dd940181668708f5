"""Where nodes run and how the roller restarts them: local processes, or Kubernetes pods (planned deletions).

Caller: `executor.KafkaRoller`. `LocalNodes` drives the platform's KafkaCluster (graceful restart is
SIGTERM then start, a forced one kill -9 then start). `KubernetesPodPlanner` reads pod objects as the API
returns them and records the deletions a roll would make, for the operator to carry out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from sparklink.platform.kafka import KafkaCluster
from sparklink.roller.model import NodeRef, RestartReason


class NodeControl(Protocol):
    def nodes(self) -> list[NodeRef]: ...
    def is_ready(self, node: NodeRef) -> bool: ...
    def is_stuck(self, node: NodeRef) -> bool: ...
    def is_responsive(self, node: NodeRef) -> bool: ...
    def agent_url(self, node: NodeRef) -> str | None: ...
    def restart(self, node: NodeRef, reasons: frozenset[RestartReason]) -> None: ...
    def force_restart(self, node: NodeRef, reasons: frozenset[RestartReason]) -> None: ...
    def desired_config(self, node: NodeRef) -> dict[str, str]: ...
    def running_config(self, node: NodeRef) -> dict[str, str] | None: ...


class LocalNodes:
    """The nodes of a local KafkaCluster; desired settings are the cluster's extra and per-node config."""

    def __init__(self, cluster: KafkaCluster, stop_timeout: float = 120.0) -> None:
        self.cluster = cluster
        self.stop_timeout = stop_timeout
        self.restarts: list[tuple[int, frozenset[RestartReason], bool]] = []  # (node, reasons, forced)

    def nodes(self) -> list[NodeRef]:
        return [NodeRef(n.node_id, n.name, n.is_broker, n.is_controller) for n in self.cluster.nodes]

    def is_ready(self, node: NodeRef) -> bool:
        return self.cluster.node_ready(node.node_id)

    def is_stuck(self, node: NodeRef) -> bool:
        # Nothing restarts a local process that died: it will not start on its own, like a crash-looping pod.
        return not self.cluster.node_alive(node.node_id)

    def is_responsive(self, node: NodeRef) -> bool:
        from sparklink.platform import ports

        n = self.cluster.node(node.node_id)
        port = n.broker_port if node.broker else n.controller_port
        return self.cluster.node_alive(node.node_id) and ports.port_open(port or 0)

    def agent_url(self, node: NodeRef) -> str | None:
        port = self.cluster.node(node.node_id).agent_port
        return f"https://127.0.0.1:{port}" if port else None

    def restart(self, node: NodeRef, reasons: frozenset[RestartReason]) -> None:
        self.restarts.append((node.node_id, reasons, False))
        self.cluster.stop_node(node.node_id, timeout=self.stop_timeout)
        self.cluster.start_node(node.node_id)

    def force_restart(self, node: NodeRef, reasons: frozenset[RestartReason]) -> None:
        self.restarts.append((node.node_id, reasons, True))
        self.cluster.kill_node(node.node_id)
        self.cluster.start_node(node.node_id)

    def desired_config(self, node: NodeRef) -> dict[str, str]:
        return {**self.cluster.extra_config, **self.cluster.node_config.get(str(node.node_id), {})}

    def running_config(self, node: NodeRef) -> dict[str, str] | None:
        return self.cluster.started_settings(node.node_id)


@dataclass(frozen=True)
class PodDeletion:
    pod: str
    reasons: frozenset[RestartReason]
    forced: bool


STUCK_WAITING_REASONS = frozenset({"CrashLoopBackOff", "ImagePullBackOff", "ContainerCreating", "InvalidImageName"})


@dataclass
class KubernetesPodPlanner:
    """Pods of one Kafka cluster (as the API returns them); a roll only records `deletions`, in order.

    `desired` holds each node's desired broker settings (from the Kafka/KafkaNodePool resources). A pod planned
    for deletion counts as ready afterwards, so the plan goes on as if Kubernetes had recreated it.
    """

    namespace: str
    cluster: str
    pods: list[Mapping[str, Any]]
    desired: Mapping[int, dict[str, str]] = field(default_factory=dict)
    deletions: list[PodDeletion] = field(default_factory=list)

    def nodes(self) -> list[NodeRef]:
        return [self._ref(p) for p in self.pods]

    def is_ready(self, node: NodeRef) -> bool:
        if any(d.pod == node.name for d in self.deletions):
            return True
        conditions = self._pod(node).get("status", {}).get("conditions", [])
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    def is_stuck(self, node: NodeRef) -> bool:
        status = self._pod(node).get("status", {})
        if status.get("phase") == "Pending" and any(
            c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable" and c.get("status") == "False"
            for c in status.get("conditions", [])
        ):
            return True
        for container in status.get("containerStatuses", []):
            if container.get("name") == "kafka":
                waiting = (container.get("state") or {}).get("waiting") or {}
                return waiting.get("reason") in STUCK_WAITING_REASONS
        return False

    def is_responsive(self, node: NodeRef) -> bool:
        return True  # the Admin API call that follows tells

    def agent_url(self, node: NodeRef) -> str | None:
        return f"https://{node.name}.{self.cluster}-kafka-brokers.{self.namespace}.svc:8443"

    def restart(self, node: NodeRef, reasons: frozenset[RestartReason]) -> None:
        self.deletions.append(PodDeletion(node.name, reasons, False))

    def force_restart(self, node: NodeRef, reasons: frozenset[RestartReason]) -> None:
        self.deletions.append(PodDeletion(node.name, reasons, True))

    def desired_config(self, node: NodeRef) -> dict[str, str]:
        return dict(self.desired.get(node.node_id, {}))

    def running_config(self, node: NodeRef) -> dict[str, str] | None:
        return None

    def _pod(self, node: NodeRef) -> Mapping[str, Any]:
        return next(p for p in self.pods if p["metadata"]["name"] == node.name)

    @staticmethod
    def _ref(pod: Mapping[str, Any]) -> NodeRef:
        name = pod["metadata"]["name"]
        labels = pod["metadata"].get("labels", {})
        match = re.search(r"(\d+)$", name)
        if not match:
            raise ValueError(f"pod {name} does not end with a node id")
        return NodeRef(
            int(match.group(1)),
            name,
            labels.get("strimzi.io/broker-role") == "true",
            labels.get("strimzi.io/controller-role") == "true",
        )


def by_id(nodes: Iterable[NodeRef]) -> dict[int, NodeRef]:
    return {n.node_id: n for n in nodes}
