"""The roller on a real KRaft cluster of 3 controllers and 3 brokers with agents: dynamic and static config
changes, the availability rule with a broker down, and a full roll under an acks=all producer and a consumer."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from sparklink.clients.settings import client_config
from sparklink.platform.kafka import KafkaCluster
from sparklink.roller.admin import AdminError
from sparklink.roller.executor import RollEvent
from sparklink.roller.local import cluster_admin, local_roller
from sparklink.roller.model import ConfigValue, RestartReason, RollerSettings
from tests.helpers import unique, wait_for

pytestmark = pytest.mark.roller
MIN_ISR = 2


@pytest.fixture(scope="module")
def cluster() -> Iterator[KafkaCluster]:
    state = Path(tempfile.mkdtemp(prefix="sparklink-test-roller-"))
    cluster = KafkaCluster.create(state / "cluster", brokers=3, controllers=3, heap="384m", agents=True)
    try:
        cluster.start(timeout=240)
        yield cluster
    finally:
        cluster.destroy()
        shutil.rmtree(state, ignore_errors=True)  # destroy() removes the cluster's directory, not its parent


def admin(cluster: KafkaCluster) -> AdminClient:
    return AdminClient(client_config(cluster.bootstrap_servers))


def create_topic(cluster: KafkaCluster, topic: str, partitions: int) -> None:
    config = {"min.insync.replicas": str(MIN_ISR)}
    client = admin(cluster)  # held until the future resolves: a collected client cancels its requests
    client.create_topics([NewTopic(topic, partitions, 3, config=config)])[topic].result(60)
    wait_for(lambda: isr_sizes(cluster, topic) == [3] * partitions, 60, f"{topic} fully replicated")


def isr(cluster: KafkaCluster, topic: str) -> dict[int, list[int]]:
    meta = admin(cluster).list_topics(topic, timeout=10).topics[topic]
    return {p.id: list(p.isrs) for p in meta.partitions.values()}


def isr_sizes(cluster: KafkaCluster, topic: str) -> list[int]:
    return [len(v) for _, v in sorted(isr(cluster, topic).items())]


def broker_setting(cluster: KafkaCluster, node_id: int, key: str) -> str:
    from confluent_kafka.admin import ConfigResource

    resource = ConfigResource(ConfigResource.Type.BROKER, str(node_id))
    client = admin(cluster)
    return str(client.describe_configs([resource])[resource].result(30)[key].value)


def settings(**overrides: Any) -> RollerSettings:
    return RollerSettings(**{"operation_timeout": 180.0, "polling_interval": 0.5, **overrides})


def test_a_dynamic_change_is_applied_to_every_broker_without_a_restart(cluster: KafkaCluster) -> None:
    pids = {n.node_id: n.pid for n in cluster.nodes}
    for broker in cluster.brokers:
        cluster.set_node_config(broker.node_id, {"log.cleaner.threads": "2"})
    result = local_roller(cluster, settings()).roll()
    assert result.restarted == []
    assert sorted(n.node_id for n, _ in result.reconfigured) == [b.node_id for b in cluster.brokers]
    assert {n.node_id: n.pid for n in cluster.nodes} == pids
    assert {broker_setting(cluster, b.node_id, "log.cleaner.threads") for b in cluster.brokers} == {"2"}


def test_kafka_roll_cli_prints_a_dry_run_plan_then_applies_a_dynamic_change(cluster: KafkaCluster) -> None:
    from typer.testing import CliRunner

    from sparklink.cli.main import app

    runner = CliRunner()
    pids = {n.node_id: n.pid for n in cluster.nodes}
    state = ["--state-dir", str(cluster.state_dir)]
    plan = runner.invoke(app, ["kafka", "roll", *state, "--dry-run", "-c", "log.cleaner.threads=3"])
    assert plan.exit_code == 0, plan.output
    lines = [line.strip() for line in plan.output.splitlines() if "): " in line]
    assert [line.split(" ")[0] for line in lines[:3]] == [f"node-{c.node_id}/{c.node_id}" for c in cluster.controllers]
    assert all(": none" in line for line in lines[:3])
    assert all(": reconfigure" in line and "log.cleaner.threads=3" in line for line in lines[3:]), plan.output
    assert KafkaCluster.load(cluster.state_dir).node_config == cluster.node_config  # a dry run records nothing

    typo = runner.invoke(app, ["kafka", "roll", *state, "-c", "log.cleaner.thread=3"])
    assert typo.exit_code == 2 and "Unknown broker setting(s): log.cleaner.thread." in typo.output
    assert KafkaCluster.load(cluster.state_dir).node_config == cluster.node_config

    applied = runner.invoke(app, ["kafka", "roll", *state, "-c", "log.cleaner.threads=3"])
    assert applied.exit_code == 0, applied.output
    assert "Roll complete. Restarted: none." in applied.output
    assert {broker_setting(cluster, b.node_id, "log.cleaner.threads") for b in cluster.brokers} == {"3"}
    cluster.node_config.update(KafkaCluster.load(cluster.state_dir).node_config)
    assert {n.node_id: n.pid for n in cluster.nodes} == pids


def test_a_restart_that_would_take_a_partition_under_min_isr_waits_until_the_down_broker_is_back(
    cluster: KafkaCluster,
) -> None:
    topic = unique("avail")
    create_topic(cluster, topic, 3)
    down, target = cluster.brokers[0].node_id, cluster.brokers[1].node_id
    target_pid = cluster.node(target).pid
    cluster.stop_node(down)
    wait_for(lambda: all(down not in r for r in isr(cluster, topic).values()), 60, f"broker {down} out of the ISR")

    events: list[tuple[float, RollEvent, list[int]]] = []

    def record(event: RollEvent) -> None:
        sizes = isr_sizes(cluster, topic) if event.kind == "restart" else []
        events.append((time.monotonic(), event, sizes))

    roller = local_roller(cluster, settings(), progress=record, only=[target])
    outcome: list[object] = []
    worker = threading.Thread(
        target=lambda: outcome.append(roller.roll(lambda n: [RestartReason.MANUAL_ROLLING_UPDATE]))
    )
    worker.start()
    try:
        wait_for(lambda: any(e.kind == "defer" for _, e, _ in events), 120, "the roller to hold the restart")
        refusal = next(e for _, e, _ in events if e.kind == "defer")
        assert "will be under-replicated" in refusal.message and f"broker {target}" in refusal.message
        assert not any(e.kind == "restart" for _, e, _ in events)
        assert cluster.node(target).pid == target_pid
    finally:
        cluster.start_node(down)
        worker.join(timeout=400)
    assert outcome, "the roll did not complete after the down broker came back"
    restarts = [(sizes, e) for _, e, sizes in events if e.kind == "restart"]
    assert [e.node.node_id for _, e in restarts] == [target]
    assert restarts[0][0] == [3, 3, 3], "the broker was restarted before the ISR was whole again"
    assert cluster.node(target).pid != target_pid


def test_an_admin_made_while_a_broker_was_down_answers_for_it_once_it_is_back(cluster: KafkaCluster) -> None:
    # The operator's roller makes one admin per roll, often while a broker is down or still recovering its logs;
    # the broker's first config read after it is back must reach it, not wait for a metadata refresh.
    down = cluster.brokers[2].node_id
    cluster.stop_node(down)
    roller_admin = cluster_admin(cluster, timeout=30.0)
    with pytest.raises(AdminError, match=f"broker {down} is not"):
        roller_admin.broker_config(down)
    cluster.start_node(down)
    wait_for(lambda: cluster.node_ready(down), 120, f"broker {down} ready again")

    def config_read() -> dict[str, ConfigValue] | None:
        try:  # the broker that answers for metadata may learn a moment later that it is unfenced
            return roller_admin.broker_config(down)
        except AdminError:
            return None

    config = wait_for(config_read, 60, f"the config of broker {down}")
    assert config["broker.id"].value == str(down)
    roller_admin.alter_broker_config(down, {"log.cleaner.threads": str(config["log.cleaner.threads"].value)})


class Traffic:
    """A steady acks=all idempotent producer and a consumer of the same topic, in threads."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.acked: dict[bytes, bytes] = {}
        self.consumed: dict[bytes, bytes] = {}
        self.failed = 0
        self.stop = threading.Event()
        self.produced = threading.Event()
        self.producer = Producer(
            client_config(
                bootstrap, **{"acks": "all", "enable.idempotence": True, "linger.ms": 5, "message.timeout.ms": 300000}
            )
        )
        self.consumer = Consumer(
            client_config(
                bootstrap,
                **{"group.id": unique("roll-reader"), "auto.offset.reset": "earliest", "enable.auto.commit": False},
            )
        )
        self.threads = [threading.Thread(target=self._produce), threading.Thread(target=self._consume)]

    def __enter__(self) -> Traffic:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.threads[0].join(timeout=300)  # the producer flushes: its last acknowledgements arrive now
        self.produced.set()
        self.threads[1].join(timeout=180)
        self.consumer.close()

    def _delivered(self, err: object, msg: Any) -> None:
        if err is None:
            self.acked[msg.key()] = msg.value()
        else:
            self.failed += 1

    def _produce(self) -> None:
        i = 0
        while not self.stop.is_set():
            self.producer.produce(
                self.topic, key=str(i).encode(), value=f"value-{i}".encode(), on_delivery=self._delivered
            )
            i += 1
            self.producer.poll(0.01)  # serves delivery reports and paces the producer at ~100 records/s
        self.producer.flush(300)

    def _consume(self) -> None:
        self.consumer.subscribe([self.topic])
        deadline = float("inf")
        while time.monotonic() < deadline:
            if self.produced.is_set():
                if self.acked.keys() <= self.consumed.keys():
                    return
                deadline = min(deadline, time.monotonic() + 120)
            msg = self.consumer.poll(0.5)
            if msg is not None and not msg.error():
                self.consumed[msg.key()] = msg.value()


