"""Bad input gets a precise 4xx with Connect's error body, and nothing running is disturbed."""

from __future__ import annotations

import httpx

from sparklink.worker.assembly import RunningWorker
from tests.conftest import WorkerFactory
from tests.helpers import task_states, unique, wait_for


def _error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error_code", "message"}
    assert body["error_code"] == status
    return str(body["message"])


def test_bad_requests_get_connect_errors_and_leave_running_connectors_alone(worker_factory: WorkerFactory) -> None:
    worker = worker_factory()
    url = worker.url
    topic = unique("steady")
    good = {"name": "steady", "config": {"connector.class": "datagen", "topic": topic, "records.per.second": "50"}}
    assert httpx.post(f"{url}/connectors", json=good, timeout=60).status_code == 201
    wait_for(lambda: task_states(url, "steady") == ["RUNNING"], 60, "steady RUNNING")
    before = _position(worker)

    def post(body: object, **kw: object) -> httpx.Response:
        payload = {"content": body} if isinstance(body, str | bytes) else {"json": body}
        return httpx.post(f"{url}/connectors", timeout=30, **kw, **payload)  # type: ignore[arg-type]

    assert "Malformed JSON" in _error(
        post('{"name": "x", "config": {', headers={"Content-Type": "application/json"}), 400
    )
    assert "empty" in _error(post(b""), 400)
    assert "name" in _error(post({"config": {"connector.class": "datagen", "topic": "t"}}), 400)
    assert "Unrecognized field" in _error(post({"name": "x", "config": {}, "bogus": 1}), 400)
    # Connect 4.4's words, which no longer quote the config (its secrets included).
    no_class = post({"name": "x", "config": {"topic": "t", "sasl.jaas.config": "password=s3cret"}})
    assert _error(no_class, 400) == "Connector config contains no connector type"
    message = _error(post({"name": "x", "config": {"connector.class": "NoSuchConnector"}}), 400)
    assert message.startswith(
        "Failed to find any class that implements Connector and which name matches NoSuchConnector"
    )
    assert "datagen" in message
    message = _error(
        post(
            {
                "name": "x",
                "config": {"connector.class": "datagen", "topic": "t", "records.per.second": "fast", "tasks.max": "0"},
            }
        ),
        400,
    )
    assert message.startswith("Connector configuration is invalid and contains the following 3 error(s):")
    assert "Invalid value fast for configuration records.per.second" in message
    assert "Invalid value null for configuration records.per.second: Value must be non-null" in message
    assert "Invalid value 0 for configuration tasks.max: Value must be at least 1" in message
    assert message.endswith(
        "You can also find the above list of errors at the endpoint "
        "`/connector-plugins/{connectorType}/config/validate`"
    )
    assert "doesn't match connector name" in _error(
        post({"name": "x", "config": {"name": "y", "connector.class": "datagen", "topic": "t"}}), 400
    )
    assert "already exists" in _error(post(good), 409)
    assert "initial_state" in _error(post({"name": "x", "config": good["config"], "initial_state": "SLEEPING"}), 400)

    assert _error(httpx.get(f"{url}/connectors/missing", timeout=10), 404) == "Connector missing not found"
    assert (
        _error(httpx.get(f"{url}/connectors/missing/status", timeout=10), 404)
        == "No status found for connector missing"
    )
    assert _error(httpx.delete(f"{url}/connectors/missing", timeout=10), 404) == "Connector missing not found"
    assert _error(httpx.get(f"{url}/no/such/path", timeout=10), 404) == "HTTP 404 Not Found"
    json_type = {"Content-Type": "application/json"}
    assert _error(httpx.put(f"{url}/connectors/steady/config", content=b"[1,2]", headers=json_type, timeout=10), 400)
    # A body without Content-Type is Jersey's 415 in Connect, and here.
    assert _error(httpx.put(f"{url}/connectors/steady/config", content=b"[1,2]", timeout=10), 415)

    # Nothing was created, the steady connector kept running, and the worker still serves.
    assert httpx.get(f"{url}/connectors", timeout=10).json() == ["steady"]
    assert task_states(url, "steady") == ["RUNNING"]
    wait_for(lambda: _position(worker) > before, 30, "the steady connector to keep producing")


def test_trailing_slashes_and_bodiless_requests_work(worker_factory: WorkerFactory) -> None:
    worker = worker_factory()
    url = worker.url
    body = {"name": "slash", "config": {"connector.class": "datagen", "topic": unique("slash")}}
    assert httpx.post(f"{url}/connectors/", json=body, timeout=60).status_code == 201
    assert httpx.get(f"{url}/connectors/slash/", timeout=10).json()["name"] == "slash"
    assert httpx.get(f"{url}/connectors/", timeout=10).json() == ["slash"]
    assert httpx.delete(f"{url}/connectors/slash/", timeout=60).status_code == 204
    assert httpx.get(f"{url}/connectors", timeout=10).json() == []


def test_root_and_health(worker_factory: WorkerFactory) -> None:
    worker = worker_factory()
    root = httpx.get(f"{worker.url}/", timeout=10).json()
    assert set(root) == {"version", "commit", "kafka_cluster_id"}
    assert root["kafka_cluster_id"] and root["kafka_cluster_id"] == worker.herder.cluster_id
    health = httpx.get(f"{worker.url}/health", timeout=10)
    assert health.status_code == 200 and health.json()["status"] == "healthy"


def _position(worker: RunningWorker) -> int:
    offsets = worker.stores.offsets.get("steady")
    return int(offsets[0][1]["position"]) if offsets else 0
