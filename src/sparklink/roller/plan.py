"""The roller's pure rules: the order of nodes, the availability and quorum checks, the config diff.

Caller: `executor.KafkaRoller` (and its dry run). No I/O here: every function takes the facts it judges,
so each rule is unit-tested with no cluster (tests/unit/test_roller_plan.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sparklink.roller.model import ConfigDiff, ConfigValue, NodeRef, RestartReason, TopicState

if TYPE_CHECKING:  # the plan is pure: the operator's model reuses config_diff without the platform
    from sparklink.platform.kraft_quorum import QuorumInfo

log = logging.getLogger("sparklink.roller")


def initial_order(nodes: Iterable[NodeRef], ready: Mapping[int, bool]) -> tuple[list[NodeRef], list[NodeRef]]:
    """Controllers (combined nodes included) then brokers; within each, unready nodes first.

    Rolling an unready node first keeps successive rolls from each taking out one more node that then
    never comes back (Strimzi's order; the active controller is deferred later, when it is reached).
    """
    controllers: list[NodeRef] = []
    brokers: list[NodeRef] = []
    for node in sorted(nodes):
        group = controllers if node.controller else brokers
        if ready.get(node.node_id, False):
            group.append(node)
        else:
            group.insert(sum(1 for n in group if not ready.get(n.node_id, False)), node)
    return controllers, brokers


def availability_blocker(broker: int, topics: Iterable[TopicState]) -> str | None:
    """Why restarting `broker` would stall acks=all producers, or None when it would not (KafkaAvailability).

    Per partition with a replica on the broker: min.insync.replicas unset never blocks; RF <= minISR never
    blocks (such a partition can never stay writable through a restart anyway); ISR below minISR blocks when
    the broker holds a replica; ISR at minISR blocks when the broker is in the ISR.
    """
    for topic in topics:
        min_isr = topic.min_isr
        if min_isr is None or min_isr < 0:
            continue
        for p in topic.partitions:
            if broker not in p.replicas or len(p.replicas) <= min_isr:
                continue
            isr, replicas = _ids(p.isr), _ids(p.replicas)
            if len(p.isr) < min_isr:
                where = "is in the ISR" if broker in p.isr else "has a replica"
                return (
                    f"{topic.name}/{p.partition} is already under-replicated (ISR={{{isr}}}, replicas=[{replicas}], "
                    f"min.insync.replicas={min_isr}); broker {broker} {where}, so should not be restarted right now"
                )
            if len(p.isr) == min_isr and broker in p.isr:
                return (
                    f"{topic.name}/{p.partition} will be under-replicated (ISR={{{isr}}}, replicas=[{replicas}], "
                    f"min.insync.replicas={min_isr}) if broker {broker} is restarted"
                )
    return None


def quorum_healthy_without(node_id: int, quorum: QuorumInfo, fetch_timeout_ms: int = 2000) -> bool:
    """KafkaQuorumCheck: can controller `node_id` go away without the quorum losing its majority?

    A voter counts as caught up when it is the leader or its lastCaughtUpTimestamp is within
    controller.quorum.fetch.timeout.ms of the leader's. Excluding `node_id`, at least (total + 2) // 2 must be.
    One voter: always (with a warning); two voters: only if the other one is caught up.
    """
    if quorum.leader_id < 0:
        log.warning("no controller quorum leader (leader id %d)", quorum.leader_id)
        return False
    voters = {v.replica_id: v.last_caught_up_timestamp for v in quorum.voters}
    total = len(voters)
    if total == 1:
        log.warning(
            "rolling a controller quorum of one node: the cluster is unavailable while it restarts; "
            "run at least three controllers"
        )
        return True
    leader_caught_up = voters.get(quorum.leader_id, -1)
    caught_up = 0
    for voter, timestamp in voters.items():
        if timestamp < 0 or voter == node_id:
            continue
        if voter == quorum.leader_id or leader_caught_up - timestamp < fetch_timeout_ms:
            caught_up += 1
    if total == 2:
        if caught_up == 1:
            log.warning("rolling a controller quorum of two nodes; run at least three controllers")
        return caught_up == 1
    return caught_up >= (total + 2) // 2


def config_diff(current: Mapping[str, ConfigValue], desired: Mapping[str, str]) -> ConfigDiff:
    """The desired settings whose running value differs; a setting the broker reports read-only needs a restart.

    A desired key the broker does not report at all is treated as read-only (it cannot be set dynamically).
    """
    changes: dict[str, str] = {}
    read_only: set[str] = set()
    for key, value in desired.items():
        running = current.get(key)
        if running is not None and running.value == value:
            continue
        changes[key] = value
        if running is None or running.read_only:
            read_only.add(key)
    return ConfigDiff(changes, frozenset(read_only))


@dataclass(frozen=True)
class PlannedStep:
    """One line of a dry run: what the roller would do with a node now, and why."""

    node: NodeRef
    action: str  # "restart" | "reconfigure" | "none"
    reasons: tuple[RestartReason, ...] = ()
    changes: Mapping[str, str] | None = None
    blocked_by: str | None = None
    note: str | None = None

    def describe(self) -> str:
        text = f"{self.node} ({self.node.roles}): {self.action}"
        if self.reasons:
            text += " [" + ", ".join(r.name for r in self.reasons) + "]"
        if self.changes:
            text += " " + ", ".join(f"{k}={v}" for k, v in sorted(self.changes.items()))
        if self.note:
            text += f"; {self.note}"
        if self.blocked_by:
            text += f"; would wait: {self.blocked_by}"
        return text


def _ids(nodes: Iterable[int]) -> str:
    return ",".join(str(n) for n in nodes)