def test_a_static_change_rolls_every_node_once_under_load_never_at_min_isr_active_controller_last(
    cluster: KafkaCluster,
) -> None:
    topic = unique("load")
    create_topic(cluster, topic, 6)
    pids = {n.node_id: n.pid for n in cluster.nodes}
    restarts: list[dict[str, Any]] = []

    def record(event: RollEvent) -> None:
        if event.kind != "restart":
            return
        node = event.node
        row: dict[str, Any] = {"node": node.node_id}
        if node.controller:
            row["leader"] = cluster.active_controller()
        if node.broker:
            row["isr_with_node"] = [len(r) for r in isr(cluster, topic).values() if node.node_id in r]
        restarts.append(row)

    for n in cluster.nodes:
        cluster.set_node_config(n.node_id, {"queued.max.requests": "600"})  # read-only: needs a restart
    with Traffic(cluster.bootstrap_servers, topic) as traffic:
        wait_for(lambda: len(traffic.acked) >= 100, 60, "records acknowledged before the roll")
        before = len(traffic.acked)
        result = local_roller(cluster, settings(), progress=record).roll()
        wait_for(lambda: len(traffic.acked) >= before + 100, 60, "records acknowledged after the roll")
    assert traffic.acked.keys() <= traffic.consumed.keys(), "acknowledged records were not consumed"
    assert all(traffic.consumed[k] == v for k, v in traffic.acked.items())

    controllers = [n.node_id for n in cluster.controllers]
    assert sorted(n.node_id for n, _, _ in result.restarted) == sorted(pids)
    assert all(r == {RestartReason.CONFIG_CHANGE_REQUIRES_RESTART} and not f for _, r, f in result.restarted)
    assert [r["node"] for r in restarts[:3]] == [n.node_id for n, _, _ in result.restarted[:3]]
    assert {r["node"] for r in restarts[:3]} == set(controllers), "brokers were restarted before a controller"
    # The active controller went last: no controller was restarted while it led and another was left.
    assert all(r["leader"] != r["node"] for r in restarts[:2])
    if len({r["leader"] for r in restarts[:3]}) == 1:  # unless an election moved the leadership meanwhile
        assert restarts[2]["leader"] == restarts[2]["node"]
    for row in restarts[3:]:
        assert all(size > MIN_ISR for size in row["isr_with_node"]), f"restarted at minISR: {row}"
    assert all(cluster.node(n).pid != pid for n, pid in pids.items())
    assert {broker_setting(cluster, b.node_id, "queued.max.requests") for b in cluster.brokers} == {"600"}
