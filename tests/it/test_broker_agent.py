"""The broker-state agent against a real KRaft broker (Jolokia in its JVM) over real mutual TLS: who may ask,
and what it reports while the broker really recovers its logs after kill -9 - and what a roll does then."""

from __future__ import annotations

import datetime as dt
import shutil
import ssl
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from sparklink.clients.settings import client_config
from sparklink.platform import ca
from sparklink.platform.kafka import KafkaCluster
from sparklink.roller.agent_client import MtlsAgentClient, client_tls_context
from sparklink.roller.local import local_roller
from sparklink.roller.model import RestartReason, RollerSettings, RollFailedError
from tests.helpers import wait_for
from tests.support.throttle import throttled

pytestmark = pytest.mark.roller

# Enough segments past the recovery checkpoint that loading them, with the broker throttled to RECOVERY_SHARE of
# the time, takes longer than a failing roll (~20 s). Half the segments at half the share recover as long while
# throttled, and take half the time to write, to finish recovering and to load again at the later roll.
RECOVERY_PARTITIONS = 600
RECOVERY_ROUNDS = 4
RECOVERY_SHARE = 0.1


@pytest.fixture(scope="module")
def cluster() -> Iterator[KafkaCluster]:
    state = Path(tempfile.mkdtemp(prefix="sparklink-test-agent-"))
    cluster = KafkaCluster.create(
        state / "cluster",
        brokers=1,
        heap="384m",
        agents=True,
        extra_config={
            # One thread loads every log, and the recovery checkpoint is never rewritten after start-up, so
            # after kill -9 every segment written since then must be recovered.
            "num.recovery.threads.per.data.dir": "1",
            "log.flush.offset.checkpoint.interval.ms": "3600000",
        },
    )
    try:
        cluster.start(timeout=180)
        yield cluster
    finally:
        cluster.destroy()
        shutil.rmtree(state, ignore_errors=True)  # destroy() removes the cluster's directory, not its parent


def external(cluster: KafkaCluster) -> str:
    return f"https://127.0.0.1:{cluster.brokers[0].agent_port}/v1/broker-state/"


def tls_client(
    ca_cert: Path, cert: ca.Issued | None, tmp: Path, *, max_tls: ssl.TLSVersion | None = None
) -> httpx.Client:
    context = ssl.create_default_context(cafile=str(ca_cert))
    if max_tls:
        context.maximum_version = max_tls
    if cert:
        cert.write(tmp / "client.crt", tmp / "client.key")
        context.load_cert_chain(tmp / "client.crt", tmp / "client.key")
    return httpx.Client(verify=context, timeout=10)


def test_only_clients_with_a_valid_certificate_from_the_cluster_ca_are_answered(
    cluster: KafkaCluster, tmp_path: Path
) -> None:
    paths = cluster.tls.ensure_roller()
    url = external(cluster)
    with httpx.Client(verify=client_tls_context(paths.cert, paths.key, paths.ca_cert), timeout=10) as roller:
        response = roller.get(url)
    assert (response.status_code, response.json()) == (200, {"brokerState": 3})

    authority = ca.Issued.read(cluster.tls.ca_cert, cluster.tls.ca_key)
    other_ca = ca.issue(ca.new_ca("some other CA", key_type=ca.KeyType.EC), "intruder", client=True)
    expired = ca.issue(authority, "old-roller", client=True, now=dt.datetime.now(dt.UTC) - dt.timedelta(days=400))
    refused = {
        "no client certificate": tls_client(cluster.tls.ca_cert, None, tmp_path),
        "a certificate from another CA": tls_client(cluster.tls.ca_cert, other_ca, tmp_path),
        "an expired certificate": tls_client(cluster.tls.ca_cert, expired, tmp_path),
    }
    for what, client in refused.items():
        with client, pytest.raises(httpx.TransportError):
            client.get(url)
            pytest.fail(f"the agent answered a client with {what}")
    # TLS 1.2 is refused even with the roller's own certificate, and so is plain HTTP on the TLS port.
    current = ca.Issued.read(paths.cert, paths.key)
    old_tls = tls_client(cluster.tls.ca_cert, current, tmp_path, max_tls=ssl.TLSVersion.TLSv1_2)
    with old_tls, pytest.raises(httpx.TransportError):
        old_tls.get(url)
    with pytest.raises(httpx.TransportError):
        httpx.get(url.replace("https://", "http://"), timeout=10)


