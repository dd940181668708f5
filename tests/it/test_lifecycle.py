"""Pause, stop, resume, KIP-980 initial states and PATCH config, after ConnectWorkerIntegrationTest."""

from __future__ import annotations

import httpx

from sparklink.worker.assembly import RunningWorker
from tests.helpers import status, task_states, unique, wait_for


def create(worker: RunningWorker, tasks: int = 2, initial_state: str | None = None, **extra: str) -> str:
    name = unique("life")
    body: dict[str, object] = {
        "name": name,
        "config": {
            "connector.class": "datagen",
            "topic": unique("life"),
            "records.per.second": "20",
            "tasks.max": str(tasks),
            **extra,
        },
    }
    if initial_state:
        body["initial_state"] = initial_state
    response = httpx.post(f"{worker.url}/connectors", json=body, timeout=60)
    assert response.status_code == 201, response.text
    return name


def put(worker: RunningWorker, name: str, action: str) -> httpx.Response:
    # No body and no Content-Type, as several Connect clients send them.
    return httpx.put(f"{worker.url}/connectors/{name}/{action}", timeout=60)


def connector_state(worker: RunningWorker, name: str) -> str:
    return str(status(worker.url, name)["connector"]["state"])


def position(worker: RunningWorker, name: str) -> int:
    return sum(int(o["position"]) for _, o in worker.stores.offsets.get(name))


def test_pause_stop_resume_are_idempotent_and_act_on_the_queries(module_worker: RunningWorker) -> None:
    w, name = module_worker, create(module_worker)
    wait_for(lambda: task_states(w.url, name) == ["RUNNING", "RUNNING"], 60, "RUNNING")

    for _ in range(2):
        assert put(w, name, "pause").status_code == 202
    assert connector_state(w, name) == "PAUSED" and task_states(w.url, name) == ["PAUSED", "PAUSED"]
    assert not any(w.worker.running(name, i) for i in range(2))
    paused_at = position(w, name)

    for _ in range(2):
        assert put(w, name, "stop").status_code == 204
    assert status(w.url, name)["connector"]["state"] == "STOPPED" and status(w.url, name)["tasks"] == []
    assert httpx.get(f"{w.url}/connectors/{name}", timeout=10).json()["tasks"] == []
    assert httpx.get(f"{w.url}/connectors/{name}/tasks", timeout=10).json() == []
    assert position(w, name) == paused_at

    for _ in range(2):
        assert put(w, name, "resume").status_code == 202
    wait_for(lambda: task_states(w.url, name) == ["RUNNING", "RUNNING"], 60, "RUNNING again")
    wait_for(lambda: position(w, name) > paused_at, 60, "records flowing again after resume")
    assert len(httpx.get(f"{w.url}/connectors/{name}/tasks", timeout=10).json()) == 2

    assert put(w, name, "stop").status_code == 204
    assert put(w, name, "pause").status_code == 202  # from STOPPED: tasks come back, paused
    assert connector_state(w, name) == "PAUSED" and task_states(w.url, name) == ["PAUSED", "PAUSED"]
    assert httpx.delete(f"{w.url}/connectors/{name}", timeout=60).status_code == 204

    for action in ("pause", "resume", "stop"):
        response = put(w, "nope", action)
        assert response.status_code == 404 and response.json()["message"] == "Unknown connector nope"


def test_stopping_a_failed_connector(module_worker: RunningWorker) -> None:
    w = module_worker
    name = create(w, **{"fail.after.records": "0"})
    wait_for(lambda: task_states(w.url, name) == ["FAILED", "FAILED"], 60, "tasks FAILED")
    assert put(w, name, "stop").status_code == 204
    assert status(w.url, name)["connector"]["state"] == "STOPPED" and status(w.url, name)["tasks"] == []


