"""A worker killed with SIGKILL in the middle of replication loses nothing once it is started again.

The worker runs as its own process (`sparklink worker worker.properties`), as in production, so the
kill takes its Spark JVM down with it mid-batch. After the restart the task resumes from the last
offsets it stored: everything produced reaches the target (some records twice: at least once),
and every offset sync still names the downstream offset of its upstream record.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import httpx

from sparklink.connectors.mirror import formats
from sparklink.platform import ports, process
from sparklink.platform.kafka import KafkaCluster
from tests.helpers import read_topic, task_states, topic_size, unique, wait_for
from tests.it.mirror_fixtures import create_topic, mirror_config, produce, read_partitions

TOTAL = 3000


def start_worker(properties: Path, log: Path, port: int) -> int:
    cmd = [sys.executable, "-m", "sparklink.cli.main", "worker", str(properties)]
    env = {**os.environ, "SPARKLINK_DRIVER_MEMORY": "512m"}
    pid = process.spawn(cmd, log, env=env)
    try:
        wait_for(
            lambda: ports.port_open(port) and httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).is_success,
            120,
            "the worker to be healthy",
        )
    except AssertionError:
        process.kill(pid)
        raise AssertionError(f"worker did not start; log:\n{process.tail(log)}") from None
    return pid


def leaders(cluster: KafkaCluster, topic: str) -> bool:
    from confluent_kafka.admin import AdminClient

    meta = AdminClient({"bootstrap.servers": cluster.bootstrap_servers}).list_topics(topic, timeout=10).topics[topic]
    return meta.error is None and all(p.leader >= 0 for p in meta.partitions.values())


def stored(url: str) -> dict[int, int]:
    entries = httpx.get(f"{url}/connectors/ms/offsets", timeout=30).json()["offsets"]
    return {e["partition"]["partition"]: e["offset"]["offset"] for e in entries}


def test_worker_killed_mid_replication_loses_nothing(
    kafka: KafkaCluster, target_kafka: KafkaCluster, tmp_path: Path
) -> None:
    alias, topic, group = unique("src"), unique("stream"), unique("killed")
    remote = f"{alias}.{topic}"
    create_topic(kafka, topic, 3)
    port = ports.free_port()
    properties = tmp_path / "worker.properties"
    properties.write_text(
        "\n".join(
            f"{k}={v}"
            for k, v in {
                "bootstrap.servers": target_kafka.bootstrap_servers,
                "group.id": group,
                "config.storage.topic": f"{group}-configs",
                "offset.storage.topic": f"{group}-offsets",
                "status.storage.topic": f"{group}-status",
                "offset.storage.partitions": "1",
                "status.storage.partitions": "1",
                "rest.port": str(port),
                "task.trigger.interval.ms": "300",
                "spark.master": "local[2]",
                "sparklink.state.dir": str(tmp_path / "state"),
            }.items()
        )
    )
    # Created up front: a worker that creates its internal topics itself can hit the brokers before
    # the new partitions have leaders (storage's KafkaLog reads their watermarks at once).
    for suffix in ("configs", "offsets", "status"):
        create_topic(target_kafka, f"{group}-{suffix}", 1, **{"cleanup.policy": "compact"})
    wait_for(
        lambda: all(leaders(target_kafka, f"{group}-{s}") for s in ("configs", "offsets", "status")), 30, "leaders"
    )
    log = tmp_path / "worker.log"
    url = f"http://127.0.0.1:{port}"
    pid = start_worker(properties, log, port)

    def producer() -> None:
        for start in range(0, TOTAL, 100):  # about 200 records a second, for ~15 s
            produce(kafka, topic, [{"partition": i % 3, "value": str(i).encode()} for i in range(start, start + 100)])
            time.sleep(0.5)

    feeder = threading.Thread(target=producer, daemon=True)
    try:
        config = {
            **mirror_config(kafka, target_kafka, alias, topics=topic, **{"offset.lag.max": "10"}),
            "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
            "tasks.max": "2",
        }
        assert httpx.post(f"{url}/connectors", json={"name": "ms", "config": config}, timeout=60).status_code == 201
        feeder.start()
        # Kill once some batch is committed (so the restart resumes from stored offsets) and more is coming.
        wait_for(lambda: stored(url), 120, "a committed batch")
        process.kill(pid)  # SIGKILL the worker's process group: Python and its Spark JVM
        assert not process.alive(pid)
        at_kill = topic_size(target_kafka.bootstrap_servers, remote)

        pid = start_worker(properties, log, port)
        wait_for(lambda: task_states(url, "ms") == ["RUNNING", "RUNNING"], 120, "tasks RUNNING again")
        feeder.join(60)
        wait_for(lambda: topic_size(target_kafka.bootstrap_servers, remote) >= TOTAL, 180, "every record replicated")
        assert at_kill < TOTAL, "the kill came after replication had finished"
        # The last batch is complete once its offsets are stored (its offset syncs are written next).
        wait_for(lambda: stored(url) == {0: 999, 1: 999, 2: 999}, 120, "the final offsets")
    finally:
        process.stop(pid)

    target = read_partitions(target_kafka, remote, TOTAL)
    source = read_partitions(kafka, topic, TOTAL)
    values = [v for records in target.values() for _k, v, _h, _t in records]
    assert set(values) == {str(i).encode() for i in range(TOTAL)}  # nothing lost (duplicates allowed)
    for p, records in source.items():
        # Per partition the target holds the source in order, with a replayed stretch at most.
        assert [r[1] for r in target[p]][: len(records)] != [] and set(r[1] for r in target[p]) == {
            r[1] for r in records
        }
    syncs = [
        formats.decode_offset_sync(m.key(), m.value())
        for m in read_topic(kafka.bootstrap_servers, "mm2-offset-syncs.dst.internal", 1)
    ]
    mine = [s for s in syncs if s.topic == topic]
    assert mine
    for s in mine:  # before and after the kill, a sync points at the same record downstream
        assert source[s.partition][s.upstream_offset][1] == target[s.partition][s.downstream_offset][1]
