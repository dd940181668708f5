"""Interop with Apache MirrorMaker 2 (4.3.1 jars): each side reads what the other writes, over secured
listeners (the source cluster's SASL_SSL listener with SCRAM-SHA-512, the target's mutual-TLS one), so the
interop also shows both sides take the same client security settings.

1. Apache's connect-mirror-client (`RemoteClusterUtils.translateOffsets`, compiled here with javac)
   reads the checkpoints sparklink's MirrorCheckpointConnector wrote, and agrees with them.
2. sparklink's MirrorCheckpointConnector translates with the offset syncs Apache's
   MirrorSourceConnector wrote (Apache MirrorMaker in dedicated mode) and emits the checkpoint
   Apache's own MirrorCheckpointConnector emits for a group at the same offsets, from the same syncs.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from sparklink.clients.settings import KafkaClientSettings, properties_text
from sparklink.connectors.mirror import formats
from sparklink.platform import artifacts, ca
from tests.conftest import WorkerFactory
from tests.helpers import read_topic, status, topic_size, unique, wait_for
from tests.it.mirror_fixtures import checkpoints, commit, create_topic, produce
from tests.support.connect_peer import PEERS
from tests.support.mirror_maker_peer import SINGLE_BROKER_TOPICS, MirrorMakerPeer
from tests.support.secured_kafka import SecuredKafka, connect_props, prefixed

MIRROR = "org.apache.kafka.connect.mirror."
JAVA_SOURCE = Path(__file__).parents[1] / "interop" / "TranslateOffsets.java"
pytestmark = pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK (javac)")
SOURCE_LISTENER = ("saslssl", "SCRAM-SHA-512")
TARGET_LISTENER = "mtls"


@dataclass
class Flow:
    """The secured source and target clusters, and each one's client properties (Connect's names)."""

    source_props: dict[str, str]
    target_props: dict[str, str]

    @property
    def source(self) -> KafkaClientSettings:
        return KafkaClientSettings.from_properties(self.source_props)

    @property
    def target(self) -> KafkaClientSettings:
        return KafkaClientSettings.from_properties(self.target_props)

    def connector_config(self, source_alias: str, target_alias: str, **extra: str) -> dict[str, str]:
        """A mirror connector's config for this flow (single brokers: replication 1)."""
        return {
            "source.cluster.alias": source_alias,
            "target.cluster.alias": target_alias,
            **prefixed("source.cluster.", self.source_props),
            **prefixed("target.cluster.", self.target_props),
            "replication.factor": "1",
            "offset-syncs.topic.replication.factor": "1",
            "checkpoints.topic.replication.factor": "1",
            "heartbeats.topic.replication.factor": "1",
            "sync.topic.acls.enabled": "false",
            "heartbeats.replication.enabled": "false",
            **extra,
        }


@pytest.fixture
def flow(secured_kafka: SecuredKafka, secured_kafka_target: SecuredKafka) -> Flow:
    return Flow(secured_kafka.properties(*SOURCE_LISTENER), secured_kafka_target.properties(TARGET_LISTENER))


def translate_with_apache(
    target_props: dict[str, str], alias: str, group: str, workdir: Path
) -> dict[tuple[str, int], int]:
    client_file = workdir / "target-client.properties"
    ca.write_private(client_file, properties_text(target_props).encode())  # 0600: it may hold a password
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
            str(client_file),
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
    flow: Flow, worker_factory: WorkerFactory, tmp_path: Path
) -> None:
    alias, topic, group = unique("src"), unique("interop"), unique("app")
    create_topic(flow.source, topic, 2)
    produce(flow.source, topic, [{"partition": p, "value": f"{p}:{i}".encode()} for p in (0, 1) for i in range(100)])
    commit(flow.source, group, {(topic, 0): 95, (topic, 1): 40})
    worker = worker_factory(**connect_props(flow.target_props))
    base = flow.connector_config(alias, "dst", topics=topic, **{"offset.lag.max": "10"})
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
        lambda: (c := checkpoints(flow.target, f"{alias}.checkpoints.internal", group)) and len(c) == 2 and c,
        120,
        "our checkpoints",
    )
    apache = translate_with_apache(flow.target_props, alias, group, tmp_path)
    assert apache == {(cp.topic, p): cp.downstream_offset for p, cp in ours.items()}
    assert set(apache) == {(f"{alias}.{topic}", 0), (f"{alias}.{topic}", 1)}


