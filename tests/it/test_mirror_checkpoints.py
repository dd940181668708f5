"""MirrorCheckpointConnector on two real clusters: translation, checkpoints, group sync and fail-over."""

from __future__ import annotations

import httpx
from confluent_kafka import Consumer

from sparklink.platform.kafka import KafkaCluster
from tests.conftest import WorkerFactory
from tests.helpers import unique, wait_for
from tests.it.mirror_fixtures import checkpoints, commit, committed, create_topic, mirror_config, produce

SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
CHECKPOINT = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
LAG = 10


def test_consumer_group_fails_over_to_the_target_within_offset_lag_max(
    kafka: KafkaCluster, target_kafka: KafkaCluster, worker_factory: WorkerFactory
) -> None:
    alias, topic, group = unique("src"), unique("events"), unique("app")
    create_topic(kafka, topic, 2)
    produce(kafka, topic, [{"partition": p, "value": f"{p}:{i}".encode()} for p in (0, 1) for i in range(100)])
    # The application consumed 95 records of each partition on the source, then stopped.
    commit(kafka, group, {(topic, 0): 95, (topic, 1): 95})

    worker = worker_factory(**{"bootstrap.servers": target_kafka.bootstrap_servers})
    base = mirror_config(kafka, target_kafka, alias, topics=f"{topic}.*", **{"offset.lag.max": str(LAG)})
    checkpoint = {
        **base,
        "connector.class": CHECKPOINT,
        "groups": f"{group}.*",
        "emit.checkpoints.interval.seconds": "1",
        "refresh.groups.interval.seconds": "2",
        "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": "1",
    }
    for name, config in (("mm-source", {**base, "connector.class": SOURCE}), ("mm-checkpoint", checkpoint)):
        response = httpx.post(f"{worker.url}/connectors", json={"name": name, "config": config}, timeout=60)
        assert response.status_code == 201, response.text

    remote = f"{alias}.{topic}"
    cps = wait_for(
        lambda: (c := checkpoints(target_kafka, f"{alias}.checkpoints.internal", group)) and len(c) == 2 and c,
        120,
        "checkpoints for both partitions",
    )
    for partition, cp in cps.items():
        assert (cp.topic, cp.upstream_offset, cp.metadata) == (remote, 95, "")
        # The target holds record i of each partition at offset i (it started empty), so a group moved
        # to `downstream` re-reads 95 - downstream records: never negative, at most offset.lag.max.
        assert 95 - LAG <= cp.downstream_offset <= 95, (partition, cp)

    # sync.group.offsets: the (absent, hence idle) group on the target gets the translated offsets.
    want = {(remote, p): cp.downstream_offset for p, cp in cps.items()}
    wait_for(lambda: committed(target_kafka, group, list(want)) == want, 60, "the target group's offsets")

    # Fail-over: the application's group resumes on the target where the checkpoint says.
    consumer = Consumer({"bootstrap.servers": target_kafka.bootstrap_servers, "group.id": group})
    consumer.subscribe([remote])
    seen: dict[int, list[int]] = {0: [], 1: []}
    try:
        wait_for(
            lambda: _consume(consumer, seen) and all(len(v) >= 100 - want[(remote, p)] for p, v in seen.items()),
            60,
            "the rest of both partitions",
        )
    finally:
        consumer.close()
    for p, indexes in seen.items():
        assert indexes == list(range(want[(remote, p)], 100))  # from the checkpoint, in order, no gap
        assert 95 - LAG <= indexes[0] <= 95

    # Recorded once Spark has written the checkpoint batch (the group sync above runs before that).
    offsets = wait_for(
        lambda: httpx.get(f"{worker.url}/connectors/mm-checkpoint/offsets", timeout=30).json()["offsets"],
        60,
        "the checkpoint connector's offsets",
    )
    assert sorted(offsets, key=lambda o: o["partition"]["partition"]) == [
        {"partition": {"partition": p, "topic": remote, "group": group}, "offset": {"offset": 0}} for p in (0, 1)
    ]


def _consume(consumer: Consumer, seen: dict[int, list[int]]) -> bool:
    for msg in consumer.consume(100, timeout=0.5):
        if msg.error() is None:
            partition, index = msg.value().decode().split(":")
            seen[int(partition)].append(int(index))
    return True
