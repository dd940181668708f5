"""Interop with Apache MirrorMaker 2 (4.3.1 jars): each side reads what the other writes.

1. Apache's connect-mirror-client (`RemoteClusterUtils.translateOffsets`, compiled here with javac)
   reads the checkpoints sparklink's MirrorCheckpointConnector wrote, and agrees with them.
2. sparklink's MirrorCheckpointConnector translates with the offset syncs Apache's
   MirrorSourceConnector wrote (Apache MirrorMaker in dedicated mode) and emits the checkpoint
   Apache's own MirrorCheckpointConnector emits for a group at the same offsets, from the same syncs.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from sparklink.connectors.mirror import formats
from sparklink.platform import artifacts
from sparklink.platform.kafka import KafkaCluster
from tests.conftest import WorkerFactory
from tests.helpers import read_topic, status, topic_size, unique, wait_for
from tests.it.mirror_fixtures import checkpoints, commit, create_topic, mirror_config, produce
from tests.support.connect_peer import PEERS
from tests.support.mirror_maker_peer import SINGLE_BROKER_TOPICS, MirrorMakerPeer

MIRROR = "org.apache.kafka.connect.mirror."
JAVA_SOURCE = Path(__file__).parents[1] / "interop" / "TranslateOffsets.java"
pytestmark = pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK (javac)")


def translate_with_apache(target: KafkaCluster, alias: str, group: str, workdir: Path) -> dict[tuple[str, int], int]:
    classes = workdir / "classes"
    classpath = artifacts.classpath(PEERS)
    subprocess.run(["javac", "-cp", classpath, "-d", str(classes), str(JAVA_SOURCE)], check=True, capture_output=True)
    result = subprocess.run(
        [
            "java",
            "-Xmx128m",
            "-cp",
            f"{classes}:{classpath}",
            "TranslateOffsets",
            target.bootstrap_servers,
            alias,
            group,
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = {}
    for line in result.stdout.splitlines():
        topic, partition, offset = line.split()
        out[(topic, int(partition))] = int(offset)
    return out


def test_apache_remote_cluster_utils_reads_our_checkpoints(
    kafka: KafkaCluster, target_kafka: KafkaCluster, worker_factory: WorkerFactory, tmp_path: Path
) -> None:
    alias, topic, group = unique("src"), unique("interop"), unique("app")
    create_topic(kafka, topic, 2)
    produce(kafka, topic, [{"partition": p, "value": f"{p}:{i}".encode()} for p in (0, 1) for i in range(100)])
    commit(kafka, group, {(topic, 0): 95, (topic, 1): 40})
    worker = worker_factory(**{"bootstrap.servers": target_kafka.bootstrap_servers})
    base = mirror_config(kafka, target_kafka, alias, topics=topic, **{"offset.lag.max": "10"})
    connectors = {
        "ms": {**base, "connector.class": MIRROR + "MirrorSourceConnector"},
        "mc": {
            **base,
            "connector.class": MIRROR + "MirrorCheckpointConnector",
            "groups": group,
            "emit.checkpoints.interval.seconds": "1",
        },
    }
    for name, config in connectors.items():
        assert (
            httpx.post(f"{worker.url}/connectors", json={"name": name, "config": config}, timeout=60).status_code == 201
        )
    ours = wait_for(
        lambda: (c := checkpoints(target_kafka, f"{alias}.checkpoints.internal", group)) and len(c) == 2 and c,
        120,
        "our checkpoints",
    )
    apache = translate_with_apache(target_kafka, alias, group, tmp_path)
    assert apache == {(cp.topic, p): cp.downstream_offset for p, cp in ours.items()}
    assert set(apache) == {(f"{alias}.{topic}", 0), (f"{alias}.{topic}", 1)}


def test_our_checkpoints_translate_apache_offset_syncs_like_apache(
    kafka: KafkaCluster, target_kafka: KafkaCluster, worker_factory: WorkerFactory, tmp_path: Path
) -> None:
    a, b = unique("pri").replace("-", ""), unique("bak").replace("-", "")
    topic, ours_group, apache_group = unique("apache"), unique("ours"), unique("theirs")
    create_topic(kafka, topic, 2)

    def produce_records(offsets: range) -> None:
        produce(kafka, topic, [{"partition": p, "value": f"{p}:{i}".encode()} for p in (0, 1) for i in offsets])

    produce_records(range(50))
    flow = f"{a}->{b}"
    peer = MirrorMakerPeer(
        tmp_path / "apache-mm2",
        {
            "clusters": f"{a}, {b}",
            f"{a}.bootstrap.servers": kafka.bootstrap_servers,
            f"{b}.bootstrap.servers": target_kafka.bootstrap_servers,
            f"{b}.offset.flush.interval.ms": "1000",  # MM2 sends its delayed offset syncs at each commit
            f"{flow}.enabled": "true",
            f"{flow}.topics": topic,
            f"{flow}.offset.lag.max": "10",
            # Apache checkpoints only its own group, which exists once replication is over, so both sides
            # translate the same, complete syncs (MM2 re-emits a checkpoint only when it moves forward).
            f"{flow}.groups": apache_group,
            f"{flow}.refresh.groups.interval.seconds": "1",
            f"{flow}.emit.checkpoints.interval.seconds": "1",
            "emit.heartbeats.enabled": "false",
            "sync.topic.acls.enabled": "false",
            **SINGLE_BROKER_TOPICS,
        },
        heap="384m",
    ).start()
    syncs_topic = f"mm2-offset-syncs.{b}.internal"
    try:
        # MM2 drops a partition's queued syncs but the latest while its sync producer is busy, so on a slow
        # machine one sync (99) may be all a partition gets, and neither side can translate 60 or 95. A sync
        # at 49, sent before the next records exist, makes both positions translatable whatever the timing.
        wait_for(lambda: topic_size(target_kafka.bootstrap_servers, f"{a}.{topic}") == 100, 120, "Apache's replication")
        wait_for(lambda: last_syncs(kafka, syncs_topic, topic) == {0: 49, 1: 49}, 60, "Apache's offset syncs at 49")
        produce_records(range(50, 100))
        wait_for(lambda: topic_size(target_kafka.bootstrap_servers, f"{a}.{topic}") == 200, 120, "Apache's replication")
        wait_for(lambda: last_syncs(kafka, syncs_topic, topic) == {0: 99, 1: 99}, 60, "Apache's last offset syncs")
        for group in (ours_group, apache_group):  # two groups, same position: 95 and 60
            commit(kafka, group, {(topic, 0): 95, (topic, 1): 60})

        worker = worker_factory(**{"bootstrap.servers": target_kafka.bootstrap_servers})
        config = {
            **mirror_config(kafka, target_kafka, a, topics=topic),
            "target.cluster.alias": b,  # so we read Apache's `mm2-offset-syncs.<b>.internal`
            "connector.class": MIRROR + "MirrorCheckpointConnector",
            "groups": ours_group,
            "emit.checkpoints.interval.seconds": "1",
        }
        response = httpx.post(f"{worker.url}/connectors", json={"name": "mc", "config": config}, timeout=60)
        assert response.status_code == 201, response.text

        def latest(group: str) -> dict[int, int] | None:
            found = checkpoints(target_kafka, f"{a}.checkpoints.internal", group)
            return {p: cp.downstream_offset for p, cp in found.items()} if len(found) == 2 else None

        ours = wait_for(
            lambda: latest(ours_group),
            240,
            "our checkpoints",
            explain=lambda: (
                status(worker.url, "mc"),
                checkpoints(target_kafka, f"{a}.checkpoints.internal", ours_group),
                all_syncs(kafka, syncs_topic, topic),
            ),
        )
        theirs = wait_for(lambda: latest(apache_group), 120, "Apache's checkpoints")
        assert ours == theirs, all_syncs(kafka, syncs_topic, topic)
        # Never past the group's position (the target started empty: record i sits at offset i).
        assert 0 <= ours[0] <= 95 and 0 <= ours[1] <= 60
    finally:
        peer.stop()


def last_syncs(cluster: KafkaCluster, syncs_topic: str, topic: str) -> dict[int, int]:
    return {partition: max(offsets) for partition, offsets in all_syncs(cluster, syncs_topic, topic).items()}


def all_syncs(cluster: KafkaCluster, syncs_topic: str, topic: str) -> dict[int, list[int]]:
    """The upstream offset of every sync of each partition of `topic`, in the order MM2 wrote them."""
    out: dict[int, list[int]] = {}
    for msg in read_topic(cluster.bootstrap_servers, syncs_topic, 1):
        sync = formats.decode_offset_sync(msg.key(), msg.value())
        if sync.topic == topic:
            out.setdefault(sync.partition, []).append(sync.upstream_offset)
    return out
