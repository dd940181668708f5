"""`RenewingAdmin`: a local time-out inside `request()` makes the next request use a new client; an answer,
even a refusal, keeps the client. Clients here are plain objects made by a counting factory: what is tested is
when a client is made and dropped, not librdkafka (tests/it/test_kafka_outage.py does that against a broker)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from sparklink.clients.admin import RenewingAdmin, outlasted_wait


class Made:
    def __init__(self) -> None:
        self.configs: list[dict[str, Any]] = []

    def __call__(self, config: dict[str, Any]) -> Any:
        self.configs.append(config)
        return object()


def test_the_client_is_made_once_and_kept_across_answered_requests() -> None:
    made = Made()
    admin = RenewingAdmin({"bootstrap.servers": "127.0.0.1:9"}, factory=made)
    with admin.request() as first:
        pass
    with admin.request() as second:
        pass
    assert first is second
    assert made.configs == [{"bootstrap.servers": "127.0.0.1:9"}]


@pytest.mark.parametrize(
    ("error", "unanswered"),
    [
        (TimeoutError(), True),  # Future.result(timeout) ran out
        (KafkaException(KafkaError(KafkaError._TIMED_OUT)), True),  # librdkafka's own time-out
        (KafkaException(KafkaError(KafkaError.REQUEST_TIMED_OUT)), False),  # the broker's answer, not silence
        (KafkaException(KafkaError(KafkaError.GROUP_ID_NOT_FOUND)), False),  # a refusal
        (ValueError("a caller's own error"), False),
    ],
    ids=["future-wait", "librdkafka-timeout", "broker-request-timed-out", "refusal", "other"],
)
def test_only_a_request_without_an_answer_drops_the_client_and_every_error_still_raises(
    error: BaseException, unanswered: bool
) -> None:
    made = Made()
    admin = RenewingAdmin({}, factory=made)
    with pytest.raises(type(error)), admin.request() as first:
        raise error
    with admin.request() as second:
        pass
    assert (second is not first) is unanswered
    assert len(made.configs) == (2 if unanswered else 1)
    assert outlasted_wait(error) is unanswered


def test_a_late_drop_leaves_a_client_made_since_alone() -> None:
    made = Made()
    admin = RenewingAdmin({}, factory=made)
    stale = admin.client()
    admin.drop(stale)
    fresh = admin.client()
    admin.drop(stale)  # a second thread's request on the old client timing out after the renewal
    assert admin.client() is fresh
    assert len(made.configs) == 2


def test_settings_given_as_a_function_are_rendered_for_each_new_client() -> None:
    renders = iter([{"n": 1}, {"n": 2}])
    made = Made()
    admin = RenewingAdmin(lambda: next(renders), factory=made)
    with pytest.raises(TimeoutError), admin.request():
        raise TimeoutError
    admin.client()
    assert made.configs == [{"n": 1}, {"n": 2}]
