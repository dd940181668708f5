"""KIP-558 active topics, after Apache Kafka's ConnectorTopicsIntegrationTest."""

from __future__ import annotations

import httpx

from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.assembly import RunningWorker
from sparklink.worker.storage.kafka_log import KafkaLog
from tests.conftest import WorkerFactory
from tests.helpers import unique, wait_for


def topics(worker: RunningWorker, name: str) -> list[str]:
    response = httpx.get(f"{worker.url}/connectors/{name}/topics", timeout=10)
    assert response.status_code == 200, response.text
    body = response.json()
    assert list(body) == [name]
    return sorted(body[name]["topics"])


def create(worker: RunningWorker, topic: str) -> str:
    name = unique("tracked")
    config = {"connector.class": "datagen", "topic": topic, "records.per.second": "20"}
    assert httpx.post(f"{worker.url}/connectors", json={"name": name, "config": config}, timeout=60).status_code == 201
    return name


def test_active_topics_are_tracked_reset_and_cleared(kafka: KafkaCluster, worker_factory: WorkerFactory) -> None:
    worker = worker_factory()
    assert topics(worker, "not-yet") == []
    first, second = unique("first"), unique("second")
    name = create(worker, first)
    wait_for(lambda: topics(worker, name) == [first], 60, "the first topic tracked")

    patched = httpx.patch(f"{worker.url}/connectors/{name}/config", json={"topic": second}, timeout=60)
    assert patched.status_code == 200
    wait_for(lambda: topics(worker, name) == sorted([first, second]), 60, "both topics tracked")

    assert httpx.put(f"{worker.url}/connectors/{name}/topics/reset", timeout=10).status_code == 202
    # Only the topic still in use comes back after a reset.
    wait_for(lambda: topics(worker, name) == [second], 60, "only the active topic after reset")

    assert httpx.delete(f"{worker.url}/connectors/{name}", timeout=60).status_code == 204
    assert topics(worker, name) == []
    keys = [k for k, v in _status_records(kafka, worker) if k.startswith("status-topic-") and v is not None]
    live = {
        k for k, v in _latest(_status_records(kafka, worker)).items() if v is not None and k.startswith("status-topic-")
    }
    assert keys and not live, "deleting the connector must tombstone its topic records"
    assert f"status-topic-{second}:connector-{name}" in keys


def test_topic_tracking_disabled(kafka: KafkaCluster, worker_factory: WorkerFactory) -> None:
    worker = worker_factory(**{"topic.tracking.enable": "false"})
    name = create(worker, unique("untracked"))
    wait_for(lambda: worker.stores.offsets.get(name), 60, "records written")
    for response in (
        httpx.get(f"{worker.url}/connectors/{name}/topics", timeout=10),
        httpx.put(f"{worker.url}/connectors/{name}/topics/reset", timeout=10),
    ):
        assert response.status_code == 403
        assert response.json() == {"error_code": 403, "message": "Topic tracking is disabled."}
    assert not [k for k, _ in _status_records(kafka, worker) if k.startswith("status-topic-")]


def test_topic_tracking_reset_disabled(worker_factory: WorkerFactory) -> None:
    worker = worker_factory(**{"topic.tracking.allow.reset": "false"})
    topic = unique("noreset")
    name = create(worker, topic)
    wait_for(lambda: topics(worker, name) == [topic], 60, "topic tracked")
    response = httpx.put(f"{worker.url}/connectors/{name}/topics/reset", timeout=10)
    assert response.status_code == 403
    assert response.json() == {"error_code": 403, "message": "Topic tracking reset is disabled."}
    assert topics(worker, name) == [topic]


def _status_records(kafka: KafkaCluster, worker: RunningWorker) -> list[tuple[str, bytes | None]]:
    log = KafkaLog(KafkaClientSettings(kafka.bootstrap_servers), worker.config.status_topic)
    return [(k.decode() if k else "", v) for k, v in log.read_all()]


def _latest(records: list[tuple[str, bytes | None]]) -> dict[str, bytes | None]:
    return dict(records)
