"""Retrying what Kafka calls retriable, with back-off, up to a deadline (Connect's RetriableException).

A fresh or loaded cluster answers "not leader", "leader not available", "coordinator loading" or
times out for a while; callers retry those and fail on anything else. Callers: kafka_log.py (the
internal topics) and group_offsets.py (sink consumer groups).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from confluent_kafka import KafkaError, KafkaException

from sparklink.api.errors import ConnectError, RetriableError

log = logging.getLogger(__name__)
T = TypeVar("T")

RETRIABLE_CODES = {
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.NOT_COORDINATOR,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError.NOT_ENOUGH_REPLICAS,
    KafkaError._TIMED_OUT,
    KafkaError._MSG_TIMED_OUT,
    KafkaError._TRANSPORT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._UNKNOWN_PARTITION,
    KafkaError._WAIT_COORD,
}


def retriable(exc: BaseException) -> bool:
    """Kafka says the same call may succeed later."""
    if isinstance(exc, RetriableError | TimeoutError):
        return True
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        error: KafkaError = exc.args[0]
        return error.retriable() or error.code() in RETRIABLE_CODES
    return False


def retrying(
    attempt: Callable[[], T], timeout: float, failure: Callable[[BaseException, bool], str], what: str = ""
) -> T:
    """Run `attempt`, retrying retriable failures with back-off (0.1 s to 2 s) until `timeout` has passed.

    `failure(error, gave_up)` writes the message of the ConnectError raised in the end.
    """
    deadline = time.monotonic() + timeout
    delay = 0.1
    while True:
        try:
            return attempt()
        except ConnectError as exc:
            if not isinstance(exc, RetriableError):
                raise
            error: BaseException = exc
        except (KafkaException, TimeoutError) as exc:
            if not retriable(exc):
                raise ConnectError(failure(exc, False)) from exc
            error = exc
        if time.monotonic() + delay > deadline:
            raise ConnectError(failure(error, True)) from error
        log.debug("%s: %s; retrying in %.1fs", what, error, delay)
        time.sleep(delay)
        delay = min(delay * 2, 2.0)
