"""Values the roller works with: restart reasons, the three kinds of problem, back-off and settings.

Caller: the roller's plan and executor. Names and messages follow Strimzi's KafkaRoller so that logs and
conditions read the same to someone who knows it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class RestartReason(enum.Enum):
    """Why a node is restarted (Strimzi's RestartReason, the subset a sparklink roll can have)."""

    CONFIG_CHANGE_REQUIRES_RESTART = "Pod needs to be restarted, because reconfiguration cannot be done dynamically"
    MANUAL_ROLLING_UPDATE = "Pod was manually annotated to be rolled"
    POD_FORCE_RESTART_ON_ERROR = "Pod needs to be forcibly restarted due to an error"
    POD_HAS_OLD_REVISION = "Pod has old revision"
    POD_STUCK = "Pod needs to be restarted, because it seems to be stuck and restart might help"
    POD_UNRESPONSIVE = "Pod needs to be restarted, because it does not seem to responding to connection attempts"
    KAFKA_CERTIFICATES_CHANGED = "Kafka broker TLS certificates updated"
    CA_CERT_RENEWED = "CA certificate renewed"
    CA_CERT_HAS_OLD_GENERATION = "CA cert has old generation"

    @property
    def note(self) -> str:
        return self.value


@dataclass(frozen=True, order=True)
class NodeRef:
    """One KRaft node the roller may act on."""

    node_id: int
    name: str
    broker: bool
    controller: bool

    def __str__(self) -> str:
        return f"{self.name}/{self.node_id}"

    @property
    def roles(self) -> str:
        return ",".join(r for r, on in (("broker", self.broker), ("controller", self.controller)) if on)


class RollerProblem(Exception):
    """Something stopped the roller from finishing a node on this attempt."""


class ForceableProblem(RollerProblem):
    """May end in a forced restart once the back-off is spent (or the node is stuck) and it is safe to roll."""


class UnforceableProblem(RollerProblem):
    """Retried with the back-off, never forced: e.g. a broker in log recovery, or a partition at minISR."""


class FatalProblem(RollerProblem):
    """Ends the roll at once, without retries."""


class RollFailedError(RuntimeError):
    """The roll did not complete; the message is the problem that ended it (what the operator reports)."""

    def __init__(self, node: NodeRef, problem: Exception) -> None:
        super().__init__(str(problem))
        self.node = node
        self.problem = problem


class BackOff:
    """Strimzi's BackOff: delays 0, initial, initial*factor, ... over `attempts` tries.

    The first `delay()` (taken when a node's context is made) is 0; `done()` once `attempts` delays were taken.
    With Strimzi's (250 ms, 2, 10) the delays between tries add up to 127.75 s.
    """

    def __init__(self, initial: float = 0.25, factor: float = 2.0, attempts: int = 10) -> None:
        self.initial, self.factor, self.attempts = initial, factor, attempts
        self.taken = 0
        self.total = 0.0

    def delay(self) -> float:
        if self.done():
            raise RuntimeError("back-off exhausted")
        value = 0.0 if self.taken == 0 else self.initial * self.factor ** (self.taken - 1)
        self.taken += 1
        self.total += value
        return value

    def done(self) -> bool:
        return self.taken >= self.attempts


@dataclass(frozen=True)
class RollerSettings:
    """Timeouts in seconds. Strimzi's defaults: operation timeout 300 s, polling 1 s, back-off 250 ms x2 x10."""

    operation_timeout: float = 300.0
    polling_interval: float = 1.0
    backoff_initial: float = 0.25
    backoff_factor: float = 2.0
    backoff_attempts: int = 10
    admin_timeout: float = 30.0
    can_roll_timeout: float = 60.0
    agent_timeout: float = 10.0
    # Stricter than Strimzi, which asks once: an agent that cannot answer is asked again before the roller
    # treats the broker's state as unknown (and may force-restart it). A broker busy loading logs on a
    # saturated machine can leave its in-JVM Jolokia unanswered for a while; restarting it then restarts
    # the recovery.
    agent_attempts: int = 3
    agent_retry_interval: float = 5.0
    controller_quorum_fetch_timeout_ms: int = 2000

    def backoff(self) -> BackOff:
        return BackOff(self.backoff_initial, self.backoff_factor, self.backoff_attempts)


@dataclass(frozen=True)
class BrokerState:
    """What a broker's agent answered; code -1 when it could not be asked (Strimzi's BrokerState(-1, null))."""

    code: int
    remaining_logs: int | None = None
    remaining_segments: int | None = None

    @property
    def in_recovery(self) -> bool:
        return self.code == 2


UNKNOWN_BROKER_STATE = BrokerState(-1)


@dataclass(frozen=True)
class PartitionState:
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class TopicState:
    """A topic's partitions and its effective min.insync.replicas (None when unset)."""

    name: str
    min_isr: int | None
    partitions: tuple[PartitionState, ...]


@dataclass(frozen=True)
class ConfigValue:
    value: str | None
    read_only: bool


@dataclass(frozen=True)
class ConfigDiff:
    """Settings whose running value differs from the desired one; dynamic when none is read-only."""

    changes: dict[str, str]
    read_only: frozenset[str] = frozenset()

    @property
    def dynamic(self) -> bool:
        return bool(self.changes) and not self.read_only
