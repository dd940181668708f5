"""What a group's members are told after a round (herder/group.py) and when they rejoin on their own
(herder/distributed.py): pure functions, no broker."""

from __future__ import annotations

import json

from sparklink.worker.herder.assignor import IncrementalCooperativeAssignor, Work
from sparklink.worker.herder.distributed import FOLLOWER_REJOIN_LAG_S, rejoin_at
from sparklink.worker.herder.group import Assignment, assignment_bodies, assignment_from
from sparklink.worker.herder.model import ConnectorTaskId

TASKS = Work.of(["c"], (ConnectorTaskId(connector="c", task=t) for t in range(6)))


def _round_trip(body: dict[str, object], running: Work | None = None) -> Assignment:
    return assignment_from(json.loads(json.dumps(body)), 7, "m", running or Work())


def test_every_member_hears_of_a_revoking_round_so_all_rejoin_for_the_second() -> None:
    assignor = IncrementalCooperativeAssignor(max_delay_ms=5000)
    spread = assignor.assign(TASKS, {"a": Work(), "b": Work()}, -1, 1)
    first = assignment_bodies(spread, {"a": {}, "b": {}}, "a", "http://a", 10)
    assert [body["second_round"] for body in first.values()] == [False, False]

    running = {m: spread.assigned[m] for m in ("a", "b")} | {"c": Work()}  # a third worker joins
    revoking = assignor.assign(TASKS, running, 1, 2)
    assert revoking.revoked["a"].size and revoking.revoked["b"].size and not revoking.revoked.get("c", Work()).size
    bodies = assignment_bodies(revoking, {m: {} for m in running}, "a", "http://a", 10)
    told = {m: _round_trip(body, running[m]) for m, body in bodies.items()}
    assert all(a.second_round for a in told.values())
    assert not told["c"].revoked.size  # the newcomer revoked nothing, and still rejoins
    assert told["a"].work == running["a"] - revoking.revoked["a"]


def test_an_answer_without_the_second_round_flag_reads_as_none() -> None:
    body = {
        "error": 0,
        "leader": "a",
        "leader_url": "http://a",
        "offset": 3,
        "connectors": ["c"],
        "tasks": [["c", 0]],
        "revoked_connectors": [],
        "revoked_tasks": [],
        "delay": 0,
    }
    assignment = _round_trip(body)
    assert assignment.second_round is False
    assert assignment.work == Work.of(["c"], [ConnectorTaskId(connector="c", task=0)])


def _told(member: str, delay_ms: int = 0, revoked: Work | None = None, second_round: bool = False) -> Assignment:
    return Assignment(
        generation=5,
        member_id=member,
        leader="a",
        leader_url=None,
        config_offset=0,
        work=Work(),
        revoked=revoked or Work(),
        delay_ms=delay_ms,
        second_round=second_round,
    )


def test_the_leader_rejoins_for_a_scheduled_rebalance_at_the_delay_and_the_others_just_after() -> None:
    assert rejoin_at(_told("a"), 100.0) is None and rejoin_at(_told("b"), 100.0) is None
    assert rejoin_at(_told("a", 10_000), 100.0) == 110.0
    assert rejoin_at(_told("b", 10_000), 100.0) == 110.0 + FOLLOWER_REJOIN_LAG_S


def test_a_member_that_revoked_nothing_in_a_revoking_round_rejoins_just_after_those_that_did() -> None:
    # Before any scheduled rebalance: the second round hands out the revoked work now, not at the delay.
    for member in ("a", "b"):
        assert rejoin_at(_told(member, 10_000, second_round=True), 100.0) == 100.0 + FOLLOWER_REJOIN_LAG_S
    # One that revoked work rejoins at once (the herder does that), so nothing is scheduled for it here.
    revoked = Work.of(["c"])
    assert rejoin_at(_told("b", revoked=revoked, second_round=True), 100.0) is None
