"""A sink whose topic does not exist yet, or gains partitions, picks them up without a restart."""

from __future__ import annotations

from pathlib import Path

import httpx
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewPartitions

from sparklink.clients.settings import client_config
from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.assembly import RunningWorker
from tests.helpers import create_topic, task_states, unique, wait_for


def produce(kafka: KafkaCluster, topic: str, values: list[str], partition: int = 0) -> None:
    producer = Producer(client_config(kafka.bootstrap_servers))
    for value in values:
        producer.produce(topic, value=value.encode(), partition=partition)
    assert producer.flush(30) == 0


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_sink_created_before_its_topic_and_topic_growing(
    kafka: KafkaCluster, module_worker: RunningWorker, tmp_path: Path
) -> None:
    topic, name, out = unique("later"), unique("early-sink"), tmp_path / "out.txt"
    config = {"connector.class": "FileStreamSink", "topics": topic, "file": str(out)}
    assert (
        httpx.post(f"{module_worker.url}/connectors", json={"name": name, "config": config}, timeout=60).status_code
        == 201
    )
    wait_for(lambda: task_states(module_worker.url, name) == ["RUNNING"], 60, "the idle sink task RUNNING")

    create_topic(kafka.bootstrap_servers, topic, 1)
    produce(kafka, topic, ["a", "b"])
    wait_for(lambda: lines(out) == ["a", "b"], 90, "records of the topic created after the sink")

    admin = AdminClient(client_config(kafka.bootstrap_servers))
    admin.create_partitions([NewPartitions(topic, 2)])[topic].result(30)
    produce(kafka, topic, ["c"], partition=1)
    wait_for(lambda: sorted(lines(out)) == ["a", "b", "c"], 90, "records of the new partition")
    assert task_states(module_worker.url, name) == ["RUNNING"]
