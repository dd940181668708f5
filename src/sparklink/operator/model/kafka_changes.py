"""What it takes to bring each running node to its desired settings: nothing, a dynamic update, or a
restart, and why; and which changes to the set of nodes can be made safely. Pure.

Per node, the desired settings (the platform's own - ids, listeners, quorum, storage - plus the user's) are
compared with the settings file the node started with, through the roller's config diff
(`sparklink.roller.plan.config_diff`): a changed option a running broker can update (Kafka's configuration
model says so) is a dynamic update; any other change, a removed option, or a new heap is a restart. The
roller then acts on it: restarts for the reasons given here, and it applies dynamic updates itself after
comparing with what the broker reports. A controller-only node is always restarted: the roller updates
settings through the brokers' Admin API only. A node whose certificates come from an older generation of
the cluster or clients CA certificate (a renewal) restarts once to load new ones (Strimzi's
CA_CERT_HAS_OLD_GENERATION); a node whose generations are not known is left alone, as Strimzi leaves a pod
without the generation annotations.

Scaling: adding broker-only nodes is safe (they start empty); adding or removing controllers would change
the quorum's voters, and removing brokers would need their partitions moved first - neither is done, and
a Warning says so while the nodes that run keep running.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sparklink.operator.model.conditions import Condition, warning
from sparklink.operator.model.kafka import DesiredCluster, DesiredNode
from sparklink.operator.model.kafka_config import ConfigModel
from sparklink.roller.model import ConfigValue, RestartReason
from sparklink.roller.plan import config_diff

SCALING_REASON = "UnsupportedScaling"


@dataclass(frozen=True)
class RunningNode:
    """What runs for one node: its roles and heap, and the settings it started with (None: not known)."""

    node_id: int
    name: str
    broker: bool
    controller: bool
    heap: str
    base: Mapping[str, str]
    started: Mapping[str, str] | None
    alive: bool = True
    ready: bool = True
    pool: str | None = None
    ca_generations: tuple[int, int] | None = None  # (cluster CA, clients CA) certificate generations it runs


@dataclass(frozen=True)
class NodeChange:
    node_id: int
    name: str
    action: str  # "none" | "reconfigure" | "restart"
    reasons: frozenset[RestartReason] = frozenset()
    changes: Mapping[str, str] | None = None
    removed: tuple[str, ...] = ()
    removed_dynamic: tuple[str, ...] = ()  # per-broker overrides to delete before the restart

    def describe(self) -> str:
        text = f"{self.name}: {self.action}"
        if self.reasons:
            text += " (" + ", ".join(sorted(r.name for r in self.reasons)) + ")"
        if self.changes:
            text += " " + ", ".join(f"{k}={v}" for k, v in sorted(self.changes.items()))
        if self.removed:
            text += " removed " + ", ".join(self.removed)
        return text


def desired_settings(node: DesiredNode, running: RunningNode) -> dict[str, str]:
    return {**running.base, **node.config}


def node_change(
    node: DesiredNode,
    running: RunningNode,
    model: ConfigModel,
    default_heap: str,
    manual: bool = False,
    ca_generations: tuple[int, int] | None = None,
) -> NodeChange:
    want = desired_settings(node, running)
    started = running.started or {}
    broker_only_dynamic = running.broker  # controller-only nodes: every change is a restart (see the docstring)
    current = {k: ConfigValue(started.get(k), not (broker_only_dynamic and model.dynamic(k))) for k in want}
    diff = config_diff(current, want)
    removed = tuple(sorted(k for k in started if k not in want))
    reasons: set[RestartReason] = set()
    if manual:
        reasons.add(RestartReason.MANUAL_ROLLING_UPDATE)
    if diff.read_only or removed or running.started is None:
        reasons.add(RestartReason.CONFIG_CHANGE_REQUIRES_RESTART)
    if (node.heap or default_heap) != running.heap:
        reasons.add(RestartReason.POD_HAS_OLD_REVISION)
    if None not in (ca_generations, running.ca_generations) and ca_generations != running.ca_generations:
        reasons.add(RestartReason.CA_CERT_HAS_OLD_GENERATION)
    action = "restart" if reasons else "reconfigure" if diff.changes else "none"
    return NodeChange(
        node.node_id,
        node.name,
        action,
        frozenset(reasons),
        dict(diff.changes) or None,
        removed,
        tuple(k for k in removed if running.broker and model.dynamic(k)),
    )


def node_changes(
    desired: DesiredCluster, running: Mapping[int, RunningNode], model: ConfigModel, default_heap: str
) -> list[NodeChange]:
    """One change per desired node that runs (nodes still to be added or removed are `scaling`'s)."""
    manual = desired.manual_roll_nodes()
    generations = ca_generations(desired)
    return [
        node_change(node, running[node.node_id], model, default_heap, node.node_id in manual, generations)
        for node in desired.nodes
        if node.node_id in running and _same_roles(node, running[node.node_id])
    ]


def ca_generations(desired: DesiredCluster) -> tuple[int, int] | None:
    """The (cluster CA, clients CA) certificate generations every node should run with."""
    if desired.cas is None:
        return None
    return desired.cas.cluster.cert_generation, desired.cas.clients.cert_generation


@dataclass(frozen=True)
class Scaling:
    add: tuple[DesiredNode, ...]
    warnings: tuple[Condition, ...]


def scaling(desired: DesiredCluster, running: Mapping[int, RunningNode], can_add_brokers: bool = True) -> Scaling:
    wanted = {n.node_id: n for n in desired.nodes}
    new = [n for n in desired.nodes if n.node_id not in running]
    add = tuple(n for n in new if n.broker and not n.controller and can_add_brokers)
    notes: list[Condition] = []
    controllers = [n for n in new if n not in add]
    if controllers:
        notes.append(
            warning(
                SCALING_REASON,
                f"Adding nodes {_names(controllers)} is not supported yet: the KRaft quorum's voters are fixed when "
                "a sparklink cluster is created. They were not started.",
            )
        )
    removed = sorted(i for i in running if i not in wanted)
    if removed:
        notes.append(
            warning(
                SCALING_REASON,
                f"Removing nodes {_names(running[i] for i in removed)} is not supported yet: sparklink does not move "
                "partitions or quorum votes off nodes. They keep running.",
            )
        )
    changed = [n for n in desired.nodes if n.node_id in running and not _same_roles(n, running[n.node_id])]
    if changed:
        notes.append(
            warning(
                SCALING_REASON,
                f"Changing the roles of nodes {_names(changed)} is not supported: they keep their current roles.",
            )
        )
    return Scaling(add, tuple(notes))


def _same_roles(node: DesiredNode, running: RunningNode) -> bool:
    return (node.broker, node.controller) == (running.broker, running.controller)


def _names(nodes: Iterable[DesiredNode | RunningNode]) -> str:
    return "[" + ", ".join(n.name for n in nodes) + "]"
