"""KIP-875 offsets for source connectors, after Apache Kafka's OffsetsApiIntegrationTest."""

from __future__ import annotations

import json

import httpx
import pytest

from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.assembly import RunningWorker
from tests.helpers import read_topic, task_states, unique, wait_for

ALTERED = (
    "The Connect framework-managed offsets for this connector have been altered successfully. However, if this "
    "connector manages offsets externally, they will need to be manually altered in the system that the connector uses."
)
RESET = ALTERED.replace("altered", "reset")


def stopped_required(name: str) -> str:
    return (
        "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the "
        f"specified connector by issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint"
    )


def create(worker: RunningWorker, topic: str, tasks: int = 2, **extra: str) -> str:
    name = unique("offsets")
    config = {
        "connector.class": "datagen",
        "topic": topic,
        "records.per.second": "50",
        "tasks.max": str(tasks),
        **extra,
    }
    assert httpx.post(f"{worker.url}/connectors", json={"name": name, "config": config}, timeout=60).status_code == 201
    return name


def offsets(worker: RunningWorker, name: str) -> list[dict[str, object]]:
    response = httpx.get(f"{worker.url}/connectors/{name}/offsets", timeout=30)
    assert response.status_code == 200, response.text
    return sorted(response.json()["offsets"], key=lambda o: json.dumps(o["partition"], sort_keys=True))


def patch(worker: RunningWorker, name: str, body: object) -> httpx.Response:
    return httpx.patch(f"{worker.url}/connectors/{name}/offsets", json=body, timeout=60)


def test_get_offsets_of_unknown_connector_is_404(module_worker: RunningWorker) -> None:
    response = httpx.get(f"{module_worker.url}/connectors/nope/offsets", timeout=10)
    assert response.status_code == 404 and response.json()["message"] == "Connector nope not found"
    for response in (
        patch(module_worker, "nope", {"offsets": [{"partition": {}, "offset": {}}]}),
        httpx.delete(f"{module_worker.url}/connectors/nope/offsets", timeout=10),
    ):
        assert response.status_code == 404 and response.json()["message"] == "Connector nope not found"


def test_get_source_offsets_shows_each_task_partition(module_worker: RunningWorker) -> None:
    name = create(module_worker, unique("get"))
    wait_for(lambda: len(offsets(module_worker, name)) == 2, 60, "offsets for both tasks")
    got = offsets(module_worker, name)
    assert [o["partition"] for o in got] == [{"task": 0}, {"task": 1}]
    assert all(isinstance(o["offset"], dict) and o["offset"]["position"] > 0 for o in got)  # type: ignore[index]


def test_alter_and_reset_are_refused_unless_stopped(module_worker: RunningWorker) -> None:
    name = create(module_worker, unique("refused"))
    body = {"offsets": [{"partition": {"task": 0}, "offset": {"position": 5}}]}
    for state_change in (None, "pause"):
        if state_change:
            assert httpx.put(f"{module_worker.url}/connectors/{name}/{state_change}", timeout=60).status_code == 202
        for response in (
            patch(module_worker, name, body),
            httpx.delete(f"{module_worker.url}/connectors/{name}/offsets", timeout=60),
        ):
            assert response.status_code == 400
            assert response.json() == {"error_code": 400, "message": stopped_required(name)}


def test_alter_then_resume_continues_from_the_altered_offset(kafka: KafkaCluster, module_worker: RunningWorker) -> None:
    topic = unique("alter")
    name = create(module_worker, topic, tasks=1, **{"total.records": "1000000"})
    wait_for(lambda: offsets(module_worker, name), 60, "first offsets")
    assert httpx.put(f"{module_worker.url}/connectors/{name}/stop", timeout=60).status_code == 204
    before = read_topic(kafka.bootstrap_servers, topic, 1)
    response = patch(module_worker, name, {"offsets": [{"partition": {"task": 0}, "offset": {"position": 500000}}]})
    assert response.status_code == 200 and response.json() == {"message": ALTERED}
    assert offsets(module_worker, name) == [{"partition": {"task": 0}, "offset": {"position": 500000}}]

    assert httpx.put(f"{module_worker.url}/connectors/{name}/resume", timeout=60).status_code == 202
    wait_for(lambda: task_states(module_worker.url, name) == ["RUNNING"], 60, "RUNNING")
    records = read_topic(kafka.bootstrap_servers, topic, len(before) + 5)
    resumed = [json.loads(r.value())["seq"] for r in records[len(before) :]]
    assert resumed and min(resumed) == 500000


