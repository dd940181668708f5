"""The incremental cooperative assignor (KIP-415) on its own: rounds of a group with an injected clock."""

from __future__ import annotations

from sparklink.worker.herder.assignor import IncrementalCooperativeAssignor, Work
from sparklink.worker.herder.model import ConnectorTaskId


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def configured(connectors: int, tasks_each: int) -> Work:
    names = [f"c{i}" for i in range(connectors)]
    return Work.of(names, (ConnectorTaskId(connector=n, task=t) for n in names for t in range(tasks_each)))


def apply(members: dict[str, Work], decision_assigned: dict[str, Work], revoked: dict[str, Work]) -> dict[str, Work]:
    return {m: (w - revoked.get(m, Work())) | decision_assigned.get(m, Work()) for m, w in members.items()}


def test_new_work_is_spread_evenly_over_the_members() -> None:
    assignor = IncrementalCooperativeAssignor(max_delay_ms=5000, clock=Clock())
    members = {"a": Work(), "b": Work(), "c": Work()}
    decision = assignor.assign(configured(3, 3), members, -1, 1)
    assert decision.delay_ms == 0
    assert not any(decision.revoked.values())
    sizes = sorted((len(w.connectors), len(w.tasks)) for w in decision.assigned.values())
    assert sizes == [(1, 3), (1, 3), (1, 3)]
    assert Work.of().tasks.isdisjoint(decision.assigned["a"].tasks)
    assert (decision.assigned["a"] & decision.assigned["b"]) == Work()


def test_work_of_a_departed_member_waits_for_the_delay_then_moves() -> None:
    clock = Clock()
    assignor = IncrementalCooperativeAssignor(max_delay_ms=5000, clock=clock)
    members = {"a": Work(), "b": Work(), "c": Work()}
    first = assignor.assign(configured(3, 3), members, -1, 1)
    members = apply(members, dict(first.assigned), dict(first.revoked))
    lost = members.pop("c")
    held = assignor.assign(configured(3, 3), members, 1, 2)
    assert held.delay_ms == 5000
    assert not any(held.assigned.values())  # c may come back within the delay
    clock.now += 5.0
    moved = assignor.assign(configured(3, 3), members, 2, 3)
    assert moved.delay_ms == 0
    assert (moved.assigned["a"] | moved.assigned["b"]) == lost


def test_a_joining_member_gets_work_back_from_the_others_in_a_revoking_round() -> None:
    assignor = IncrementalCooperativeAssignor(max_delay_ms=5000, clock=Clock())
    members = {"a": Work(), "b": Work()}
    first = assignor.assign(configured(2, 4), members, -1, 1)
    members = apply(members, dict(first.assigned), dict(first.revoked))
    members["c"] = Work()
    revoking = assignor.assign(configured(2, 4), members, 1, 2)
    revoked = revoking.revoked["a"] | revoking.revoked["b"]
    assert len(revoked.tasks) == 2 and len(revoked.connectors) == 0
    assert not revoking.assigned["c"]  # nothing moves in the round it is revoked
    members = apply(members, dict(revoking.assigned), dict(revoking.revoked))
    settled = assignor.assign(configured(2, 4), members, 2, 3)
    assert settled.assigned["c"].tasks == revoked.tasks


def test_deleted_connectors_and_their_tasks_are_revoked() -> None:
    assignor = IncrementalCooperativeAssignor(max_delay_ms=5000, clock=Clock())
    members = {"a": Work(), "b": Work()}
    first = assignor.assign(configured(2, 2), members, -1, 1)
    members = apply(members, dict(first.assigned), dict(first.revoked))
    remaining = Work.of(["c0"], [ConnectorTaskId(connector="c0", task=0), ConnectorTaskId(connector="c0", task=1)])
    decision = assignor.assign(remaining, members, 1, 2)
    revoked = decision.revoked.get("a", Work()) | decision.revoked.get("b", Work())
    assert revoked == configured(2, 2) - remaining
