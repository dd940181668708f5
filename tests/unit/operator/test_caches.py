"""The operator's wait for the API server's watch caches, with probes that answer as a test scripts them:
a 429 is waited out for as long as the server asks, anything else ends the wait, a deadline and a stop
request end it too."""

from __future__ import annotations

import itertools
import logging
import threading
import time

import pytest
from kubernetes.client.exceptions import ApiException

from sparklink.operator.kube.caches import Probe, wait_until_served


def refused(status: int, retry_after: str | None = None) -> ApiException:
    exc = ApiException(status=status, reason="refused")
    exc.headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return exc


def scripted(*answers: Exception | None) -> tuple[Probe, list[float]]:
    """A probe that raises each exception in turn, then serves; it records when it was called."""
    calls: list[float] = []
    left = list(answers)

    def probe() -> object:
        calls.append(time.monotonic())
        answer = left.pop(0) if left else None
        if answer is not None:
            raise answer
        return object()

    return probe, calls


def test_a_refused_watch_is_asked_again_after_the_servers_retry_after(caplog: pytest.LogCaptureFixture) -> None:
    slow, slow_calls = scripted(refused(429, "0.2"), refused(429, "0.2"))
    ready, ready_calls = scripted()
    with caplog.at_level(logging.INFO, logger="sparklink.operator"):
        assert wait_until_served({"kafkas": slow, "kafkaconnects": ready}, threading.Event(), timeout=10)
    assert len(slow_calls) == 3 and len(ready_calls) == 1, "a served probe is not asked again"
    assert all(later - earlier >= 0.2 for earlier, later in itertools.pairwise(slow_calls))
    waits = [r.getMessage() for r in caplog.records if "watch caches" in r.getMessage()]
    assert waits == ["waiting for the API server's watch caches of kafkas (storage is initializing)"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("answer", [refused(403), refused(500), ConnectionRefusedError("no API server")])
def test_any_other_answer_leaves_it_to_the_watch(answer: Exception) -> None:
    probe, calls = scripted(answer, refused(429, "5"))
    assert wait_until_served({"kafkas": probe}, threading.Event(), timeout=10)
    assert len(calls) == 1


def test_it_gives_up_at_the_deadline_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    probe, calls = scripted(*[refused(429, "0.2")] * 100)
    started = time.monotonic()
    assert not wait_until_served({"kafkas": probe}, threading.Event(), timeout=1)
    assert time.monotonic() - started < 10 and len(calls) >= 3, "it did not wait out all hundred refusals"
    assert any(r.levelno == logging.WARNING and "still initializing" in r.getMessage() for r in caplog.records)


def test_a_stop_request_ends_the_wait_at_once() -> None:
    stop = threading.Event()
    probe, _calls = scripted(*[refused(429, "30")] * 2)
    timer = threading.Timer(0.2, stop.set)
    timer.start()
    started = time.monotonic()
    assert not wait_until_served({"kafkas": probe}, stop, timeout=60)
    assert time.monotonic() - started < 5
    timer.join()
