"""MirrorHeartbeatConnector: MM2 heartbeat records on the target, and their replication as `<alias>.heartbeats`."""

from __future__ import annotations

import httpx

from sparklink.connectors.mirror import formats
from sparklink.platform.kafka import KafkaCluster
from tests.conftest import WorkerFactory
from tests.helpers import read_topic, unique, wait_for
from tests.it.mirror_fixtures import mirror_config

MIRROR = "org.apache.kafka.connect.mirror."


def heartbeats(cluster: KafkaCluster, topic: str, source: str, target: str) -> list[tuple[formats.Heartbeat, int]]:
    out = []
    for msg in read_topic(cluster.bootstrap_servers, topic, 1):
        beat = formats.decode_heartbeat(msg.key(), msg.value())
        if (beat.source_cluster_alias, beat.target_cluster_alias) == (source, target):
            out.append((beat, msg.timestamp()[1]))
    return out


def test_heartbeats_flow_and_replicate(
    kafka: KafkaCluster, target_kafka: KafkaCluster, worker_factory: WorkerFactory
) -> None:
    alias, upstream = unique("src"), unique("up")
    worker = worker_factory(**{"bootstrap.servers": target_kafka.bootstrap_servers})
    every_second = {"emit.heartbeats.interval.seconds": "1"}
    connectors = {
        # Heartbeats of the flow alias -> dst, on the target.
        "hb": {
            **mirror_config(kafka, target_kafka, alias, **every_second),
            "connector.class": MIRROR + "MirrorHeartbeatConnector",
        },
        # Heartbeats written into the source cluster (as a flow up -> alias would) ...
        "hb-up": {
            **mirror_config(target_kafka, kafka, upstream, **every_second),
            "target.cluster.alias": alias,
            "connector.class": MIRROR + "MirrorHeartbeatConnector",
        },
        # ... replicated by a source connector whose topic filter matches nothing else.
        "ms": {
            **mirror_config(
                kafka,
                target_kafka,
                alias,
                topics="no-such-topic",
                **{"refresh.topics.interval.seconds": "2", "heartbeats.replication.enabled": "true"},
            ),
            "connector.class": MIRROR + "MirrorSourceConnector",
        },
    }
    for name, config in connectors.items():
        response = httpx.post(f"{worker.url}/connectors", json={"name": name, "config": config}, timeout=60)
        assert response.status_code == 201, response.text

    beats = wait_for(
        lambda: len(b := heartbeats(target_kafka, "heartbeats", alias, "dst")) >= 3 and b, 90, "3 heartbeats"
    )
    stamps = [beat.timestamp for beat, _ in beats]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert all(record_ts == beat.timestamp for beat, record_ts in beats)  # the record carries the beat's time

    replicated = wait_for(
        lambda: heartbeats(target_kafka, f"{alias}.heartbeats", upstream, alias), 90, f"{alias}.heartbeats records"
    )
    assert all(record_ts == beat.timestamp for beat, record_ts in replicated)
    offsets = httpx.get(f"{worker.url}/connectors/hb/offsets", timeout=30).json()["offsets"]
    assert offsets == [
        {"partition": {"sourceClusterAlias": alias, "targetClusterAlias": "dst"}, "offset": {"offset": 0}}
    ]
