"""KIP-875 offsets on the three MM2 connectors: exact formats, MM2's validation errors, and that an
altered or reset source offset really moves where replication resumes."""

from __future__ import annotations

from typing import Any

import httpx

from sparklink.platform.kafka import KafkaCluster
from tests.conftest import WorkerFactory
from tests.helpers import status, task_states, topic_size, unique, wait_for
from tests.it.mirror_fixtures import create_topic, mirror_config, produce, read_partitions

MIRROR = "org.apache.kafka.connect.mirror."


def offsets(url: str, name: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{url}/connectors/{name}/offsets", timeout=30)
    assert response.status_code == 200, response.text
    result: list[dict[str, Any]] = response.json()["offsets"]
    return result


def patch(url: str, name: str, entries: list[dict[str, Any]]) -> httpx.Response:
    return httpx.patch(f"{url}/connectors/{name}/offsets", json={"offsets": entries}, timeout=60)


def stop(url: str, name: str) -> None:
    assert httpx.put(f"{url}/connectors/{name}/stop", timeout=60).status_code == 204
    wait_for(lambda: status(url, name)["connector"]["state"] == "STOPPED", 60, f"{name} STOPPED")


ALTERED = {"message": "The offsets for this connector have been altered successfully"}
RESET = {"message": "The offsets for this connector have been reset successfully"}


def test_source_offsets_list_alter_and_reset_move_replication(
    kafka: KafkaCluster, target_kafka: KafkaCluster, worker_factory: WorkerFactory
) -> None:
    alias, topic = unique("src"), unique("ledger")
    remote = f"{alias}.{topic}"
    create_topic(kafka, topic, 1)
    produce(kafka, topic, [{"value": str(i).encode()} for i in range(50)])
    worker = worker_factory(**{"bootstrap.servers": target_kafka.bootstrap_servers})
    config = {
        **mirror_config(kafka, target_kafka, alias, topics=topic),
        "connector.class": MIRROR + "MirrorSourceConnector",
    }
    assert httpx.post(f"{worker.url}/connectors", json={"name": "ms", "config": config}, timeout=60).status_code == 201
    wait_for(lambda: topic_size(target_kafka.bootstrap_servers, remote) == 50, 90, "50 records replicated")

    partition = {"cluster": alias, "partition": 0, "topic": topic}
    got = wait_for(lambda: (o := offsets(worker.url, "ms")) and o[0]["offset"]["offset"] == 49 and o, 30, "offset 49")
    assert got == [{"partition": partition, "offset": {"offset": 49}}]
    assert list(got[0]["partition"]) == ["cluster", "partition", "topic"]  # Apache Connect's key order

    response = patch(worker.url, "ms", [{"partition": partition, "offset": {"offset": 19}}])
    assert response.status_code == 400 and "STOPPED state" in response.json()["message"]
    stop(worker.url, "ms")

    # MM2's own validation, as ConnectExceptions (500).
    bad = patch(worker.url, "ms", [{"partition": {"partition": 0, "topic": topic}, "offset": {"offset": 1}}])
    assert bad.status_code == 500
    assert bad.json() == {
        "error_code": 500,
        "message": f"Source partition {{partition=0, topic={topic}}} is missing the 'cluster' key, which is required",
    }
    bad = patch(worker.url, "ms", [{"partition": partition, "offset": {"offset": -1}}])
    assert bad.status_code == 500
    assert bad.json()["message"] == (
        f"Source offset {{offset=-1}} for source partition {{cluster={alias}, partition=0, topic={topic}}} has an "
        "invalid value -1 for the 'offset' key, which cannot be negative"
    )
    assert offsets(worker.url, "ms") == [{"partition": partition, "offset": {"offset": 49}}]

    # Alter to 19: the task resumes at upstream offset 20, so records 20..49 are mirrored again.
    response = patch(worker.url, "ms", [{"partition": partition, "offset": {"offset": 19}}])
    assert (response.status_code, response.json()) == (200, ALTERED)
    assert offsets(worker.url, "ms") == [{"partition": partition, "offset": {"offset": 19}}]
    assert httpx.put(f"{worker.url}/connectors/ms/resume", timeout=60).status_code == 202
    values = [v for _k, v, _h, _t in read_partitions(target_kafka, remote, 80)[0]]
    assert values == [str(i).encode() for i in range(50)] + [str(i).encode() for i in range(20, 50)]

    # Reset: no stored offset, so the task starts from the earliest record again.
    wait_for(lambda: offsets(worker.url, "ms")[0]["offset"]["offset"] == 49, 60, "offset 49 again")
    stop(worker.url, "ms")
    assert (httpx.delete(f"{worker.url}/connectors/ms/offsets", timeout=60).json()) == RESET
    assert offsets(worker.url, "ms") == []
    assert httpx.put(f"{worker.url}/connectors/ms/resume", timeout=60).status_code == 202
    wait_for(lambda: topic_size(target_kafka.bootstrap_servers, remote) == 130, 90, "all 50 records once more")
    assert task_states(worker.url, "ms") == ["RUNNING"]


def test_checkpoint_and_heartbeat_offsets_accept_only_zero(
    kafka: KafkaCluster, target_kafka: KafkaCluster, worker_factory: WorkerFactory
) -> None:
    worker = worker_factory(**{"bootstrap.servers": target_kafka.bootstrap_servers})
    base = mirror_config(kafka, target_kafka, unique("src"))
    for name, cls in (("mc", "MirrorCheckpointConnector"), ("mh", "MirrorHeartbeatConnector")):
        body = {"name": name, "config": {**base, "connector.class": MIRROR + cls}, "initial_state": "STOPPED"}
        assert httpx.post(f"{worker.url}/connectors", json=body, timeout=60).status_code == 201

    checkpoint = {"partition": 3, "topic": "src.orders", "group": "app"}
    bad = patch(worker.url, "mc", [{"partition": checkpoint, "offset": {"offset": 5}}])
    assert bad.json() == {
        "error_code": 500,
        "message": "Source offset {offset=5} for source partition {partition=3, topic=src.orders, group=app} has an "
        "invalid value 5 for the 'offset' key; the only accepted value is 0",
    }
    assert patch(worker.url, "mc", [{"partition": checkpoint, "offset": {"offset": 0}}]).json() == ALTERED
    assert offsets(worker.url, "mc") == [{"partition": checkpoint, "offset": {"offset": 0}}]
    assert httpx.delete(f"{worker.url}/connectors/mc/offsets", timeout=60).json() == RESET
    assert offsets(worker.url, "mc") == []

    beat = {"sourceClusterAlias": "us", "targetClusterAlias": "eu"}
    bad = patch(worker.url, "mh", [{"partition": {"sourceClusterAlias": "us"}, "offset": {"offset": 0}}])
    assert bad.json()["message"] == (
        "Source partition {sourceClusterAlias=us} is missing the 'targetClusterAlias' key, which is required"
    )
    assert patch(worker.url, "mh", [{"partition": beat, "offset": {"offset": 0}}]).json() == ALTERED
    assert patch(worker.url, "mh", [{"partition": beat, "offset": None}]).json() == ALTERED  # tombstones pass
    assert offsets(worker.url, "mh") == []