def test_the_loopback_probe_port_answers_without_tls(cluster: KafkaCluster) -> None:
    port = cluster.brokers[0].probe_port
    assert httpx.get(f"http://127.0.0.1:{port}/v1/ready", timeout=10).status_code == 204
    response = httpx.get(f"http://127.0.0.1:{port}/v1/broker-state", timeout=10)
    assert (response.status_code, response.text) == (200, '{"brokerState":3}')
    assert httpx.get(f"http://127.0.0.1:{port}/v2/broker-state", timeout=10).status_code == 404


def write_segments(cluster: KafkaCluster, topic: str) -> int:
    """One segment per partition per round: segment.ms=1 rolls a new segment on every append."""
    admin = AdminClient(client_config(cluster.bootstrap_servers))
    config = {"segment.ms": "1", "segment.index.bytes": "4096"}
    admin.create_topics([NewTopic(topic, RECOVERY_PARTITIONS, 1, config=config)])[topic].result(120)
    producer = Producer(client_config(cluster.bootstrap_servers, **{"linger.ms": 0, "acks": "all"}))
    for _ in range(RECOVERY_ROUNDS):
        for partition in range(RECOVERY_PARTITIONS):
            producer.produce(topic, b"x" * 200, partition=partition)
        assert producer.flush(120) == 0
    return len(list((cluster.state_dir / "data").rglob(f"{topic}-*/*.log")))


def test_a_broker_in_log_recovery_is_reported_and_never_restarted_and_a_later_roll_completes(
    cluster: KafkaCluster,
) -> None:
    segments = write_segments(cluster, "recovering")
    assert segments >= RECOVERY_PARTITIONS * RECOVERY_ROUNDS // 2
    node = cluster.brokers[0]
    cluster.kill_node(node.node_id)
    cluster.start_node(node.node_id)
    restarted_pid = cluster.node(node.node_id).pid
    paths = cluster.tls.roller
    agent = MtlsAgentClient(paths.cert, paths.key, paths.ca_cert)
    agent_url = f"https://127.0.0.1:{node.agent_port}"
    seen: list[tuple[int, int | None, int | None]] = []

    def observe(predicate: object) -> bool:
        state = agent.broker_state(agent_url)
        seen.append((state.code, state.remaining_logs, state.remaining_segments))
        return bool(predicate(state))  # type: ignore[operator]

    # On a quiet machine the recovery takes a few seconds; running the broker a tenth of the time makes it
    # outlast the failing roll below (10 attempts of 0.5 s) however fast the machine is. The throttle starts
    # once the agent reports the recovery (polled often, so little of it passes unthrottled): a throttled JVM
    # start-up would take ten times as long and test nothing more.
    wait_for(
        lambda: observe(lambda s: s.in_recovery and s.remaining_logs),
        180,
        "the agent to report RECOVERY",
        interval=0.05,
    )
    with throttled(restarted_pid, share=RECOVERY_SHARE):
        # A roll now waits, asks the agent, and never restarts the broker; it fails with Strimzi's message.
        quick = RollerSettings(operation_timeout=0.5, polling_interval=0.1, backoff_initial=0.005)
        roller = local_roller(cluster, quick, only=[node.node_id])
        with pytest.raises(RollFailedError) as failure:
            roller.roll(lambda n: [RestartReason.MANUAL_ROLLING_UPDATE])
        message = str(failure.value)
        assert message.startswith(f"Pod {node.name} is not ready because the Kafka node is performing log recovery.")
        assert "logs and" in message and "segments left to recover." in message
        assert roller.runtime.restarts == []  # type: ignore[attr-defined]
        assert cluster.node(node.node_id).pid == restarted_pid
        assert observe(lambda s: s.in_recovery), "recovery ended before the failing roll did; write more segments"

    wait_for(lambda: observe(lambda s: s.code == 3), 600, "the broker to finish recovery and run", interval=0.5)
    logs_left = [logs for code, logs, _ in seen if code == 2 and logs is not None]
    assert logs_left[0] > logs_left[-1], f"the logs left to recover did not fall: {logs_left}"
    assert cluster.node(node.node_id).pid == restarted_pid

    # Once the broker runs, the same roll restarts it and completes.
    later = local_roller(cluster, RollerSettings(operation_timeout=300, polling_interval=0.5), only=[node.node_id])
    result = later.roll(lambda n: [RestartReason.MANUAL_ROLLING_UPDATE])
    assert [(n.node_id, forced) for n, _, forced in result.restarted] == [(node.node_id, False)]
    assert cluster.node(node.node_id).pid != restarted_pid
    assert cluster.node_ready(node.node_id)
    agent.close()