def test_our_checkpoints_translate_apache_offset_syncs_like_apache(
    flow: Flow, worker_factory: WorkerFactory, tmp_path: Path
) -> None:
    a, b = unique("pri").replace("-", ""), unique("bak").replace("-", "")
    topic, ours_group, apache_group = unique("apache"), unique("ours"), unique("theirs")
    source, target = flow.source, flow.target
    create_topic(source, topic, 2)

    def produce_records(offsets: range) -> None:
        produce(source, topic, [{"partition": p, "value": f"{p}:{i}".encode()} for p in (0, 1) for i in offsets])

    produce_records(range(50))
    route = f"{a}->{b}"
    peer = MirrorMakerPeer(
        tmp_path / "apache-mm2",
        {
            "clusters": f"{a}, {b}",
            **prefixed(f"{a}.", flow.source_props),  # MM2 gives each cluster's clients its `<alias>.` settings
            **prefixed(f"{b}.", flow.target_props),
            f"{b}.offset.flush.interval.ms": "1000",  # MM2 sends its delayed offset syncs at each commit
            f"{route}.enabled": "true",
            f"{route}.topics": topic,
            f"{route}.offset.lag.max": "10",
            # Apache checkpoints only its own group, which exists once replication is over, so both sides
            # translate the same, complete syncs (MM2 re-emits a checkpoint only when it moves forward).
            f"{route}.groups": apache_group,
            f"{route}.refresh.groups.interval.seconds": "1",
            f"{route}.emit.checkpoints.interval.seconds": "1",
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
        wait_for(lambda: topic_size(target, f"{a}.{topic}") == 100, 120, "Apache's replication")
        wait_for(lambda: last_syncs(source, syncs_topic, topic) == {0: 49, 1: 49}, 60, "Apache's offset syncs at 49")
        produce_records(range(50, 100))
        wait_for(lambda: topic_size(target, f"{a}.{topic}") == 200, 120, "Apache's replication")
        wait_for(lambda: last_syncs(source, syncs_topic, topic) == {0: 99, 1: 99}, 60, "Apache's last offset syncs")
        for group in (ours_group, apache_group):  # two groups, same position: 95 and 60
            commit(source, group, {(topic, 0): 95, (topic, 1): 60})

        worker = worker_factory(**connect_props(flow.target_props))
        config = {
            **flow.connector_config(
                a, b, topics=topic
            ),  # target alias b: we read Apache's `mm2-offset-syncs.<b>.internal`
            "connector.class": MIRROR + "MirrorCheckpointConnector",
            "groups": ours_group,
            "emit.checkpoints.interval.seconds": "1",
        }
        response = httpx.post(f"{worker.url}/connectors", json={"name": "mc", "config": config}, timeout=60)
        assert response.status_code == 201, response.text

        def latest(group: str) -> dict[int, int] | None:
            found = checkpoints(target, f"{a}.checkpoints.internal", group)
            return {p: cp.downstream_offset for p, cp in found.items()} if len(found) == 2 else None

        ours = wait_for(
            lambda: latest(ours_group),
            240,
            "our checkpoints",
            explain=lambda: (
                status(worker.url, "mc"),
                checkpoints(target, f"{a}.checkpoints.internal", ours_group),
                all_syncs(source, syncs_topic, topic),
            ),
        )
        theirs = wait_for(lambda: latest(apache_group), 120, "Apache's checkpoints")
        assert ours == theirs, all_syncs(source, syncs_topic, topic)
        # Never past the group's position (the target started empty: record i sits at offset i).
        assert 0 <= ours[0] <= 95 and 0 <= ours[1] <= 60
    finally:
        peer.stop()


def last_syncs(cluster: KafkaClientSettings, syncs_topic: str, topic: str) -> dict[int, int]:
    return {partition: max(offsets) for partition, offsets in all_syncs(cluster, syncs_topic, topic).items()}


def all_syncs(cluster: KafkaClientSettings, syncs_topic: str, topic: str) -> dict[int, list[int]]:
    """The upstream offset of every sync of each partition of `topic`, in the order MM2 wrote them."""
    out: dict[int, list[int]] = {}
    for msg in read_topic(cluster, syncs_topic, 1):
        sync = formats.decode_offset_sync(msg.key(), msg.value())
        if sync.topic == topic:
            out.setdefault(sync.partition, []).append(sync.upstream_offset)
    return out