def test_initial_state_paused_and_stopped_start_without_tasks(module_worker: RunningWorker) -> None:
    w = module_worker
    paused = create(w, initial_state="PAUSED")
    assert connector_state(w, paused) == "PAUSED" and status(w.url, paused)["tasks"] == []
    assert httpx.get(f"{w.url}/connectors/{paused}/tasks", timeout=10).json() == []
    stopped = create(w, initial_state="stopped")  # case-insensitive, like Connect
    assert connector_state(w, stopped) == "STOPPED" and status(w.url, stopped)["tasks"] == []
    assert w.stores.configs.target_state(stopped) == "STOPPED"

    assert put(w, paused, "resume").status_code == 202
    assert put(w, stopped, "resume").status_code == 202
    wait_for(
        lambda: task_states(w.url, paused) == ["RUNNING"] * 2 and task_states(w.url, stopped) == ["RUNNING"] * 2,
        60,
        "both RUNNING after resume",
    )
    running = create(w, tasks=1, initial_state="RUNNING")
    wait_for(lambda: task_states(w.url, running) == ["RUNNING"], 60, "RUNNING")
    for name in (paused, stopped, running):
        assert httpx.delete(f"{w.url}/connectors/{name}", timeout=60).status_code == 204


def test_delete_connectors_created_paused_or_stopped(module_worker: RunningWorker) -> None:
    w = module_worker
    for state in ("PAUSED", "STOPPED"):
        name = create(w, initial_state=state)
        assert httpx.delete(f"{w.url}/connectors/{name}", timeout=60).status_code == 204
        assert httpx.get(f"{w.url}/connectors/{name}", timeout=10).status_code == 404
        assert name not in httpx.get(f"{w.url}/connectors", timeout=10).json()


def test_patch_config_adds_changes_and_deletes_keys(module_worker: RunningWorker) -> None:
    w = module_worker
    name = create(w, tasks=1, **{"value.size": "8"})
    patch = {"value.size": "32", "key.shape": "none", "total.records": None, "records.per.second": "40"}
    response = httpx.patch(f"{w.url}/connectors/{name}/config", json=patch, timeout=60)
    assert response.status_code == 200
    config = response.json()["config"]
    assert config["value.size"] == "32" and config["key.shape"] == "none" and config["records.per.second"] == "40"
    assert "total.records" not in config
    assert httpx.get(f"{w.url}/connectors/{name}/config", timeout=10).json() == config
    task_config = httpx.get(f"{w.url}/connectors/{name}/tasks", timeout=10).json()[0]["config"]
    assert task_config["value.size"] == "32" and task_config["task.rate"] == "40"
    wait_for(lambda: task_states(w.url, name) == ["RUNNING"], 60, "reconfigured task RUNNING")

    patch_delete = httpx.patch(f"{w.url}/connectors/{name}/config", json={"key.shape": None}, timeout=60)
    assert "key.shape" not in patch_delete.json()["config"]
    missing = httpx.patch(f"{w.url}/connectors/nope/config", json={"a": "b"}, timeout=10)
    assert missing.status_code == 404 and missing.json()["message"] == "Connector nope not found"
    invalid = httpx.patch(f"{w.url}/connectors/{name}/config", json={"tasks.max": "0"}, timeout=10)
    assert invalid.status_code == 400
    assert httpx.get(f"{w.url}/connectors/{name}/config", timeout=10).json()["value.size"] == "32"


def test_put_config_creates_then_updates(module_worker: RunningWorker) -> None:
    w = module_worker
    name = unique("put")
    config = {"connector.class": "datagen", "topic": unique("put"), "records.per.second": "10"}
    created = httpx.put(f"{w.url}/connectors/{name}/config", json=config, timeout=60)
    assert created.status_code == 201 and created.headers["location"] == f"{w.url}/connectors/{name}"
    updated = httpx.put(f"{w.url}/connectors/{name}/config", json={**config, "tasks.max": "2"}, timeout=60)
    assert updated.status_code == 200 and len(updated.json()["tasks"]) == 2
    mismatch = httpx.put(f"{w.url}/connectors/{name}/config", json={**config, "name": "other"}, timeout=10)
    assert mismatch.status_code == 400
    assert (
        mismatch.json()["message"]
        == f"Connector name configuration (other) doesn't match connector name in the URL ({name})"
    )
    tasks_config = httpx.get(f"{w.url}/connectors/{name}/tasks-config", timeout=10).json()
    assert sorted(tasks_config) == [f"{name}-0", f"{name}-1"]
    listing = httpx.get(f"{w.url}/connectors", params=[("expand", "status"), ("expand", "info")], timeout=10).json()
    assert listing[name]["info"]["config"]["tasks.max"] == "2"
    assert listing[name]["status"]["name"] == name
