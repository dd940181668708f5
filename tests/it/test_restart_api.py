"""KIP-745 restarts, after Apache Kafka's ConnectorRestartApiIntegrationTest, on a real broker and Spark.

A test plugin counts connector and task starts, so each case asserts exactly what was restarted.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from sparklink.worker.assembly import RunningWorker
from tests.helpers import status, task_states, unique, wait_for
from tests.plugins import CountingConnector, CountingTask

COUNTING = "tests.plugins.CountingConnector"


def create(worker: RunningWorker, tasks: int = 2, **extra: str) -> str:
    name = unique("restart")
    config = {
        "connector.class": COUNTING,
        "topic": unique("rt"),
        "records.per.second": "20",
        "tasks.max": str(tasks),
        **extra,
    }
    response = httpx.post(f"{worker.url}/connectors", json={"name": name, "config": config}, timeout=60)
    assert response.status_code == 201, response.text
    return name


def restart(worker: RunningWorker, name: str, **params: str) -> httpx.Response:
    return httpx.post(f"{worker.url}/connectors/{name}/restart", params=params, timeout=60)


def starts(name: str, tasks: int) -> tuple[int, list[int]]:
    return CountingConnector.starts[name], [CountingTask.starts[(name, i)] for i in range(tasks)]


def running(worker: RunningWorker, name: str, tasks: int) -> None:
    wait_for(
        lambda: (
            status(worker.url, name)["connector"]["state"] == "RUNNING"
            and task_states(worker.url, name) == ["RUNNING"] * tasks
        ),
        60,
        f"{name} and its tasks RUNNING",
    )


def failed_tasks(worker: RunningWorker, name: str, which: set[int]) -> None:
    def failed() -> set[int]:
        return {t["id"] for t in status(worker.url, name)["tasks"] if t["state"] == "FAILED"}

    try:
        wait_for(lambda: failed() == which, 60, f"tasks {which} FAILED")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; status: {status(worker.url, name)}") from None


def restarting(body: dict[str, Any]) -> tuple[bool, list[int]]:
    return body["connector"]["state"] == "RESTARTING", [t["id"] for t in body["tasks"] if t["state"] == "RESTARTING"]


@pytest.mark.parametrize(
    "params", [{}, {"includeTasks": "true"}, {"onlyFailed": "true"}, {"includeTasks": "true", "onlyFailed": "true"}]
)
def test_restart_unknown_connector_is_404(module_worker: RunningWorker, params: dict[str, str]) -> None:
    response = restart(module_worker, "no-such-connector", **params)
    assert response.status_code == 404
    assert response.json() == {"error_code": 404, "message": "Unknown connector: no-such-connector"}


def test_running_connector_restart_only_connector(module_worker: RunningWorker) -> None:
    name = create(module_worker)
    running(module_worker, name, 2)
    response = restart(module_worker, name)
    assert response.status_code == 204 and response.content == b""
    assert starts(name, 2) == (2, [1, 1])
    running(module_worker, name, 2)


def test_running_connector_restart_both_connector_and_tasks(module_worker: RunningWorker) -> None:
    name = create(module_worker)
    running(module_worker, name, 2)
    response = restart(module_worker, name, includeTasks="True")  # python-requests style booleans work
    assert response.status_code == 202
    assert restarting(response.json()) == (True, [0, 1])
    wait_for(lambda: starts(name, 2) == (2, [2, 2]), 60, "connector and both tasks restarted once")
    running(module_worker, name, 2)


@pytest.mark.parametrize("params", [{"onlyFailed": "true"}, {"onlyFailed": "true", "includeTasks": "true"}])
def test_running_connector_restart_only_failed_is_a_noop(module_worker: RunningWorker, params: dict[str, str]) -> None:
    name = create(module_worker)
    running(module_worker, name, 2)
    response = restart(module_worker, name, **params)
    assert response.status_code == 202
    assert restarting(response.json()) == (False, [])
    assert module_worker.stores.configs.pending_restart(name) is None
    assert starts(name, 2) == (1, [1, 1])


@pytest.mark.parametrize(
    ("params", "code", "plan"),
    [
        ({}, 204, None),
        ({"includeTasks": "true"}, 202, (True, [])),
        ({"includeTasks": "true", "onlyFailed": "true"}, 202, (True, [])),
    ],
)
def test_failed_connector_is_restarted(
    module_worker: RunningWorker, params: dict[str, str], code: int, plan: tuple[bool, list[int]] | None
) -> None:
    name = create(module_worker, **{"test.fail.starts": "1"})
    wait_for(lambda: status(module_worker.url, name)["connector"]["state"] == "FAILED", 30, "connector FAILED")
    assert "refuses to start" in status(module_worker.url, name)["connector"]["trace"]
    response = restart(module_worker, name, **params)
    assert response.status_code == code
    if plan is not None:
        assert restarting(response.json()) == plan
    wait_for(lambda: status(module_worker.url, name)["connector"]["state"] == "RUNNING", 60, "connector RUNNING")
    assert CountingConnector.starts[name] == 2


def test_failed_tasks_restart_only_connector(module_worker: RunningWorker) -> None:
    name = create(module_worker, **{"fail.after.records": "0"})
    failed_tasks(module_worker, name, {0, 1})
    assert restart(module_worker, name).status_code == 204
    assert starts(name, 2) == (2, [1, 1])
    assert task_states(module_worker.url, name) == ["FAILED", "FAILED"]


def test_failed_tasks_restart_only_tasks(module_worker: RunningWorker) -> None:
    name = create(module_worker, **{"fail.after.records": "0"})
    failed_tasks(module_worker, name, {0, 1})
    response = restart(module_worker, name, includeTasks="true", onlyFailed="true")
    assert response.status_code == 202
    assert restarting(response.json()) == (False, [0, 1])
    wait_for(lambda: starts(name, 2) == (1, [2, 2]), 60, "both failed tasks restarted, connector not")


def test_failed_tasks_restart_without_include_tasks_is_a_noop(module_worker: RunningWorker) -> None:
    name = create(module_worker, **{"fail.after.records": "0"})
    failed_tasks(module_worker, name, {0, 1})
    response = restart(module_worker, name, onlyFailed="true")
    assert response.status_code == 202
    assert restarting(response.json()) == (False, [])
    assert starts(name, 2) == (1, [1, 1])


def test_failed_tasks_restart_both_connector_and_tasks(module_worker: RunningWorker) -> None:
    name = create(module_worker, **{"fail.after.records": "0"})
    failed_tasks(module_worker, name, {0, 1})
    response = restart(module_worker, name, includeTasks="true")
    assert response.status_code == 202
    assert restarting(response.json()) == (True, [0, 1])
    wait_for(lambda: starts(name, 2) == (2, [2, 2]), 60, "connector and both tasks restarted")


def test_one_failed_task_of_three_restarts_only_that_task(module_worker: RunningWorker) -> None:
    name = create(module_worker, tasks=3, **{"fail.after.records": "5", "fail.task": "1"})
    failed_tasks(module_worker, name, {1})
    assert task_states(module_worker.url, name) == ["RUNNING", "FAILED", "RUNNING"]
    response = restart(module_worker, name, includeTasks="true", onlyFailed="true")
    assert response.status_code == 202
    body = response.json()
    assert [t["state"] for t in body["tasks"]] == ["RUNNING", "RESTARTING", "RUNNING"]
    assert body["connector"]["state"] == "RUNNING"
    wait_for(lambda: starts(name, 3) == (1, [1, 2, 1]), 60, "only task 1 restarted")
    # The restarted task resumes from its stored offset, which is past seq 5, so it fails again at once
    # (fail.after.records is still 5) while its siblings were never touched.
    failed_tasks(module_worker, name, {1})


def test_restart_single_task(module_worker: RunningWorker) -> None:
    name = create(module_worker)
    running(module_worker, name, 2)
    response = httpx.post(f"{module_worker.url}/connectors/{name}/tasks/1/restart", timeout=60)
    assert response.status_code == 204
    assert starts(name, 2) == (1, [1, 2])
    missing = httpx.post(f"{module_worker.url}/connectors/{name}/tasks/7/restart", timeout=60)
    assert missing.status_code == 404 and missing.json()["message"] == f"Unknown task: {name}-7"
    unknown = httpx.post(f"{module_worker.url}/connectors/nope/tasks/0/restart", timeout=60)
    assert unknown.json() == {"error_code": 404, "message": "Unknown connector: nope"}
