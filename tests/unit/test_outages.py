"""A task whose query dies of a Kafka outage is restarted with Connect's back-off (execution/outages.py and
the registry's use of it in tasks.py); no Spark here: the JVM's answers are in-memory twins."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from sparklink.api.errors import ConnectError
from sparklink.worker.execution import outages
from sparklink.worker.execution.tasks import TaskRuns

RETRIABLE_JAVA = {
    "org.apache.kafka.common.errors.TimeoutException",
    "org.apache.kafka.common.errors.NotLeaderOrFollowerException",
    "org.apache.kafka.common.errors.CoordinatorNotAvailableException",
    "org.apache.kafka.common.errors.NetworkException",
}
SOURCE_TIMEOUT = (
    "org.apache.spark.sql.streaming.StreamingQueryException: [STREAM_FAILED] Query [id = 1] terminated\n"
    "\tat org.apache.spark.sql.execution.streaming.StreamExecution.runStream(StreamExecution.scala:1)\n"
    "Caused by: java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.TimeoutException: "
    "Timed out waiting for a node assignment. Call: listOffsets(api=METADATA)\n"
    "Caused by: org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment.\n"
)
DATA_ERROR = (
    "org.apache.spark.SparkException: Job aborted due to stage failure: org.apache.spark.SparkRuntimeException: "
    "Error while converting value of topic t, partition 0, offset 4: unexpected character\n"
)


def classifier() -> outages.Classifier:
    return outages.Classifier(lambda name: name in RETRIABLE_JAVA)


def test_a_retriable_kafka_class_anywhere_in_the_chain_is_an_outage() -> None:
    found = classifier().in_trace(SOURCE_TIMEOUT)
    assert found == (
        "org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment. "
        "Call: listOffsets(api=METADATA)"
    )
    assert classifier().in_trace(DATA_ERROR) is None
    assert classifier().in_trace("") is None


def test_python_kafka_errors_and_what_the_stores_raise_from_them_are_outages() -> None:
    transport = KafkaException(KafkaError(KafkaError._TRANSPORT, "broker down"))
    try:
        try:
            raise transport
        except KafkaException as exc:
            raise ConnectError("committing offsets failed") from exc
    except ConnectError as wrapped:
        assert "broker down" in (classifier().in_exception(wrapped) or "")
    assert classifier().in_exception(ValueError("bad record")) is None
    assert classifier().in_exception(KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))) is None


def test_a_java_cause_reached_through_py4j_is_asked_of_the_jvm() -> None:
    timeout = SimpleNamespace(getCause=lambda: None, toString=lambda: "org.apache.kafka...TimeoutException: t")
    wrapper = SimpleNamespace(getCause=lambda: timeout, toString=lambda: "org.apache.spark.SparkException: s")
    error = RuntimeError("py4j")
    error.java_exception = wrapper  # type: ignore[attr-defined]  # as Py4JJavaError carries it
    found = outages.Classifier(lambda name: False, lambda t: t is timeout).in_exception(error)
    assert found == "org.apache.kafka...TimeoutException: t"


def test_connects_back_off_doubles_from_300_ms_then_stays_below_the_max() -> None:
    backoff = outages.Backoff(timeout_ms=0, max_delay_ms=2000)
    assert [backoff.delay_s(n) for n in (1, 2, 3)] == [0.3, 0.6, 1.2]
    assert all(0 <= backoff.delay_s(n) < 2.0 for n in range(4, 40))


def test_zero_and_minus_one_wait_the_outage_out_a_positive_timeout_gives_up() -> None:
    assert not outages.Backoff(0, 60000).gives_up(10 * 3600)
    assert not outages.Backoff(-1, 60000).gives_up(10 * 3600)
    assert not outages.Backoff(5000, 60000).gives_up(4.9)
    assert outages.Backoff(5000, 60000).gives_up(5.0)


class Events:
    def __init__(self) -> None:
        self.failed: list[str] = []

    def task_failed(self, connector: str, task_id: int, trace: str) -> None:
        self.failed.append(trace)

    def topics_seen(self, connector: str, task_id: int, topics: list[str]) -> None:
        pass


def registry(scheduled: list[tuple[float, outages.Outage | None]]) -> TaskRuns:
    """The registry's failure handling alone: no Spark, its restarts recorded instead of started."""
    runs = TaskRuns.__new__(TaskRuns)
    runs._lock = threading.RLock()
    runs._closed = threading.Event()
    runs._pending = {}
    runs._by_query = {}
    runs._early_exits = {}
    runs._classifier = classifier()
    runs._restart_later = lambda run, delay, retries, outage: scheduled.append((delay, outage))  # type: ignore[method-assign]
    return runs


