"""Fixtures for the MirrorMaker 2 tests: a second KRaft cluster (the replication target) and helpers.

Loaded as a pytest plugin from tests/conftest.py, so the session-scoped cluster is shared by every
mirror test module. The shared `kafka` cluster is the source; `target_kafka` is the target.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition

from sparklink.clients.settings import KafkaClientSettings
from sparklink.connectors.mirror import formats
from sparklink.platform.kafka import KafkaCluster
from tests.helpers import Cluster, clients, read_topic, topic_size
from tests.support.kafka import kafka_cluster


@pytest.fixture(scope="session")
def target_kafka() -> Iterator[KafkaCluster]:
    with kafka_cluster("sparklink-test-kafka-target-", heap="384m") as cluster:
        yield cluster


# ---------------------------------------------------------------------- helpers
def mirror_config(source: KafkaCluster, target: KafkaCluster, source_alias: str, **extra: str) -> dict[str, str]:
    """Connector config for one flow between the test clusters (single brokers: replication 1)."""
    return {
        "source.cluster.alias": source_alias,
        "target.cluster.alias": "dst",
        "source.cluster.bootstrap.servers": source.bootstrap_servers,
        "target.cluster.bootstrap.servers": target.bootstrap_servers,
        "replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1",
        "sync.topic.acls.enabled": "false",
        # The source cluster is shared by the session; its `heartbeats` topic (from the heartbeat
        # test) would otherwise join every flow. The heartbeat test turns this back on.
        "heartbeats.replication.enabled": "false",
        **extra,
    }


def _client(cluster: KafkaCluster | Cluster) -> KafkaClientSettings:
    """A test cluster's client settings: a local cluster's PLAINTEXT listener, or given settings."""
    return clients(cluster.bootstrap_servers if isinstance(cluster, KafkaCluster) else cluster)


def create_topic(cluster: KafkaCluster | Cluster, topic: str, partitions: int, **config: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient(_client(cluster).librdkafka())
    admin.create_topics([NewTopic(topic, partitions, 1, config=config)])[topic].result(30)


def produce(cluster: KafkaCluster | Cluster, topic: str, records: list[dict[str, object]]) -> None:
    """Each record: partition, key, value, headers, timestamp (all optional but value)."""
    from confluent_kafka import Producer

    producer = Producer(_client(cluster).librdkafka(**{"linger.ms": 5}))
    for r in records:
        producer.produce(topic, **r)  # type: ignore[arg-type]
    assert producer.flush(30) == 0


Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]


def read_partitions(cluster: KafkaCluster, topic: str, expected: int, timeout: float = 90.0) -> dict[int, list[Record]]:
    """Every record of `topic` once it holds `expected`, per partition in offset order."""
    out: dict[int, list[tuple[int, Record]]] = {}
    for msg in read_topic(cluster.bootstrap_servers, topic, expected, timeout):
        out.setdefault(msg.partition(), []).append(
            (msg.offset(), (msg.key(), msg.value(), list(msg.headers() or []), msg.timestamp()[1]))
        )
    return {p: [r for _, r in sorted(rs, key=lambda x: x[0])] for p, rs in out.items()}


def commit(cluster: KafkaCluster | Cluster, group: str, positions: dict[tuple[str, int], int]) -> None:
    consumer = Consumer(_client(cluster).librdkafka(**{"group.id": group}))
    try:
        consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in positions.items()], asynchronous=False)
    finally:
        consumer.close()


def committed(
    cluster: KafkaCluster | Cluster, group: str, partitions: list[tuple[str, int]]
) -> dict[tuple[str, int], int]:
    consumer = Consumer(_client(cluster).librdkafka(**{"group.id": group}))
    try:
        got = consumer.committed([TopicPartition(t, p) for t, p in partitions], timeout=30)
        return {(tp.topic, tp.partition): tp.offset for tp in got if tp.offset >= 0}
    finally:
        consumer.close()


def checkpoints(target: KafkaCluster | Cluster, topic: str, group: str) -> dict[int, formats.Checkpoint]:
    """The latest checkpoint of each partition for `group`; empty while the topic has none (never waits)."""
    out: dict[int, formats.Checkpoint] = {}
    if topic_size(_client(target), topic) == 0:
        return out
    for msg in read_topic(_client(target), topic, 1):
        cp = formats.decode_checkpoint(msg.key(), msg.value())
        if cp.group == group:
            out[cp.partition] = cp  # the latest one wins, as in a compacted topic
    return out
