"""`sparklink mirror-maker mm2.properties`: Apache MirrorMaker 2's dedicated mode file, run as a process."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import httpx

from sparklink.connectors.mirror import formats
from sparklink.platform import process
from sparklink.platform.kafka import KafkaCluster
from tests.helpers import read_topic, unique, wait_for
from tests.it.mirror_fixtures import create_topic, produce, read_partitions


def beats(cluster: KafkaCluster, source: str, target: str) -> int:
    records = read_topic(cluster.bootstrap_servers, "heartbeats", 1)
    keys = [formats.decode_heartbeat(m.key(), m.value()) for m in records]
    return sum(1 for b in keys if (b.source_cluster_alias, b.target_cluster_alias) == (source, target))


def test_mirror_maker_runs_the_flows_of_an_mm2_properties_file(
    kafka: KafkaCluster, target_kafka: KafkaCluster, tmp_path: Path
) -> None:
    a, b = unique("pri").replace("-", ""), unique("bak").replace("-", "")
    topic = unique("dedicated")
    create_topic(kafka, topic, 2)
    produce(kafka, topic, [{"partition": i % 2, "key": f"k{i}".encode(), "value": str(i).encode()} for i in range(100)])
    # The workers' internal topics, made up front (see test_mirror_kill: KafkaLog and fresh topics).
    for cluster, source in ((target_kafka, a), (kafka, b)):
        for kind in ("configs", "offsets", "status"):
            create_topic(cluster, f"mm2-{kind}.{source}.internal", 1, **{"cleanup.policy": "compact"})
    properties = tmp_path / "mm2.properties"
    properties.write_text(
        f"""# Apache MirrorMaker 2 format
clusters = {a}, {b}
{a}.bootstrap.servers = {kafka.bootstrap_servers}
{b}.bootstrap.servers = {target_kafka.bootstrap_servers}
{a}->{b}.enabled = true
{a}->{b}.topics = {topic}
replication.factor = 1
offset-syncs.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
offset.storage.replication.factor = 1
config.storage.replication.factor = 1
status.storage.replication.factor = 1
offset.storage.partitions = 1
status.storage.partitions = 1
sync.topic.acls.enabled = false
emit.heartbeats.interval.seconds = 1
task.trigger.interval.ms = 300
sparklink.warm.up.enable = false
spark.master = local[2]
sparklink.state.dir = {tmp_path / "state"}
"""
    )
    log = tmp_path / "mirror-maker.log"
    cmd = [sys.executable, "-m", "sparklink.cli.main", "mirror-maker", str(properties)]
    pid = process.spawn(cmd, log, env={**os.environ, "SPARKLINK_DRIVER_MEMORY": "512m"})
    try:
        flows = wait_for(
            lambda: (
                dict(re.findall(r"mirror-maker: (\S+) on \S+, REST (\S+)", log.read_text())) or None
                if len(re.findall(r"mirror-maker: ", log.read_text())) == 2
                else None
            ),
            180,
            "both flows to start",
        )
        assert set(flows) == {f"{a}->{b}", f"{b}->{a}"}  # B->A only emits heartbeats, as in MirrorMaker
        url = flows[f"{a}->{b}"]
        assert sorted(httpx.get(f"{url}/connectors", timeout=30).json()) == [
            "MirrorCheckpointConnector",
            "MirrorHeartbeatConnector",
            "MirrorSourceConnector",
        ]
        config = httpx.get(f"{url}/connectors/MirrorSourceConnector/config", timeout=30).json()
        assert (config["source.cluster.alias"], config["target.cluster.alias"], config["topics"]) == (a, b, topic)
        assert config["target.cluster.bootstrap.servers"] == target_kafka.bootstrap_servers

        assert read_partitions(target_kafka, f"{a}.{topic}", 100) == read_partitions(kafka, topic, 100)
        wait_for(lambda: beats(target_kafka, a, b) >= 2, 90, f"heartbeats {a}->{b} on the target")
        wait_for(lambda: beats(kafka, b, a) >= 2, 90, f"heartbeats {b}->{a} on the source")
    finally:
        process.stop(pid, timeout=60)
    assert not process.alive(pid)
