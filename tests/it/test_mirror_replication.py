"""MirrorSourceConnector on two real clusters: records, naming, new topics, topic configs, syncs."""

from __future__ import annotations

import time

import httpx

from sparklink.connectors.mirror import formats
from sparklink.platform.kafka import KafkaCluster
from tests.conftest import WorkerFactory
from tests.helpers import read_topic, task_states, unique, wait_for
from tests.it.mirror_fixtures import create_topic, mirror_config, produce, read_partitions

SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"


def _records(n: int, partitions: int, base_ts: int) -> list[dict[str, object]]:
    return [
        {
            "partition": i % partitions,
            "key": f"k{i}".encode(),
            "value": f"v{i}".encode() * (1 + i % 3),
            "headers": [("h", f"x{i}".encode()), ("empty", None)],
            "timestamp": base_ts + i,
        }
        for i in range(n)
    ]


def test_records_replicate_with_keys_headers_timestamps_and_new_topics_join(
    kafka: KafkaCluster, target_kafka: KafkaCluster, worker_factory: WorkerFactory
) -> None:
    alias = unique("src")
    topic = unique("orders")
    create_topic(kafka, topic, 3, **{"retention.ms": "86400123"})
    # Distinct timestamps an hour old: older than now, younger than the retention.
    base = int(time.time() * 1000) - 3_600_000
    produce(kafka, topic, _records(300, 3, base))
    worker = worker_factory(**{"bootstrap.servers": target_kafka.bootstrap_servers})
    config = mirror_config(
        kafka,
        target_kafka,
        alias,
        **{
            "connector.class": SOURCE,
            "topics": f"{topic}.*",
            "tasks.max": "2",
            "refresh.topics.interval.seconds": "2",
        },
    )
    response = httpx.post(f"{worker.url}/connectors", json={"name": "mm", "config": config}, timeout=60)
    assert response.status_code == 201, response.text
    wait_for(lambda: task_states(worker.url, "mm") == ["RUNNING", "RUNNING"], 60, "both tasks RUNNING")

    remote = f"{alias}.{topic}"
    got = read_partitions(target_kafka, remote, 300)
    want = read_partitions(kafka, topic, 300)
    assert got == want  # keys, values, headers, timestamps, partitions and order, none lost
    assert sorted(got) == [0, 1, 2]

    # A topic created while the connector runs is found and mirrored without a restart.
    later = f"{topic}-later"
    create_topic(kafka, later, 2)
    produce(kafka, later, _records(20, 2, base + 1000))
    assert read_partitions(target_kafka, f"{alias}.{later}", 20) == read_partitions(kafka, later, 20)

    offsets = httpx.get(f"{worker.url}/connectors/mm/offsets", timeout=30).json()["offsets"]
    last = {(o["partition"]["topic"], o["partition"]["partition"]): o["offset"]["offset"] for o in offsets}
    assert last[(topic, 0)] == 99 and last[(topic, 1)] == 99 and last[(topic, 2)] == 99
    assert all(o["partition"]["cluster"] == alias for o in offsets)

    # Offset syncs: each maps an upstream record to the downstream offset holding the same record.
    syncs = [
        formats.decode_offset_sync(m.key(), m.value())
        for m in read_topic(kafka.bootstrap_servers, "mm2-offset-syncs.dst.internal", 1)
    ]
    mine = [s for s in syncs if s.topic == topic]
    assert mine
    # The tasks restarted when the new topic joined, and a restart may write records again (at least
    # once): the syncs index the remote partitions as they are, repeats included.
    written = read_partitions(target_kafka, remote, _end_total(target_kafka, remote, 3))
    for s in mine:
        assert want[s.partition][s.upstream_offset] == written[s.partition][s.downstream_offset]


def _end_total(cluster: KafkaCluster, topic: str, partitions: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": unique("ends")})
    try:
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions))
    finally:
        consumer.close()


def test_remote_names_follow_the_identity_policy_and_a_custom_separator(
    kafka: KafkaCluster, target_kafka: KafkaCluster, worker_factory: WorkerFactory
) -> None:
    alias = unique("src").replace("-", "")  # the separator below must not occur in the alias
    kept, renamed = unique("kept"), unique("renamed")
    for topic in (kept, renamed):
        create_topic(kafka, topic, 2)
        produce(kafka, topic, [{"partition": i % 2, "key": b"k", "value": str(i).encode()} for i in range(40)])
    worker = worker_factory(**{"bootstrap.servers": target_kafka.bootstrap_servers})
    identity = {
        **mirror_config(kafka, target_kafka, alias, topics=kept),
        "connector.class": SOURCE,
        "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
    }
    separator = {
        **mirror_config(kafka, target_kafka, alias, topics=renamed),
        "connector.class": SOURCE,
        # Not "_": Kafka refuses names that differ from existing ones only by '.' vs '_'.
        "replication.policy.separator": "-",
    }
    for name, config in (("identity", identity), ("separator", separator)):
        response = httpx.post(f"{worker.url}/connectors", json={"name": name, "config": config}, timeout=60)
        assert response.status_code == 201, response.text

    assert read_partitions(target_kafka, kept, 40) == read_partitions(kafka, kept, 40)
    assert read_partitions(target_kafka, f"{alias}-{renamed}", 40) == read_partitions(kafka, renamed, 40)
    # Internal topics take the separator too: the offset syncs of the second flow.
    syncs = [
        formats.decode_offset_sync(m.key(), m.value())
        for m in read_topic(kafka.bootstrap_servers, "mm2-offset-syncs-dst-internal", 1)
    ]
    assert {s.topic for s in syncs} >= {renamed}
