"""`while_coordinator_moves`: a coordinator error is asked again until the time runs out; any other error, or
the last coordinator error, is raised. Reading and committing against a broker:
tests/it/test_group_offsets_fresh_cluster.py."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from sparklink.clients.group_offsets import while_coordinator_moves


def test_a_coordinator_error_is_asked_again_until_an_answer() -> None:
    outcomes = [
        KafkaException(KafkaError(KafkaError.NOT_COORDINATOR)),
        KafkaException(KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS)),
        "answer",
    ]
    asked: list[float] = []

    def call(left: float) -> object:
        asked.append(left)
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    assert while_coordinator_moves(call, 30.0) == "answer"
    assert len(asked) == 3 and all(0 < left <= 30.0 for left in asked)


def test_another_error_is_raised_at_once() -> None:
    asked = []

    def call(left: float) -> None:
        asked.append(left)
        raise KafkaException(KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED))

    with pytest.raises(KafkaException, match="GROUP_AUTHORIZATION_FAILED"):
        while_coordinator_moves(call, 30.0)
    assert len(asked) == 1


def test_a_coordinator_that_keeps_moving_is_raised_when_the_time_runs_out() -> None:
    def call(left: float) -> None:
        raise KafkaException(KafkaError(KafkaError.COORDINATOR_NOT_AVAILABLE))

    with pytest.raises(KafkaException, match="COORDINATOR_NOT_AVAILABLE"):
        while_coordinator_moves(call, 0.5)
