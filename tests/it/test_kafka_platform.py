"""Local KRaft clusters from the Maven jars: start, produce/consume, kill -9 a broker and see it rejoin."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from sparklink.clients.settings import client_config
from sparklink.platform import process
from sparklink.platform.kafka import KafkaCluster, KafkaStartError
from tests.helpers import read_topic, unique, wait_for


def produce(bootstrap: str, topic: str, n: int) -> None:
    producer = Producer(client_config(bootstrap, **{"acks": "all"}))
    for i in range(n):
        producer.produce(topic, key=str(i).encode(), value=f"value-{i}".encode())
    assert producer.flush(30) == 0


def test_single_broker_cluster_produces_and_consumes(kafka: KafkaCluster) -> None:
    topic = unique("platform")
    produce(kafka.bootstrap_servers, topic, 50)
    records = read_topic(kafka.bootstrap_servers, topic, 50)
    assert sorted(int(r.key()) for r in records) == list(range(50))
    assert {n.roles for n in kafka.nodes} == {"broker,controller"}


def test_three_broker_cluster_survives_kill_and_rejoin(tmp_path: Path) -> None:
    cluster = KafkaCluster.create(tmp_path / "c3", brokers=3, heap="384m")
    try:
        cluster.start()
        assert [n.roles for n in cluster.nodes].count("broker") == 3
        assert any(n.roles == "controller" for n in cluster.nodes)
        topic = unique("replicated")
        admin = AdminClient(client_config(cluster.bootstrap_servers))
        admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3)])[topic].result(30)
        produce(cluster.bootstrap_servers, topic, 30)

        victim = cluster.brokers[1]
        old_pid = victim.pid
        cluster.kill_node(victim.node_id)
        assert not process.alive(old_pid)
        # The other two brokers keep serving the fully replicated topic.
        survivors = ",".join(f"127.0.0.1:{b.broker_port}" for b in cluster.brokers if b is not victim)
        wait_for(
            lambda: victim.node_id not in AdminClient(client_config(survivors)).list_topics(timeout=5).brokers,
            60,
            "the controller to fence the killed broker",
        )
        produce(survivors, topic, 30)

        cluster.restart_node(victim.node_id)
        assert process.alive(cluster.node(victim.node_id).pid)
        wait_for(
            lambda: (
                victim.node_id in AdminClient(client_config(cluster.bootstrap_servers)).list_topics(timeout=5).brokers
            ),
            60,
            "the restarted broker to rejoin",
        )
        records = read_topic(cluster.bootstrap_servers, topic, 60)
        assert len({int(r.key()) for r in records}) == 30 and len(records) == 60
    finally:
        cluster.destroy()
    assert all(not process.alive(n.pid) for n in cluster.nodes if n.pid)


def test_two_clusters_run_side_by_side(kafka: KafkaCluster, tmp_path: Path) -> None:
    other = KafkaCluster.create(tmp_path / "other", brokers=1, heap="256m")
    try:
        other.start()
        assert other.bootstrap_servers != kafka.bootstrap_servers
        topic = unique("side")
        produce(other.bootstrap_servers, topic, 5)
        assert len(read_topic(other.bootstrap_servers, topic, 5)) == 5
        assert topic not in AdminClient(client_config(kafka.bootstrap_servers)).list_topics(timeout=10).topics
    finally:
        other.destroy()


def test_start_failure_reports_the_broker_log(tmp_path: Path) -> None:
    cluster = KafkaCluster.create(tmp_path / "bad", brokers=1, extra_config={"num.network.threads": "not-a-number"})
    started = time.monotonic()
    with pytest.raises(KafkaStartError) as failure:
        cluster.start(timeout=60)
    cluster.destroy()
    assert "num.network.threads" in str(failure.value)
    assert time.monotonic() - started < 60
