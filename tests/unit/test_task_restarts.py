"""Which task-query failures the worker restarts by itself (execution/restarts.py)."""

from __future__ import annotations

from sparklink.worker.execution import restarts

# The text Spark 4.2 gives a query whose Python data source planner did not connect back in 10 s.
SIMPLE_WORKER_TIMEOUT = (
    "[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: Python worker failed to connect back.\n"
    "org.apache.spark.SparkException: Python worker failed to connect back.\n"
    "\tat org.apache.spark.api.python.PythonWorkerFactory.createSimpleWorker(PythonWorkerFactory.scala:254)\n"
    "Caused by: java.net.SocketTimeoutException: Timed out while waiting for the Python worker to connect back\n"
)
DAEMON_WORKER_TIMEOUT = (
    "org.apache.spark.SparkException: Job aborted due to stage failure: java.net.SocketTimeoutException: "
    "Timed out while waiting for the Python worker to connect back after 60000 ms"
)
BATCH_ERROR = "TaskBatchError: KafkaException: KafkaError{code=_MSG_TIMED_OUT}\nCaused by query termination:\n..."
CRASHED_WORKER = "org.apache.spark.SparkException: Python worker exited unexpectedly (crashed)"


def test_a_planner_worker_that_did_not_connect_back_is_restarted() -> None:
    decision = restarts.decide(SIMPLE_WORKER_TIMEOUT, retries_so_far=0)
    assert decision.restart
    assert decision.attempt == 1
    assert "connect back" in decision.reason


def test_an_executor_worker_timeout_inside_a_batch_is_restarted() -> None:
    trace = f"TaskBatchError: Py4JJavaError\nCaused by query termination:\n{DAEMON_WORKER_TIMEOUT}"
    assert restarts.decide(trace, retries_so_far=1) == restarts.RestartDecision(
        True, 2, "Timed out while waiting for the Python worker to connect back"
    )


def test_restarts_stop_at_the_limit_so_a_broken_start_still_fails_the_task() -> None:
    limit = restarts.MAX_START_RETRIES
    assert restarts.decide(SIMPLE_WORKER_TIMEOUT, retries_so_far=limit - 1).restart
    last = restarts.decide(SIMPLE_WORKER_TIMEOUT, retries_so_far=limit)
    assert not last.restart
    assert "giving up" in last.reason


def test_other_failures_fail_the_task_at_once() -> None:
    for trace in (BATCH_ERROR, CRASHED_WORKER, ""):
        assert restarts.transient_start_failure(trace) is None
        assert not restarts.decide(trace, retries_so_far=0).restart