def failed_run(timeout_ms: int, outage: outages.Outage | None = None, batches: int = 0) -> Any:
    policy = SimpleNamespace(retry_timeout_ms=timeout_ms, retry_delay_max_ms=60000)
    return SimpleNamespace(
        connector="sink",
        task_id=0,
        key=("sink", 0),
        retries=0,
        outage=outage,
        batches=batches,
        started=time.monotonic(),
        error_policy=lambda: policy,
        events=Events(),
        exception=None,
        error="",
        stopping=False,
        reported=False,
        terminated=False,
    )


def terminate(runs: TaskRuns, run: Any, trace: str) -> None:
    runs._by_query["q"] = run
    runs._on_terminated("q", trace)


def test_an_outage_restarts_the_task_and_keeps_counting_across_its_runs() -> None:
    scheduled: list[tuple[float, outages.Outage | None]] = []
    runs = registry(scheduled)
    first = failed_run(0)
    terminate(runs, first, SOURCE_TIMEOUT)
    (delay, outage), *_ = scheduled
    assert delay == pytest.approx(0.3)
    assert outage is not None and outage.restarts == 1
    # The restarted run fails again before writing anything: the same outage, the next back-off.
    second = failed_run(0, outage)
    terminate(runs, second, SOURCE_TIMEOUT)
    assert scheduled[1][0] == pytest.approx(0.6)
    assert scheduled[1][1] == outages.Outage(outage.since, 2, outage.cause)
    # errors.retry.timeout=0: an hour-long outage is still waited out; nothing is reported FAILED.
    long_ago = outages.Outage(time.monotonic() - 3600, 30, "x")
    terminate(runs, failed_run(0, long_ago), SOURCE_TIMEOUT)
    assert scheduled[2][1] is not None and scheduled[2][1].restarts == 31
    assert first.events.failed == second.events.failed == []


def test_a_run_that_wrote_batches_starts_a_new_outage() -> None:
    scheduled: list[tuple[float, outages.Outage | None]] = []
    old = outages.Outage(time.monotonic() - 600, 9, "x")
    terminate(registry(scheduled), failed_run(0, old, batches=3), SOURCE_TIMEOUT)
    assert scheduled[0][1] is not None and scheduled[0][1].restarts == 1 and scheduled[0][1].since > old.since


def test_past_errors_retry_timeout_the_task_fails_saying_what_happened_and_how_often() -> None:
    scheduled: list[tuple[float, outages.Outage | None]] = []
    run = failed_run(5000, outages.Outage(time.monotonic() - 6, 3, "earlier"))
    terminate(registry(scheduled), run, SOURCE_TIMEOUT)
    assert scheduled == []
    (trace,) = run.events.failed
    assert trace.startswith("Kafka was unavailable to this task for 6 s and its query was restarted 3 time(s)")
    assert "errors.retry.timeout (5000 ms)" in trace
    assert "TimeoutException: Timed out waiting for a node assignment" in trace
    assert SOURCE_TIMEOUT in trace


def test_a_positive_timeout_shortens_the_last_wait_to_what_is_left() -> None:
    scheduled: list[tuple[float, outages.Outage | None]] = []
    terminate(registry(scheduled), failed_run(1000, outages.Outage(time.monotonic() - 0.9, 12, "x")), SOURCE_TIMEOUT)
    assert scheduled[0][0] <= 0.1


def test_any_other_failure_fails_the_task_at_once() -> None:
    scheduled: list[tuple[float, outages.Outage | None]] = []
    run = failed_run(0)
    terminate(registry(scheduled), run, DATA_ERROR)
    assert scheduled == [] and run.events.failed == [DATA_ERROR]


def test_an_error_without_a_message_is_named_with_where_it_was_raised() -> None:
    def wait_for_acks() -> None:
        raise TimeoutError

    try:
        wait_for_acks()
    except TimeoutError as exc:
        found = classifier().in_exception(exc)
    assert found is not None
    assert found.startswith("TimeoutError (no message) raised at test_outages.py:")
    assert found.endswith(" in wait_for_acks")
