"""The roller's rules and algorithm with in-memory twins of the cluster (no Kafka): order, availability,
quorum, config diff, back-off, log recovery, forced restarts, and the Kubernetes pod planner."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from confluent_kafka import KafkaError, KafkaException

from sparklink.clients.admin import RenewingAdmin
from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform.kraft_quorum import QuorumInfo, ReplicaState
from sparklink.roller import plan
from sparklink.roller.admin import AdminError, ConfluentClusterAdmin, NoAnswerError
from sparklink.roller.executor import KafkaRoller
from sparklink.roller.model import (
    UNKNOWN_BROKER_STATE,
    BackOff,
    BrokerState,
    ConfigValue,
    NodeRef,
    PartitionState,
    RestartReason,
    RollerSettings,
    RollFailedError,
    TopicState,
)
from sparklink.roller.nodes import KubernetesPodPlanner

C1, C2, C3 = (NodeRef(i, f"c{i}", broker=False, controller=True) for i in (1000, 1001, 1002))
B1, B2, B3 = (NodeRef(i, f"b{i}", broker=True, controller=False) for i in (1, 2, 3))


def topic(name: str, min_isr: int | None, *partitions: tuple[tuple[int, ...], tuple[int, ...]]) -> TopicState:
    return TopicState(name, min_isr, tuple(PartitionState(i, r, isr) for i, (r, isr) in enumerate(partitions)))


def quorum(leader: int, **caught_up: int) -> QuorumInfo:
    voters = tuple(ReplicaState(int(k[1:]), 0, 0, v) for k, v in caught_up.items())
    return QuorumInfo(leader, 1, 0, voters, ())


# ----------------------------------------------------------------------------- pure rules
def test_controllers_go_before_brokers_and_unready_nodes_first() -> None:
    ready = {1000: True, 1001: False, 1002: True, 1: True, 2: True, 3: False}
    controllers, brokers = plan.initial_order([B1, B2, B3, C1, C2, C3], ready)
    assert controllers == [C2, C1, C3]
    assert brokers == [B3, B1, B2]


def test_availability_rules() -> None:
    rf3 = ((1, 2, 3), (1, 2, 3))
    assert plan.availability_blocker(1, [topic("t", 2, rf3)]) is None
    at_min = ((1, 2, 3), (1, 2))
    assert "will be under-replicated" in (plan.availability_blocker(1, [topic("t", 2, at_min)]) or "")
    assert plan.availability_blocker(3, [topic("t", 2, at_min)]) is None  # not in the ISR
    under = ((1, 2, 3), (1,))
    assert "already under-replicated" in (plan.availability_blocker(3, [topic("t", 2, under)]) or "")
    # RF <= minISR never blocks, nor does an unset minISR, nor a partition without a replica on the broker.
    assert plan.availability_blocker(1, [topic("t", 3, ((1, 2, 3), (1, 2)))]) is None
    assert plan.availability_blocker(1, [topic("t", None, under)]) is None
    assert plan.availability_blocker(4, [topic("t", 2, at_min)]) is None


def test_quorum_needs_a_caught_up_majority_without_the_node() -> None:
    healthy = quorum(1000, c1000=10_000, c1001=9_500, c1002=9_000)
    assert plan.quorum_healthy_without(1001, healthy)
    lagging = quorum(1000, c1000=10_000, c1001=9_500, c1002=1_000)
    assert not plan.quorum_healthy_without(1001, lagging)  # only the leader would be left caught up
    assert plan.quorum_healthy_without(1002, lagging)
    assert plan.quorum_healthy_without(1000, quorum(1000, c1000=5))
    assert plan.quorum_healthy_without(1000, quorum(1000, c1000=10_000, c1001=9_999))
    assert not plan.quorum_healthy_without(1000, quorum(1000, c1000=10_000, c1001=1))
    assert not plan.quorum_healthy_without(1000, quorum(-1, c1000=1, c1001=1, c1002=1))


def test_config_diff_is_dynamic_only_when_no_changed_setting_is_read_only() -> None:
    current = {"log.cleaner.threads": ConfigValue("1", False), "num.io.threads": ConfigValue("8", True)}
    assert plan.config_diff(current, {"log.cleaner.threads": "1"}).changes == {}
    assert plan.config_diff(current, {"log.cleaner.threads": "2"}).dynamic
    static = plan.config_diff(current, {"log.cleaner.threads": "2", "num.io.threads": "4"})
    assert not static.dynamic and static.read_only == {"num.io.threads"}


def test_backoff_is_strimzis_250ms_doubling_over_ten_attempts() -> None:
    backoff = BackOff()
    delays = [backoff.delay() for _ in range(10)]
    assert delays[:3] == [0.0, 0.25, 0.5] and delays[-1] == 64.0
    assert backoff.done() and backoff.total == pytest.approx(127.75)


# ----------------------------------------------------------------------------- the algorithm
class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class FakeNodes:
    def __init__(self, nodes: Iterable[NodeRef]) -> None:
        self.refs = list(nodes)
        self.ready = {n.node_id: True for n in self.refs}
        self.alive = {n.node_id: True for n in self.refs}
        self.responsive = {n.node_id: True for n in self.refs}
        self.desired: dict[int, dict[str, str]] = {}
        self.restarts: list[tuple[int, frozenset[RestartReason], bool]] = []
        self.on_restart: list[int] = []

    def nodes(self) -> list[NodeRef]:
        return self.refs

    def is_ready(self, node: NodeRef) -> bool:
        return self.ready[node.node_id]

    def is_stuck(self, node: NodeRef) -> bool:
        return not self.alive[node.node_id]

    def is_responsive(self, node: NodeRef) -> bool:
        return self.responsive[node.node_id]

    def agent_url(self, node: NodeRef) -> str | None:
        return f"https://agent-{node.node_id}"

    def restart(self, node: NodeRef, reasons: frozenset[RestartReason]) -> None:
        self._restarted(node, reasons, False)

    def force_restart(self, node: NodeRef, reasons: frozenset[RestartReason]) -> None:
        self._restarted(node, reasons, True)

    def _restarted(self, node: NodeRef, reasons: frozenset[RestartReason], forced: bool) -> None:
        self.restarts.append((node.node_id, reasons, forced))
        self.ready[node.node_id] = self.alive[node.node_id] = self.responsive[node.node_id] = True

    def desired_config(self, node: NodeRef) -> dict[str, str]:
        return self.desired.get(node.node_id, {})

    def running_config(self, node: NodeRef) -> dict[str, str] | None:
        return {}


class FakeAdmin:
    def __init__(self, leader: int = 1000) -> None:
        self.leader = leader
        self.topic_states: list[TopicState] = []
        self.configs: dict[int, dict[str, ConfigValue]] = {}
        self.altered: list[tuple[int, dict[str, str]]] = []
        self.topic_calls = 0

    def topics(self) -> list[TopicState]:
        self.topic_calls += 1
        return self.topic_states

    def broker_config(self, node_id: int) -> dict[str, ConfigValue]:
        return self.configs.get(node_id, {})

    def alter_broker_config(self, node_id: int, changes: dict[str, str]) -> None:
        self.altered.append((node_id, changes))
        for k, v in changes.items():
            self.configs.setdefault(node_id, {})[k] = ConfigValue(v, False)

    def quorum(self) -> QuorumInfo:
        return quorum(self.leader, c1000=100, c1001=100, c1002=100)


class FakeAgents:
    """Answers `state`, after answering each of `first` once."""

    def __init__(self, state: BrokerState = UNKNOWN_BROKER_STATE, first: Iterable[BrokerState] = ()) -> None:
        self.state = state
        self.first = list(first)
        self.calls = 0

    def broker_state(self, agent_url: str | None) -> BrokerState:
        self.calls += 1
        return self.first.pop(0) if self.first else self.state


def roller(runtime: FakeNodes, admin: FakeAdmin, agents: FakeAgents, **settings: float) -> KafkaRoller:
    return KafkaRoller(runtime, admin, agents, RollerSettings(**settings), clock=FakeClock())  # type: ignore[arg-type]


def manual(node: NodeRef) -> Iterable[RestartReason]:
    return (RestartReason.MANUAL_ROLLING_UPDATE,)


def test_a_manual_roll_restarts_controllers_then_brokers_with_the_active_controller_last() -> None:
    runtime = FakeNodes([B1, B2, B3, C1, C2, C3])
    roller(runtime, FakeAdmin(leader=1001), FakeAgents()).roll(manual)
    assert [r[0] for r in runtime.restarts] == [1000, 1002, 1001, 1, 2, 3]
    assert all(r[1] == {RestartReason.MANUAL_ROLLING_UPDATE} and not r[2] for r in runtime.restarts)


def test_a_broker_in_log_recovery_is_never_restarted_and_the_roll_fails_with_strimzis_message() -> None:
    runtime = FakeNodes([B1, B2])
    runtime.ready[1] = False
    agents = FakeAgents(BrokerState(2, 5, 120))
    r = roller(runtime, FakeAdmin(), agents, operation_timeout=1.0)
    with pytest.raises(RollFailedError) as failure:
        r.roll(manual)
    assert str(failure.value) == (
        "Pod b1 is not ready because the Kafka node is performing log recovery. "
        "There are 5 logs and 120 segments left to recover."
    )
    assert agents.calls == 10 and all(node != 1 for node, *_ in runtime.restarts)
    # Ten readiness waits of the operation timeout plus the back-off's 127.75 s between them.
    assert r.clock.monotonic() == pytest.approx(10 * 1.0 + 127.75, abs=1.0)  # type: ignore[attr-defined]


def test_a_roll_held_back_by_a_recovering_broker_fails_with_the_recovery_not_with_the_brokers_it_holds_back() -> None:
    runtime = FakeNodes([B1, B2, B3])
    runtime.ready[2] = False
    admin = FakeAdmin()
    # Broker 2 is out of the ISR while it recovers: restarting 1 or 3 would take the partition under minISR.
    admin.topic_states = [TopicState("t", 2, (PartitionState(0, (1, 2, 3), (1, 3)),))]
    r = roller(runtime, admin, FakeAgents(BrokerState(2, 7, 9)), operation_timeout=1.0)
    with pytest.raises(RollFailedError) as failure:
        r.roll(manual)
    # Broker 2, unready, is tried first in every round of attempts, so it is also the first to give up.
    assert failure.value.node.node_id == 2
    assert str(failure.value).startswith("Pod b2 is not ready because the Kafka node is performing log recovery.")
    assert runtime.restarts == []


def test_an_unready_node_whose_agent_never_answers_is_force_restarted_as_strimzi_does() -> None:
    runtime = FakeNodes([B1])
    runtime.ready[1] = runtime.responsive[1] = False
    agents = FakeAgents(UNKNOWN_BROKER_STATE)
    r = roller(runtime, FakeAdmin(), agents, operation_timeout=1.0)
    r.roll()
    assert runtime.restarts == [(1, frozenset({RestartReason.POD_UNRESPONSIVE}), True)]
    # Asked three times, 5 s apart, before its state counts as unknown.
    assert agents.calls == 3
    assert r.clock.monotonic() == pytest.approx(1.0 + 2 * 5.0, abs=1.0)  # type: ignore[attr-defined]


def test_a_ready_broker_whose_listener_opens_late_is_asked_again_and_reconfigured_not_restarted() -> None:
    # Kafka reports a broker RUNNING (its agent: ready) a moment before it opens its listeners.
    runtime = FakeNodes([B1])
    admin = FakeAdmin()
    admin.configs = {1: {"log.cleaner.threads": ConfigValue("1", False)}}
    runtime.desired = {1: {"log.cleaner.threads": "2"}}
    asked: list[int] = []

    def opens_on_the_third_ask(node: NodeRef) -> bool:
        asked.append(node.node_id)
        return len(asked) >= 3

    runtime.is_responsive = opens_on_the_third_ask  # type: ignore[method-assign]
    roller(runtime, admin, FakeAgents()).roll()
    assert runtime.restarts == []
    assert admin.altered == [(1, {"log.cleaner.threads": "2"})]
    assert len(asked) == 3


def test_a_ready_broker_that_never_accepts_connections_is_force_restarted_once_the_backoff_is_spent() -> None:
    runtime = FakeNodes([B1])
    runtime.responsive[1] = False
    r = roller(runtime, FakeAdmin(), FakeAgents(), backoff_attempts=3)
    r.roll()
    assert runtime.restarts == [(1, frozenset({RestartReason.POD_UNRESPONSIVE}), True)]
    assert r.clock.monotonic() > 0  # type: ignore[attr-defined]  # it waited before restarting


def test_an_agent_that_answers_on_a_later_ask_keeps_a_recovering_broker_from_a_forced_restart() -> None:
    runtime = FakeNodes([B1])
    runtime.ready[1] = runtime.responsive[1] = False
    agents = FakeAgents(BrokerState(2, 1, 40), first=[UNKNOWN_BROKER_STATE, UNKNOWN_BROKER_STATE])
    with pytest.raises(RollFailedError) as failure:
        roller(runtime, FakeAdmin(), agents, operation_timeout=1.0, backoff_attempts=2).roll()
    assert str(failure.value).startswith("Pod b1 is not ready because the Kafka node is performing log recovery.")
    assert runtime.restarts == []


def test_a_partition_at_min_isr_holds_the_restart_until_the_isr_recovers() -> None:
    runtime = FakeNodes([B1])
    admin = FakeAdmin()
    admin.topic_states = [topic("t", 2, ((1, 2, 3), (1, 2)))]
    original_topics = admin.topics

    def recovering() -> list[TopicState]:
        if admin.topic_calls >= 3:
            admin.topic_states = [topic("t", 2, ((1, 2, 3), (1, 2, 3)))]
        return original_topics()

    admin.topics = recovering  # type: ignore[method-assign]
    roller(runtime, admin, FakeAgents()).roll(manual)
    assert admin.topic_calls == 4 and [r[0] for r in runtime.restarts] == [1]


def test_min_isr_that_never_recovers_fails_the_roll_without_a_restart() -> None:
    runtime = FakeNodes([B1])
    admin = FakeAdmin()
    admin.topic_states = [topic("t", 2, ((1, 2, 3), (1, 2)))]
    with pytest.raises(RollFailedError, match=r"Pod b1 cannot be updated right now\."):
        roller(runtime, admin, FakeAgents()).roll(manual)
    assert runtime.restarts == []


def test_dynamic_settings_are_applied_without_restart_and_static_ones_restart() -> None:
    runtime = FakeNodes([B1, B2])
    admin = FakeAdmin()
    admin.configs = {1: {"log.cleaner.threads": ConfigValue("1", False)}, 2: {"num.io.threads": ConfigValue("8", True)}}
    runtime.desired = {1: {"log.cleaner.threads": "2"}, 2: {"num.io.threads": "4"}}
    result = roller(runtime, admin, FakeAgents()).roll()
    assert admin.altered == [(1, {"log.cleaner.threads": "2"})]
    assert runtime.restarts == [(2, frozenset({RestartReason.CONFIG_CHANGE_REQUIRES_RESTART}), False)]
    assert [n.node_id for n, _ in result.reconfigured] == [1]


def test_a_dead_node_with_a_reason_is_restarted_as_stuck_and_without_one_the_roll_stops() -> None:
    runtime = FakeNodes([B1])
    runtime.alive[1] = runtime.ready[1] = False
    roller(runtime, FakeAdmin(), FakeAgents()).roll(manual)
    assert runtime.restarts[0][1] >= {RestartReason.POD_STUCK} and runtime.restarts[0][2]

    runtime = FakeNodes([B1])
    runtime.alive[1] = runtime.ready[1] = False
    with pytest.raises(RollFailedError, match="Pod is unschedulable or is not starting"):
        roller(runtime, FakeAdmin(), FakeAgents()).roll()


def test_an_unreadable_broker_config_ends_in_a_restart_once_the_backoff_is_spent() -> None:
    runtime = FakeNodes([B1])
    admin = FakeAdmin()

    def failing(node_id: int) -> dict[str, ConfigValue]:
        raise AdminError("Error getting broker config: timed out")

    admin.broker_config = failing  # type: ignore[method-assign]
    roller(runtime, admin, FakeAgents()).roll()
    assert runtime.restarts == [(1, frozenset({RestartReason.CONFIG_CHANGE_REQUIRES_RESTART}), False)]


def test_dry_run_changes_nothing_and_lists_the_active_controller_last() -> None:
    runtime = FakeNodes([C1, C2, B1])
    steps = roller(runtime, FakeAdmin(leader=1000), FakeAgents()).dry_run(manual)
    assert [s.node for s in steps] == [C2, C1, B1]
    assert all(s.action == "restart" for s in steps) and runtime.restarts == []
    assert "active controller" in steps[1].describe()


def test_the_kubernetes_planner_reads_pods_and_plans_deletions() -> None:
    def pod(name: str, broker: bool, ready: bool, waiting: str | None = None) -> dict[str, object]:
        labels = {"strimzi.io/broker-role": str(broker).lower(), "strimzi.io/controller-role": str(not broker).lower()}
        state = {"waiting": {"reason": waiting}} if waiting else {"running": {}}
        return {
            "metadata": {"name": name, "labels": labels},
            "status": {
                "conditions": [{"type": "Ready", "status": str(ready)}],
                "containerStatuses": [{"name": "kafka", "state": state}],
            },
        }

    pods = [
        pod("my-cluster-brokers-1", True, False, "CrashLoopBackOff"),
        pod("my-cluster-controllers-1000", False, True),
    ]
    planner = KubernetesPodPlanner("kafka", "my-cluster", pods)
    refs = planner.nodes()
    assert [(r.node_id, r.broker, r.controller) for r in refs] == [(1, True, False), (1000, False, True)]
    assert planner.is_stuck(refs[0]) and not planner.is_stuck(refs[1])
    roller_ = KafkaRoller(planner, FakeAdmin(), FakeAgents(), RollerSettings(), clock=FakeClock())  # type: ignore[arg-type]
    roller_.roll(manual)
    assert [(d.pod, d.forced) for d in planner.deletions] == [
        ("my-cluster-controllers-1000", False),
        ("my-cluster-brokers-1", True),
    ]
    assert RestartReason.POD_STUCK in planner.deletions[1].reasons


def test_a_dynamic_update_for_a_broker_missing_from_the_metadata_is_retried_not_restarted() -> None:
    runtime = FakeNodes([B1])
    admin = FakeAdmin()
    admin.configs = {1: {"log.cleaner.threads": ConfigValue("1", False)}}
    runtime.desired = {1: {"log.cleaner.threads": "2"}}
    original_alter = admin.alter_broker_config
    unanswered: list[int] = []

    def lagging(node_id: int, changes: dict[str, str]) -> None:
        # The broker that answers the metadata request has not yet replayed broker 1's unfencing.
        if len(unanswered) < 2:
            unanswered.append(node_id)
            raise NoAnswerError(f"broker {node_id} is not in the cluster metadata")
        original_alter(node_id, changes)

    admin.alter_broker_config = lagging  # type: ignore[method-assign]
    result = roller(runtime, admin, FakeAgents()).roll()
    assert unanswered == [1, 1] and admin.altered == [(1, {"log.cleaner.threads": "2"})]
    assert runtime.restarts == [] and [n.node_id for n, _ in result.reconfigured] == [1]


def test_a_failed_dynamic_update_restarts_the_broker_as_strimzi_does() -> None:
    runtime = FakeNodes([B1])
    admin = FakeAdmin()
    admin.configs = {1: {"log.cleaner.threads": ConfigValue("1", False)}}
    runtime.desired = {1: {"log.cleaner.threads": "2"}}

    def refused(node_id: int, changes: dict[str, str]) -> None:
        raise AdminError("Error updating Kafka configuration for node 1: INVALID_CONFIG")

    admin.alter_broker_config = refused  # type: ignore[method-assign]
    roller(runtime, admin, FakeAgents()).roll()
    assert runtime.restarts == [(1, frozenset({RestartReason.CONFIG_CHANGE_REQUIRES_RESTART}), False)]


class _Future:
    def __init__(self, error: KafkaError | None) -> None:
        self.error = error

    def result(self, timeout: float) -> None:
        if self.error is not None:
            raise KafkaException(self.error)


class _LibrdkafkaAdmin:
    """What ConfluentClusterAdmin asks confluent-kafka's AdminClient for an update: metadata, then the update."""

    def __init__(self, brokers: Iterable[int], error: KafkaError | None = None) -> None:
        self.brokers = {b: object() for b in brokers}
        self.error = error

    def list_topics(self, timeout: float) -> object:
        return type("Metadata", (), {"brokers": self.brokers})()

    def incremental_alter_configs(self, resources: list[object]) -> dict[object, _Future]:
        return {r: _Future(self.error) for r in resources}


@pytest.mark.parametrize(
    ("brokers", "error", "unanswered"),
    [
        ((0, 2), None, True),  # broker 1 missing from the metadata
        ((0, 1, 2), KafkaError(KafkaError.REQUEST_TIMED_OUT), True),
        ((0, 1, 2), KafkaError(KafkaError._TRANSPORT), True),
        ((0, 1, 2), KafkaError(KafkaError.INVALID_CONFIG, "log.cleaner.threads: bad value"), False),
        ((0, 1, 2), KafkaError(KafkaError.POLICY_VIOLATION), False),
    ],
)
def test_an_update_kafka_never_answered_is_told_apart_from_one_it_refused(
    brokers: tuple[int, ...], error: KafkaError | None, unanswered: bool
) -> None:
    admin = ConfluentClusterAdmin(KafkaClientSettings("127.0.0.1:9"), [], timeout=1.0)
    admin._admin = RenewingAdmin({}, factory=lambda _: _LibrdkafkaAdmin(brokers, error))  # type: ignore[arg-type,return-value]
    with pytest.raises(AdminError) as failed:
        admin.alter_broker_config(1, {"log.cleaner.threads": "2"})
    assert isinstance(failed.value, NoAnswerError) is unanswered
