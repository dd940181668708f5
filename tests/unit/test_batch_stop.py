"""A stopping task lets its batch in hand finish, within a grace, and lets no new batch begin (execution/running.py);
the grace and the other worker settings are checked with errors that name them (worker_config.py)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from sparklink.api.connector import TaskContext
from sparklink.api.task_config import TaskSettings
from sparklink.connectors.datagen import DatagenTask
from sparklink.worker.config import WorkerConfig, WorkerConfigError
from sparklink.worker.execution.running import RunningTask


def running_task() -> RunningTask:
    unused: Any = None  # neither Spark nor the task's events are touched here
    ctx = TaskContext("c", 0, {}, unused)
    return RunningTask("c", 0, DatagenTask(), ctx, TaskSettings.parse({}), unused, Path("/nonexistent"))


def test_a_stop_waits_for_the_batch_in_hand_and_then_no_batch_begins() -> None:
    run = running_task()
    assert run.begin_batch()
    stopped = threading.Event()
    outcome: list[bool] = []

    def stop() -> None:
        outcome.append(run.stop_batches(grace=30))
        stopped.set()

    threading.Thread(target=stop).start()
    # The stop is under way (no new batch may begin) but waits for the batch in hand.
    assert not stopped.wait(0.2)
    assert not run.begin_batch()
    run.end_batch()
    assert stopped.wait(30)
    assert outcome == [True]
    assert run.stopping


def test_a_batch_that_outlasts_the_grace_is_reported_still_running() -> None:
    run = running_task()
    assert run.begin_batch()
    assert run.stop_batches(grace=0.05) is False
    assert not run.begin_batch()


def test_a_stop_with_no_batch_in_hand_returns_at_once() -> None:
    run = running_task()
    assert run.begin_batch()
    run.end_batch()
    assert run.stop_batches(grace=0)


def test_the_grace_is_connects_task_shutdown_graceful_timeout_ms() -> None:
    assert WorkerConfig().task_shutdown_graceful_timeout_ms == 5000
    config = WorkerConfig.model_validate({"task.shutdown.graceful.timeout.ms": "1500"})
    assert config.task_shutdown_graceful_timeout_ms == 1500
    with pytest.raises(ValidationError, match=r"task\.shutdown\.graceful\.timeout\.ms"):
        WorkerConfig.model_validate({"task.shutdown.graceful.timeout.ms": "-1"})


def test_a_bad_worker_setting_in_a_file_is_named_with_its_value_and_reason(tmp_path: Path) -> None:
    props = tmp_path / "worker.properties"
    props.write_text("bootstrap.servers=127.0.0.1:9092\ntask.shutdown.graceful.timeout.ms=-5\nrest.port=abc\n")
    with pytest.raises(WorkerConfigError) as failure:
        WorkerConfig.from_properties(props)
    message = str(failure.value)
    assert message.startswith(f"Invalid worker configuration in {props}:")
    assert "task.shutdown.graceful.timeout.ms = '-5': Input should be greater than or equal to 0" in message
    assert "rest.port = 'abc': Input should be a valid integer" in message
