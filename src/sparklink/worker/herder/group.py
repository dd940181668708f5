"""Membership of a worker group through Kafka's own group coordinator (Connect's WorkerGroupMember).

Workers with the same `group.id` join one group with protocol type `sparklink` (so an Apache Connect
group of the same name refuses them instead of mixing) and protocol `incremental-v1`. Each member's
metadata says where its REST API is, how far it has read the config topic and what it runs; the
leader (chosen by the broker) computes the assignment with assignor.py and every member gets what to
start and what to stop, the leader's URL and the config offset the assignment was made at.

Why kafka-python: librdkafka (confluent-kafka) has no custom group protocols; kafka-python's
BaseCoordinator does JoinGroup/SyncGroup/Heartbeat/LeaveGroup with versions negotiated against the
broker (checked against Kafka 4.3), runs heartbeats on its own IO thread, and leaves only the
protocol's content to us. Its client takes the worker's own client settings, rendered for kafka-python
by sparklink.clients (TLS, mutual TLS, SASL). Caller: the distributed herder's tick thread (distributed.py).

The member also measures its rebalances (`RebalanceStats`, Connect's connect-worker-rebalance-metrics):
from the moment it prepares to (re)join to the moment its join completes.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kafka.coordinator.base import BaseCoordinator
from kafka.net.compat import KafkaNetClient

from sparklink.api.metrics import Window
from sparklink.clients.settings import KafkaClientSettings
from sparklink.worker.herder.assignor import Decision, IncrementalCooperativeAssignor, Work
from sparklink.worker.herder.metrics import Rebalances
from sparklink.worker.herder.model import ConnectorTaskId

log = logging.getLogger(__name__)

PROTOCOL_TYPE = "sparklink"
PROTOCOL = "incremental-v1"
NO_ERROR, CONFIG_MISMATCH = 0, 1


@dataclass(frozen=True)
class Assignment:
    """What this member runs after a rebalance (Connect's ExtendedAssignment, merged with what it kept)."""

    generation: int
    member_id: str
    leader: str
    leader_url: str | None
    config_offset: int
    work: Work
    revoked: Work = field(default_factory=Work)
    delay_ms: int = 0
    error: int = NO_ERROR
    second_round: bool = False
    """The leader revoked work from some member this round: the group rebalances again to hand it out."""

    @property
    def is_leader(self) -> bool:
        return self.member_id == self.leader


class GroupListener(Protocol):
    def config_offset(self) -> int:
        """How far this worker has read the config topic."""
        ...

    def configured(self, at_least: int) -> tuple[int, Work] | None:
        """As leader: the configured connectors and tasks at a config offset >= `at_least`, or None
        if this worker cannot catch up that far now."""
        ...

    def assigned(self, assignment: Assignment) -> None:
        """A rebalance completed (called on the client's IO thread: take note, act elsewhere)."""
        ...

    def rejoin_needed(self) -> None:
        """The member must rejoin, e.g. its heartbeat heard that the group is rebalancing (called on the
        client's IO thread): the caller of `ensure_active` should do so now, not at its next tick."""
        ...


@dataclass
class LeaderState:
    """What the leader knows after assigning: each member's URL and work (to forward to owners)."""

    urls: dict[str, str] = field(default_factory=dict)
    work: dict[str, Work] = field(default_factory=dict)

    def owner_url(self, connector: str | None = None, task: ConnectorTaskId | None = None) -> str | None:
        for member, work in self.work.items():
            if (connector is not None and connector in work.connectors) or (task is not None and task in work.tasks):
                return self.urls.get(member)
        return None


class RebalanceStats:
    """This member's rebalances: how many completed, how long each took, whether one is under way."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started: float | None = None
        self._last_done: float | None = None
        self._completed = 0
        self._times = Window()

    def started(self) -> None:
        with self._lock:
            if self._started is None:
                self._started = time.monotonic()

    def completed(self) -> None:
        now = time.monotonic()
        with self._lock:
            if self._started is not None:
                self._times.record((now - self._started) * 1000, now)
            self._started = None
            self._last_done = now
            self._completed += 1

    def snapshot(self, assignment: Assignment | None) -> Rebalances:
        now = time.monotonic()
        with self._lock:
            times = self._times.read(now)
            return Rebalances(
                completed=self._completed,
                epoch=assignment.generation if assignment else 0,
                rebalancing=self._started is not None,
                leader=assignment.leader if assignment else "",
                protocol=PROTOCOL,
                avg_ms=times[2] if times else None,
                max_ms=times[1] if times else None,
                since_last_ms=(now - self._last_done) * 1000 if self._last_done is not None else None,
            )


class _Coordinator(BaseCoordinator):  # type: ignore[misc]
    def __init__(self, member: WorkerGroupMember, client: KafkaNetClient, **config: Any) -> None:
        self._member = member  # before the base class's set-up, which may already ask for a rejoin
        super().__init__(client, **config)

    def protocol_type(self) -> str:
        return PROTOCOL_TYPE

    def group_protocols(self) -> list[tuple[str, bytes]]:
        return [(PROTOCOL, self._member.metadata())]

    def _perform_assignment(self, leader_id: str, protocol: str, members: list[Any]) -> dict[str, bytes]:
        return self._member.perform_assignment(leader_id, {m.member_id: m.metadata for m in members})

    def request_rejoin(self) -> None:
        super().request_rejoin()
        # The heartbeat thread calls this when the coordinator says the group is rebalancing; every
        # member's join is waited for, so each tick's wait before it rejoined delayed the whole group.
        self._member.rejoin_requested()

    async def _on_join_prepare_async(self, generation: int, member_id: str, timeout_ms: int | None = None) -> None:
        self._member.rebalances.started()

    async def _on_join_complete_async(self, generation: int, member_id: str, protocol: str, data: bytes) -> None:
        self._member.join_complete(generation, member_id, data)


class WorkerGroupMember:
    def __init__(
        self,
        clients: KafkaClientSettings,
        group_id: str,
        url: str,
        listener: GroupListener,
        session_timeout_ms: int = 10000,
        heartbeat_interval_ms: int = 3000,
        rebalance_timeout_ms: int = 60000,
        scheduled_rebalance_max_delay_ms: int = 300000,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.group_id = group_id
        self.url = url
        self._listener = listener
        self._lock = threading.Lock()
        self._assignment: Assignment | None = None
        self._assignor = (
            IncrementalCooperativeAssignor(scheduled_rebalance_max_delay_ms, clock)
            if clock
            else IncrementalCooperativeAssignor(scheduled_rebalance_max_delay_ms)
        )
        self._last_completed_generation = -1
        self._rebalance_timeout_ms = rebalance_timeout_ms
        self.leader_state = LeaderState()
        self.rebalances = RebalanceStats()
        self.client_id = f"sparklink-{group_id}"
        self._client = KafkaNetClient(**clients.kafka_python(client_id=self.client_id))
        self._client._net.start()
        self._client._manager.bootstrap(30000)
        self._coordinator = _Coordinator(
            self,
            self._client,
            group_id=group_id,
            session_timeout_ms=session_timeout_ms,
            heartbeat_interval_ms=heartbeat_interval_ms,
            # JoinGroup's rebalance timeout: how long the coordinator waits for members to rejoin.
            max_poll_interval_ms=rebalance_timeout_ms,
            request_timeout_ms=rebalance_timeout_ms + 5000,
            api_version=self._client._manager.broker_version,
        )

    # ------------------------------------------------------------------ driven by the tick thread
    def ensure_active(self) -> bool:
        """Join (or rejoin) if needed, waiting for the rebalance to complete; True once this member has a
        current assignment."""
        self._coordinator.poll_heartbeat()
        # Wait as long as a rebalance may take: kafka-python drops a join that completes after the
        # caller stopped waiting, and joining again would start yet another rebalance.
        return bool(self._coordinator.ensure_active_group(timeout_ms=self._rebalance_timeout_ms + 10000))

    def request_rejoin(self) -> None:
        self._coordinator.request_rejoin()

    def rejoin_requested(self) -> None:
        self._listener.rejoin_needed()

    def needs_rejoin(self) -> bool:
        return bool(self._coordinator.need_rejoin())

    def membership_lost(self) -> bool:
        """The coordinator dropped us (session expired, fenced): what we run may already run elsewhere."""
        generation = self._coordinator._generation
        return self._assignment is not None and generation.generation_id == -1

    @property
    def assignment(self) -> Assignment | None:
        with self._lock:
            return self._assignment

    def forget_assignment(self) -> None:
        """After stopping everything because membership was lost: rejoin claiming nothing."""
        with self._lock:
            self._assignment = None

    def stop(self) -> None:
        """Leave the group at once (a clean shutdown rebalances without waiting for the session timeout)."""
        try:
            self._coordinator.close(timeout_ms=5000)
        except Exception:
            log.debug("leaving group %s", self.group_id, exc_info=True)
        try:
            self._client._net.close()
        except Exception:
            log.debug("closing the group client", exc_info=True)

    # ------------------------------------------------------------------ protocol content
    def metadata(self) -> bytes:
        with self._lock:
            work = self._assignment.work if self._assignment else Work()
        return _encode(
            {
                "url": self.url,
                "offset": self._listener.config_offset(),
                "connectors": sorted(work.connectors),
                "tasks": sorted([t.connector, t.task] for t in work.tasks),
            }
        )

    def perform_assignment(self, leader_id: str, raw: Mapping[str, bytes]) -> dict[str, bytes]:
        members = {m: json.loads(data) for m, data in raw.items()}
        max_offset = max(int(m["offset"]) for m in members.values())
        leader_url = members[leader_id]["url"]
        # This round's generation: kafka-python sets it from the JoinGroup response before the leader
        # assigns. The assignor trusts its memory of the previous round only if that round completed
        # (Connect's lastCompletedGenerationId check), so an off-by-one here makes it forget every round:
        # deleted connectors are never revoked and a dead worker's work moves without the delay.
        generation = self._coordinator._generation.generation_id
        snapshot = self._listener.configured(max_offset)
        if snapshot is None:
            log.info(
                "leader of %s is behind the config topic (offset %d); asking for a re-sync", self.group_id, max_offset
            )
            return {
                m: _encode(_assignment_body(leader_id, leader_url, max_offset, Work(), Work(), 0, CONFIG_MISMATCH))
                for m in members
            }
        offset, configured = snapshot
        running = {m: _work(body["connectors"], body["tasks"]) for m, body in members.items()}
        decision = self._assignor.assign(configured, running, self._last_completed_generation, generation)
        self.leader_state = LeaderState({m: b["url"] for m, b in members.items()}, dict(decision.running_after))
        log.info(
            "group %s: assigning %d connectors and %d tasks to %d workers (delay %d ms)",
            self.group_id,
            len(configured.connectors),
            len(configured.tasks),
            len(members),
            decision.delay_ms,
        )
        return {
            m: _encode(body) for m, body in assignment_bodies(decision, members, leader_id, leader_url, offset).items()
        }

    def join_complete(self, generation: int, member_id: str, data: bytes) -> None:
        body = json.loads(data)
        with self._lock:
            assignment = assignment_from(
                body, generation, member_id, self._assignment.work if self._assignment else Work()
            )
            if assignment.error == NO_ERROR:
                self._assignment = assignment
            self._last_completed_generation = generation
        self.rebalances.completed()
        log.info(
            "worker %s joined group %s at generation %d (leader %s): %d connectors, %d tasks, %d revoked",
            self.url,
            self.group_id,
            generation,
            assignment.leader_url,
            len(assignment.work.connectors),
            len(assignment.work.tasks),
            assignment.revoked.size,
        )
        self._listener.assigned(assignment)


def assignment_bodies(
    decision: Decision, members: Mapping[str, Any], leader_id: str, leader_url: str, offset: int
) -> dict[str, dict[str, Any]]:
    """The leader's answer to each member for one round of the assignor."""
    # Every member hears of a revoking round, not only those that revoked (which rejoin anyway, as
    # Connect's do): the second round waits for all of them, and the others would otherwise join it at
    # their next heartbeat. A worker joining a group of two got its tasks 1 s later for that.
    second_round = any(work.size for work in decision.revoked.values())
    return {
        m: _assignment_body(
            leader_id,
            leader_url,
            offset,
            decision.assigned.get(m, Work()),
            decision.revoked.get(m, Work()),
            decision.delay_ms,
            NO_ERROR,
            second_round,
        )
        for m in members
    }


def assignment_from(body: Mapping[str, Any], generation: int, member_id: str, running: Work) -> Assignment:
    """A member's assignment from the leader's answer, merged with what it ran (`running`) less what it revokes."""
    revoked = _work(body["revoked_connectors"], body["revoked_tasks"])
    return Assignment(
        generation=generation,
        member_id=member_id,
        leader=body["leader"],
        leader_url=body["leader_url"],
        config_offset=int(body["offset"]),
        work=(running - revoked) | _work(body["connectors"], body["tasks"]),
        revoked=revoked,
        delay_ms=int(body["delay"]),
        error=int(body["error"]),
        # Absent from an older worker's answer: it rejoins at its next heartbeat, as before.
        second_round=bool(body.get("second_round", False)),
    )


def _work(connectors: list[str], tasks: list[list[Any]]) -> Work:
    return Work.of(connectors, (ConnectorTaskId(connector=str(c), task=int(t)) for c, t in tasks))


def _assignment_body(
    leader: str,
    leader_url: str,
    offset: int,
    assigned: Work,
    revoked: Work,
    delay: int,
    error: int,
    second_round: bool = False,
) -> dict[str, Any]:
    return {
        "error": error,
        "leader": leader,
        "leader_url": leader_url,
        "offset": offset,
        "connectors": sorted(assigned.connectors),
        "tasks": sorted([t.connector, t.task] for t in assigned.tasks),
        "revoked_connectors": sorted(revoked.connectors),
        "revoked_tasks": sorted([t.connector, t.task] for t in revoked.tasks),
        "delay": delay,
        "second_round": second_round,
    }


def _encode(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()
