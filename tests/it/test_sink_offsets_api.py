"""KIP-875 offsets for sink connectors (consumer group `connect-<name>`), after OffsetsApiIntegrationTest."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from confluent_kafka import Consumer, Producer

from sparklink.clients.settings import client_config
from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.assembly import RunningWorker
from tests.helpers import create_topic, unique, wait_for

# FileStreamSink manages no offsets of its own, so (as in Kafka) it reports the alteration as complete.
ALTERED = "The offsets for this connector have been altered successfully"


def produce(kafka: KafkaCluster, topic: str, partitions: int, per_partition: int) -> None:
    producer = Producer(client_config(kafka.bootstrap_servers))
    for p in range(partitions):
        for i in range(per_partition):
            producer.produce(topic, value=f"{p}:{i}".encode(), partition=p)
    assert producer.flush(30) == 0


def sink(
    worker: RunningWorker,
    kafka: KafkaCluster,
    tmp_path: Path,
    partitions: int = 2,
    per_partition: int = 10,
    **extra: str,
) -> tuple[str, str, Path]:
    topic, name, out = unique("sinkoff"), unique("sink"), tmp_path / f"{unique('out')}.txt"
    create_topic(kafka.bootstrap_servers, topic, partitions)
    produce(kafka, topic, partitions, per_partition)
    config = {"connector.class": "FileStreamSink", "topics": topic, "file": str(out), **extra}
    assert httpx.post(f"{worker.url}/connectors", json={"name": name, "config": config}, timeout=60).status_code == 201
    return topic, name, out


def offsets(worker: RunningWorker, name: str) -> list[dict[str, object]]:
    body = httpx.get(f"{worker.url}/connectors/{name}/offsets", timeout=30).json()
    return sorted(body["offsets"], key=lambda o: o["partition"]["kafka_partition"])  # type: ignore[index]


def expected(topic: str, offsets_by_partition: dict[int, int]) -> list[dict[str, object]]:
    return [
        {"partition": {"kafka_topic": topic, "kafka_partition": p}, "offset": {"kafka_offset": o}}
        for p, o in sorted(offsets_by_partition.items())
    ]


def patch(worker: RunningWorker, name: str, body: object) -> httpx.Response:
    return httpx.patch(f"{worker.url}/connectors/{name}/offsets", json=body, timeout=60)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_get_alter_and_reset_sink_offsets(kafka: KafkaCluster, module_worker: RunningWorker, tmp_path: Path) -> None:
    topic, name, out = sink(module_worker, kafka, tmp_path)
    wait_for(lambda: offsets(module_worker, name) == expected(topic, {0: 10, 1: 10}), 90, "group at the end")
    assert len(lines(out)) == 20

    assert httpx.put(f"{module_worker.url}/connectors/{name}/stop", timeout=60).status_code == 204
    body = {
        "offsets": [
            {"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": 5}},
            {"partition": {"kafka_topic": topic, "kafka_partition": 1}, "offset": None},
        ]
    }
    response = patch(module_worker, name, body)
    assert response.status_code == 200 and response.json() == {"message": ALTERED}
    assert offsets(module_worker, name) == expected(topic, {0: 5})

    # Resumed, it re-reads partition 0 from 5 and partition 1 from the start: 5 + 10 more lines.
    assert httpx.put(f"{module_worker.url}/connectors/{name}/resume", timeout=60).status_code == 202
    wait_for(lambda: len(lines(out)) == 35, 90, "the sink to catch up from the altered offsets")
    assert sorted(lines(out)[20:]) == sorted([f"0:{i}" for i in range(5, 10)] + [f"1:{i}" for i in range(10)])

    assert httpx.put(f"{module_worker.url}/connectors/{name}/stop", timeout=60).status_code == 204
    for _ in range(2):
        reset = httpx.delete(f"{module_worker.url}/connectors/{name}/offsets", timeout=60)
        assert reset.status_code == 200 and "have been reset successfully" in reset.json()["message"]
        assert offsets(module_worker, name) == []


def test_sink_offsets_with_an_overridden_group(
    kafka: KafkaCluster, module_worker: RunningWorker, tmp_path: Path
) -> None:
    group = unique("override")
    topic, name, _ = sink(
        module_worker, kafka, tmp_path, partitions=1, per_partition=4, **{"consumer.override.group.id": group}
    )
    wait_for(lambda: offsets(module_worker, name) == expected(topic, {0: 4}), 90, "the overridden group at the end")
    consumer = Consumer(client_config(kafka.bootstrap_servers, **{"group.id": group}))
    try:
        from confluent_kafka import TopicPartition

        assert consumer.committed([TopicPartition(topic, 0)], timeout=10)[0].offset == 4
    finally:
        consumer.close()


def test_zombie_sink_tasks_block_alter_and_reset(
    kafka: KafkaCluster, module_worker: RunningWorker, tmp_path: Path
) -> None:
    topic, name, _ = sink(module_worker, kafka, tmp_path, partitions=1, per_partition=2)
    wait_for(lambda: offsets(module_worker, name), 90, "committed offsets")
    assert httpx.put(f"{module_worker.url}/connectors/{name}/stop", timeout=60).status_code == 204
    zombie = Consumer(
        client_config(kafka.bootstrap_servers, **{"group.id": f"connect-{name}", "session.timeout.ms": 10000})
    )
    zombie.subscribe([topic])
    try:
        wait_for(lambda: zombie.poll(0.5) is not None or zombie.assignment(), 60, "the zombie to join the group")
        body = {"offsets": [{"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": 0}}]}
        for response in (
            patch(module_worker, name, body),
            httpx.delete(f"{module_worker.url}/connectors/{name}/offsets", timeout=60),
        ):
            assert response.status_code == 500
            assert "zombie sink tasks" in response.json()["message"]
    finally:
        zombie.close()
    assert offsets(module_worker, name) == expected(topic, {0: 2})


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"partition": None, "offset": {"kafka_offset": 1}},
            "The partition for a sink connector offset cannot be null or missing",
        ),
        (
            {"partition": {"kafka_topic": "t"}, "offset": {"kafka_offset": 1}},
            "The partition for a sink connector offset must contain the keys 'kafka_topic' and 'kafka_partition'",
        ),
        (
            {"partition": {"kafka_topic": None, "kafka_partition": 0}, "offset": {"kafka_offset": 1}},
            "Kafka topic names must be valid strings and may not be null",
        ),
        (
            {"partition": {"kafka_topic": "t", "kafka_partition": None}, "offset": {"kafka_offset": 1}},
            "Kafka partitions must be valid numbers and may not be null",
        ),
        (
            {"partition": {"kafka_topic": "t", "kafka_partition": "a"}, "offset": {"kafka_offset": 1}},
            "Failed to parse the following Kafka partition value in the provided offsets: 'a'. "
            "Partition values for sink connectors need to be integers.",
        ),
        (
            {"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"other": 1}},
            "The offset for a sink connector should either be null or contain the key 'kafka_offset'",
        ),
        (
            {"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": "x"}},
            "Failed to parse the following Kafka offset value in the provided offsets: 'x'. Offset values for sink "
            "connectors need to be integers.",
        ),
    ],
)
def test_invalid_sink_offsets_get_400(
    module_worker: RunningWorker, tmp_path: Path, entry: dict[str, object], message: str
) -> None:
    name = unique("badsink")
    config = {"connector.class": "FileStreamSink", "topics": unique("t"), "file": str(tmp_path / "x.txt")}
    body = {"name": name, "config": config, "initial_state": "STOPPED"}
    assert httpx.post(f"{module_worker.url}/connectors", json=body, timeout=60).status_code == 201
    response = patch(module_worker, name, {"offsets": [entry]})
    assert response.status_code == 400
    assert response.json() == {"error_code": 400, "message": message}


def test_string_numbers_are_accepted_for_sink_offsets(
    kafka: KafkaCluster, module_worker: RunningWorker, tmp_path: Path
) -> None:
    name, topic = unique("strsink"), unique("strsink")
    create_topic(kafka.bootstrap_servers, topic, 1)
    config = {"connector.class": "FileStreamSink", "topics": topic, "file": str(tmp_path / "s.txt")}
    body = {"name": name, "config": config, "initial_state": "STOPPED"}
    assert httpx.post(f"{module_worker.url}/connectors", json=body, timeout=60).status_code == 201
    entry = {"partition": {"kafka_topic": topic, "kafka_partition": "0"}, "offset": {"kafka_offset": "0"}}
    assert patch(module_worker, name, {"offsets": [entry]}).status_code == 200
    assert offsets(module_worker, name) == expected(topic, {0: 0})