def test_reset_twice_is_idempotent_and_restarts_from_zero(kafka: KafkaCluster, module_worker: RunningWorker) -> None:
    topic = unique("reset")
    name = create(module_worker, topic, tasks=1)
    wait_for(
        lambda: offsets(module_worker, name) and offsets(module_worker, name)[0]["offset"]["position"] > 20,  # type: ignore[index]
        60,
        "some progress",
    )
    assert httpx.put(f"{module_worker.url}/connectors/{name}/stop", timeout=60).status_code == 204
    written = len(read_topic(kafka.bootstrap_servers, topic, 20))
    for _ in range(2):
        response = httpx.delete(f"{module_worker.url}/connectors/{name}/offsets", timeout=60)
        assert response.status_code == 200 and response.json() == {"message": RESET}
        assert offsets(module_worker, name) == []
    assert httpx.put(f"{module_worker.url}/connectors/{name}/resume", timeout=60).status_code == 202
    records = read_topic(kafka.bootstrap_servers, topic, written + 1)
    assert json.loads(records[written].value())["seq"] == 0


def test_a_null_offset_removes_a_partition_and_stopped_connectors_accept_offsets(module_worker: RunningWorker) -> None:
    name = unique("null")
    config = {"connector.class": "datagen", "topic": unique("null"), "tasks.max": "2"}
    body = {"name": name, "config": config, "initial_state": "STOPPED"}
    assert httpx.post(f"{module_worker.url}/connectors", json=body, timeout=60).status_code == 201
    two = {
        "offsets": [
            {"partition": {"task": 0}, "offset": {"position": 7}},
            {"partition": {"task": 1}, "offset": {"position": 9}},
        ]
    }
    assert patch(module_worker, name, two).status_code == 200
    assert patch(module_worker, name, {"offsets": [{"partition": {"task": 0}, "offset": None}]}).status_code == 200
    assert offsets(module_worker, name) == [{"partition": {"task": 1}, "offset": {"position": 9}}]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "Partitions / offsets need to be provided for an alter offsets request"),
        ({"offsets": []}, "Partitions / offsets need to be provided for an alter offsets request"),
        (
            {"offsets": [{"partition": {"task": 0}, "offset": {"position": {"nested": 1}}}]},
            "Source connector offset values must be primitives (string, number, boolean or null); "
            "'position' is an object",
        ),
        (
            {"offsets": [{"partition": [1], "offset": {"position": 1}}]},
            "Source connector partitions must be JSON objects, not an array",
        ),
        (
            {"offsets": [{"partition": {"task": 0}, "offset": {"position": 1}, "extra": 1}]},
            "Unrecognized field(s) ['extra'] in an offsets entry; allowed: 'partition', 'offset'",
        ),
    ],
)
def test_invalid_alter_bodies_get_400(module_worker: RunningWorker, body: object, message: str) -> None:
    name = unique("invalid")
    config = {"connector.class": "datagen", "topic": unique("invalid")}
    created = httpx.post(
        f"{module_worker.url}/connectors", json={"name": name, "config": config, "initial_state": "STOPPED"}, timeout=60
    )
    assert created.status_code == 201
    response = patch(module_worker, name, body)
    assert response.status_code == 400
    assert response.json() == {"error_code": 400, "message": message}
    assert offsets(module_worker, name) == []


def test_a_datagen_position_beyond_a_spark_long_gets_400_naming_the_bound(module_worker: RunningWorker) -> None:
    name = unique("beyond")
    config = {"connector.class": "datagen", "topic": unique("beyond")}
    created = httpx.post(
        f"{module_worker.url}/connectors", json={"name": name, "config": config, "initial_state": "STOPPED"}, timeout=60
    )
    assert created.status_code == 201
    response = patch(module_worker, name, {"offsets": [{"partition": {"task": 0}, "offset": {"position": 2**63}}]})
    assert response.status_code == 400
    assert "an integer from 0 to 9223372036854775807" in response.json()["message"]
    assert offsets(module_worker, name) == []
