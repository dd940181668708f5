"""The operator runs a Kafka from Strimzi's KRaft example: a real kube-apiserver + etcd, `sparklink operator run`
as a subprocess, and real KRaft nodes with broker-state agents (mTLS) that the operator starts and rolls.

One cluster for the module - Strimzi's kafka-ephemeral.yaml with the controller pool at 1 replica (1 controller,
3 brokers, 256m heaps) - and the tests run in order on it: Ready with its status; a dynamic change with no
restart; a static change that rolls each node once, controllers first; a manual rolling update of a pool;
bad input; a KafkaConnect that names the Kafka by its bootstrap Service; a broker pool scaled up (and a
controller pool, which is not); the operator killed and replaced (it adopts the cluster); a broker really in
log recovery that fails a roll without being restarted; and last, the Kafka deleted.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import javaproperties
import pytest
import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from sparklink.clients.settings import client_config
from sparklink.operator.model.resources import GROUP, PLURALS, VERSION
from sparklink.platform import kafka_probes, process
from tests.helpers import unique, wait_for
from tests.it.operator_fixtures import Kube, OperatorProcess, conditions, is_ready, kafka_connect_body
from tests.support.throttle import throttled

# Every test runs on the cluster (created once), so any one of them can be run alone.
pytestmark = [pytest.mark.kube, pytest.mark.roller, pytest.mark.usefixtures("cluster")]

EXAMPLE = Path(__file__).parent.parent / "data" / "strimzi" / "kafka-ephemeral.yaml"
CLUSTER = "my-cluster"
MANUAL = "strimzi.io/manual-rolling-update"
# Strimzi's roller settings for the first operator; the one that replaces it gives up on an unready node after
# 1 s (ten times, 5 ms back-off doubling), so a failing roll fits inside a broker's log recovery; a patient one
# then completes the roll. The impatient one also passes over every resource each 5 s: it starts a killed
# broker again at its next full reconcile (a kubelet would at once), which at 20 s was up to 20 s of waiting.
STEADY = ["--kafka-heap", "256m", "--full-reconcile-interval", "20"]
IMPATIENT = [
    *("--kafka-heap", "256m", "--full-reconcile-interval", "5"),
    *("--kafka-operation-timeout", "1", "--kafka-roll-backoff", "0.005"),
]
# Segments written since the last recovery checkpoint, which a broker killed uncleanly must recover, with the
# broker run RECOVERY_SHARE of the time. Fewer segments at a smaller share recover as long while throttled and
# cost less to write, to finish recovering and to load again at the later roll.
RECOVERY_PARTITIONS = 600
RECOVERY_ROUNDS = 8
RECOVERY_SHARE = 0.1
RECOVERY = 2  # the broker state of a broker loading its logs (kafka_probes.STATE_NAMES)


@pytest.fixture(scope="module")
def operator(operator_kubeconfig: Path, namespace: str) -> Iterator[OperatorProcess]:
    state = Path(tempfile.mkdtemp(prefix="sparklink-test-operator-"))
    proc = OperatorProcess(operator_kubeconfig, namespace, state, STEADY).start()
    try:
        yield proc
    finally:
        proc.stop()
        proc.cleanup_workers()
        proc.cleanup_kafka()
        if os.environ.get("SPARKLINK_KEEP_OPERATOR_LOGS"):
            print(f"operator state kept in {state}")
        else:
            shutil.rmtree(state, ignore_errors=True)


def example_documents() -> list[dict[str, Any]]:
    return [dict(d) for d in yaml.safe_load_all(EXAMPLE.read_text())]


@pytest.fixture(scope="module")
def cluster(kubeobj: Kube, operator: OperatorProcess) -> dict[str, Any]:
    """Strimzi's example with one controller instead of three, Ready; and a KafkaConnect that reaches it by
    `my-cluster-kafka-bootstrap:9092` (created now so its worker starts while the tests roll the brokers)."""
    for doc in example_documents():
        if doc["kind"] == "KafkaNodePool" and doc["metadata"]["name"] == "controller":
            doc["spec"]["replicas"] = 1
        kubeobj.create(doc)
    ready = kubeobj.wait("Kafka", CLUSTER, is_ready, "Ready", timeout=600)
    kubeobj.create(kafka_connect_body("connect", f"{CLUSTER}-kafka-bootstrap:9092"))
    return ready


def state_file(operator: OperatorProcess) -> Path:
    return operator.state_dir / "workers" / operator.namespace / "Kafka" / CLUSTER / "cluster" / "cluster.json"


def nodes(operator: OperatorProcess) -> dict[int, dict[str, Any]]:
    return {n["node_id"]: n for n in json.loads(state_file(operator).read_text())["nodes"]}


def pids(operator: OperatorProcess) -> dict[int, int]:
    return {node_id: n["pid"] for node_id, n in nodes(operator).items()}


def starts(operator: OperatorProcess, node_id: int) -> int:
    """How often the node's JVM started: each start appends "Kafka Server started" to its log."""
    log = state_file(operator).parent / "logs" / f"node-{node_id}.log"
    return log.read_text(errors="replace").count("Kafka Server started")


def start_tick(pid: int) -> int:
    """When the process started (clock ticks since boot), to order restarts."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


def bootstrap(kubeobj: Kube) -> str:
    listeners = kubeobj.get("Kafka", CLUSTER)["status"]["listeners"]
    return str(next(lst for lst in listeners if lst["name"] == "plain")["bootstrapServers"])


def broker_setting(servers: str, node_id: int, name: str) -> str | None:
    admin = AdminClient(client_config(servers))
    resource = ConfigResource(ConfigResource.Type.BROKER, str(node_id))
    entries = admin.describe_configs([resource])[resource].result(60)
    return entries[name].value if name in entries else None


def reports(servers: str, brokers: tuple[int, ...], name: str, value: str) -> None:
    """Wait until each broker reports `name` = `value`: in KRaft a dynamic update is committed by the controller
    and reaches each broker when it replays the metadata log (soon, but not at once on a loaded machine)."""
    wait_for(
        lambda: all(broker_setting(servers, b, name) == value for b in brokers),
        60,
        f"brokers {brokers} to report {name}={value}",
    )


def set_config(kubeobj: Kube, **config: Any) -> int:
    """Merge `config` into spec.kafka.config (None removes a key); returns the new generation."""
    current = kubeobj.get("Kafka", CLUSTER)["spec"]["kafka"]
    updated = kubeobj.spec("Kafka", CLUSTER, kafka={**current, "config": {**current["config"], **config}})
    return int(updated["metadata"]["generation"])


def ready_at(generation: int) -> Any:
    def check(obj: dict[str, Any]) -> bool:
        return is_ready(obj) and obj["status"].get("observedGeneration") == generation

    return check


def not_ready(obj: dict[str, Any]) -> dict[str, Any] | None:
    found = conditions(obj, "NotReady")
    return found[0] if found else None


def test_strimzis_kraft_example_applies_and_reaches_ready_with_its_status(
    kubeobj: Kube, cluster: dict[str, Any]
) -> None:
    status = cluster["status"]
    assert status["kafkaNodePools"] == [{"name": "broker"}, {"name": "controller"}]
    assert status["kafkaVersion"] == "4.4.0" and status["kafkaMetadataVersion"] == "4.4-IV2"
    assert status["observedGeneration"] == cluster["metadata"]["generation"]
    plain, tls = status["listeners"]  # both served; the TLS one with the certificate its clients trust
    assert (plain["name"], tls["name"]) == ("plain", "tls")
    for lst in (plain, tls):
        assert len(lst["addresses"]) == 3
        assert lst["bootstrapServers"] == ",".join(f"{a['host']}:{a['port']}" for a in lst["addresses"])
    assert "certificates" not in plain and tls["certificates"][0].startswith("-----BEGIN CERTIFICATE-----")
    warnings = {c["reason"]: c["message"] for c in conditions(cluster, "Warning")}
    assert set(warnings) == {"UnsupportedField"}  # the entity operator's topic operator

    brokers = kubeobj.get("KafkaNodePool", "broker")["status"]
    controllers = kubeobj.get("KafkaNodePool", "controller")["status"]
    assert (brokers["nodeIds"], brokers["roles"], brokers["replicas"]) == ([0, 1, 2], ["broker"], 3)
    assert (controllers["nodeIds"], controllers["roles"], controllers["replicas"]) == ([3], ["controller"], 1)
    assert brokers["clusterId"] == controllers["clusterId"] == status["clusterId"]

    metadata = AdminClient(client_config(plain["bootstrapServers"])).list_topics(timeout=60)
    assert sorted(metadata.brokers) == [0, 1, 2]
    # The example as Strimzi ships it (three controllers) is accepted as is.
    custom = k8s.CustomObjectsApi(kubeobj.api)
    for doc in example_documents():
        doc["metadata"]["name"] += "-as-shipped"
        custom.create_namespaced_custom_object(
            GROUP, VERSION, kubeobj.ns, PLURALS[doc["kind"]], doc, dry_run="All", field_validation="Strict"
        )


def test_a_dynamic_change_is_applied_without_restarting_any_node(kubeobj: Kube, operator: OperatorProcess) -> None:
    before = pids(operator)
    # One thread recovers the logs of a broker that was killed (the last test counts on slow recovery).
    generation = set_config(kubeobj, **{"num.recovery.threads.per.data.dir": 1})
    kubeobj.wait("Kafka", CLUSTER, ready_at(generation), "Ready with the change", timeout=180)
    assert pids(operator) == before
    reports(bootstrap(kubeobj), (0, 1, 2), "num.recovery.threads.per.data.dir", "1")


def test_a_static_change_rolls_each_node_once_controllers_first(kubeobj: Kube, operator: OperatorProcess) -> None:
    before, started = pids(operator), {i: starts(operator, i) for i in range(4)}
    # Both read-only; queued.max.requests matters to controllers too. A checkpoint of recovery points once an
    # hour leaves every segment written later to recover after an unclean shutdown (the last test).
    generation = set_config(kubeobj, **{"queued.max.requests": 600, "log.flush.offset.checkpoint.interval.ms": 3600000})
    kubeobj.wait("Kafka", CLUSTER, ready_at(generation), "Ready after the roll", timeout=900)
    after = pids(operator)
    assert all(after[i] != before[i] for i in range(4))
    assert {i: starts(operator, i) - started[i] for i in range(4)} == {0: 1, 1: 1, 2: 1, 3: 1}
    controller_start = start_tick(after[3])
    assert all(controller_start < start_tick(after[b]) for b in (0, 1, 2)), "the controller rolls before brokers"
    servers = bootstrap(kubeobj)
    assert [broker_setting(servers, b, "queued.max.requests") for b in (0, 1, 2)] == ["600"] * 3


def test_the_manual_rolling_update_annotation_rolls_its_pool_and_is_removed(
    kubeobj: Kube, operator: OperatorProcess
) -> None:
    before = pids(operator)
    kubeobj.annotate("KafkaNodePool", "controller", **{MANUAL: "true"})
    kubeobj.wait(
        "KafkaNodePool",
        "controller",
        lambda pool: MANUAL not in (pool["metadata"].get("annotations") or {}),
        "the annotation to be removed",
        timeout=300,
    )
    after = pids(operator)
    assert after[3] != before[3]
    assert {b: after[b] for b in (0, 1, 2)} == {b: before[b] for b in (0, 1, 2)}
    assert is_ready(kubeobj.get("Kafka", CLUSTER))


def test_bad_input_is_refused_or_reported_and_harms_nothing_that_runs(kubeobj: Kube, operator: OperatorProcess) -> None:
    before = pids(operator)
    pool = next(d for d in example_documents() if d["metadata"]["name"] == "broker")
    for change, field in (({"replicas": -1}, "spec.replicas"), ({"roles": ["broker", "zookeeper"]}, "spec.roles")):
        bad = copy.deepcopy(pool)
        bad["metadata"]["name"] = unique("bad")
        bad["spec"].update(change)
        with pytest.raises(ApiException) as refused:
            kubeobj.create(bad)
        assert refused.value.status == 422 and field in str(refused.value.body)

    stray = copy.deepcopy(pool)
    stray["metadata"] = {"name": "stray", "labels": {"strimzi.io/cluster": "no-such-kafka"}}
    kubeobj.create(stray)
    warned = kubeobj.wait("KafkaNodePool", "stray", lambda p: conditions(p, "Warning"), "a Warning", timeout=120)
    assert (
        "Kafka cluster 'no-such-kafka' named by label 'strimzi.io/cluster'"
        in conditions(warned, "Warning")[0]["message"]
    )

    generation = set_config(kubeobj, **{"num.io.threads": "lots"})
    refused_config = kubeobj.wait(
        "Kafka",
        CLUSTER,
        lambda k: k["status"].get("observedGeneration") == generation and not_ready(k),
        "NotReady",
        timeout=120,
    )
    condition = not_ready(refused_config)
    assert condition is not None and condition["reason"] == "InvalidResourceException"
    assert condition["message"] == (
        f"Kafka {kubeobj.ns}/{CLUSTER} has invalid spec.kafka.config: "
        "num.io.threads has value 'lots' which is not an int"
    )
    assert refused_config["status"]["listeners"] and refused_config["status"]["clusterId"]  # what runs is still told
    generation = set_config(kubeobj, **{"num.io.threads": None})
    kubeobj.wait("Kafka", CLUSTER, ready_at(generation), "Ready again", timeout=180)
    assert pids(operator) == before
    kubeobj.delete("KafkaNodePool", "stray")


def test_a_kafka_connect_reaches_the_kafka_by_its_bootstrap_service_name(
    kubeobj: Kube, operator: OperatorProcess
) -> None:
    kubeobj.wait("KafkaConnect", "connect", is_ready, "Ready", timeout=400)
    properties = operator.state_dir / "workers" / kubeobj.ns / "KafkaConnect" / "connect" / "worker.properties"
    # Read as Java reads it: the file is written with Java's escapes (`127.0.0.1\\:9092`).
    assert javaproperties.loads(properties.read_text())["bootstrap.servers"] == bootstrap(kubeobj)
    kubeobj.delete("KafkaConnect", "connect")


def test_a_broker_pool_scales_up_and_a_controller_pool_is_left_with_a_warning(
    kubeobj: Kube, operator: OperatorProcess
) -> None:
    before = pids(operator)
    kubeobj.spec("KafkaNodePool", "broker", replicas=4)
    kubeobj.spec("KafkaNodePool", "controller", replicas=2)  # would change the quorum's voters

    def scaled(kafka: dict[str, Any]) -> bool:
        pool = kubeobj.get("KafkaNodePool", "broker")["status"]
        return is_ready(kafka) and pool.get("nodeIds") == [0, 1, 2, 4] and bool(scaling_warnings(kafka))

    kafka = kubeobj.wait("Kafka", CLUSTER, scaled, "Ready with broker 4 and a scaling Warning", timeout=300)
    assert scaling_warnings(kafka) == [
        "Adding nodes [my-cluster-controller-5] is not supported yet: the KRaft quorum's voters are fixed when a "
        "sparklink cluster is created. They were not started."
    ]
    controllers = kubeobj.get("KafkaNodePool", "controller")["status"]
    assert (controllers["nodeIds"], controllers["replicas"]) == ([3], 1)
    after = pids(operator)
    assert sorted(after) == [0, 1, 2, 3, 4] and {i: after[i] for i in before} == before
    plain = next(lst for lst in kafka["status"]["listeners"] if lst["name"] == "plain")
    assert len(plain["addresses"]) == 4
    brokers = AdminClient(client_config(plain["bootstrapServers"])).list_topics(timeout=60).brokers
    assert sorted(brokers) == [0, 1, 2, 4]

    kubeobj.spec("KafkaNodePool", "controller", replicas=1)
    kubeobj.wait("Kafka", CLUSTER, lambda k: is_ready(k) and not scaling_warnings(k), "the Warning gone", timeout=120)


def scaling_warnings(kafka: dict[str, Any]) -> list[str]:
    return [c["message"] for c in conditions(kafka, "Warning") if c["reason"] == "UnsupportedScaling"]


def test_an_operator_killed_and_started_again_adopts_the_running_cluster(
    kubeobj: Kube, operator: OperatorProcess
) -> None:
    before = pids(operator)
    operator.kill9()
    operator.extra = IMPATIENT
    operator.start()

    def reconciled() -> bool:
        return 'strimzi_reconciliations_total{kind="Kafka"' in operator.metrics()

    wait_for(reconciled, 120, "the new operator to reconcile the Kafka")
    assert pids(operator) == before
    assert all(process.alive(pid) for pid in before.values())
    assert is_ready(kubeobj.get("Kafka", CLUSTER))
    log = operator.log.read_text()
    assert log.count("created cluster") == 1, "the new operator must not start a second cluster"


def write_segments(servers: str, broker: int, topic: str) -> None:
    """One segment per partition per round (segment.ms=1 rolls one on every append), all on `broker`."""
    admin = AdminClient(client_config(servers))
    config = {"segment.ms": "1", "segment.index.bytes": "4096"}
    assignment = [[broker]] * RECOVERY_PARTITIONS
    new = NewTopic(topic, num_partitions=RECOVERY_PARTITIONS, replica_assignment=assignment, config=config)
    admin.create_topics([new])[topic].result(120)
    producer = Producer(client_config(servers, **{"linger.ms": 0, "acks": "all"}))
    for _ in range(RECOVERY_ROUNDS):
        for partition in range(RECOVERY_PARTITIONS):
            producer.produce(topic, b"x" * 200, partition=partition)
        assert producer.flush(120) == 0


def test_a_broker_in_log_recovery_fails_the_roll_unrestarted_and_a_later_reconcile_completes(
    kubeobj: Kube, operator: OperatorProcess
) -> None:
    write_segments(bootstrap(kubeobj), 1, "recovering")
    killed_pid = pids(operator)[1]
    os.killpg(killed_pid, signal.SIGKILL)

    # The operator starts the killed broker again (as a kubelet would), which then recovers its logs. That
    # takes seconds on a quiet machine: running the broker a tenth of the time makes the recovery outlast a
    # reconcile and the failing roll (10 attempts of 1 s) however fast the machine is. The throttle starts
    # once its agent reports the recovery (asked often, so little of it passes unthrottled): a throttled JVM
    # start-up would take ten times as long and test nothing more.
    def restarted() -> int:
        pid = pids(operator)[1]
        return pid if pid not in (0, killed_pid) and process.alive(pid) else 0

    recovering_pid = wait_for(restarted, 120, "the operator to start broker 1 again", interval=0.05)
    probe_port = nodes(operator)[1]["probe_port"]
    wait_for(
        lambda: kafka_probes.broker_state(probe_port) == RECOVERY,
        120,
        "broker 1 to start recovering its logs",
        interval=0.05,
    )

    def recovering(kafka: dict[str, Any]) -> bool:
        condition = not_ready(kafka)
        return condition is not None and f"{CLUSTER}-broker-1 is performing log recovery" in condition["message"]

    def roll_failed(kafka: dict[str, Any]) -> bool:
        condition = not_ready(kafka)
        return condition is not None and condition["reason"] == "UnforceableProblem"

    with throttled(recovering_pid, share=RECOVERY_SHARE):
        kubeobj.wait("Kafka", CLUSTER, recovering, "broker 1 in log recovery", timeout=300)
        generation = set_config(kubeobj, **{"log.cleaner.threads": 2})
        failed = not_ready(kubeobj.wait("Kafka", CLUSTER, roll_failed, "the roll to fail", timeout=180))
        # Gone before the broker runs at full speed again: its next roll (a full reconcile may start one at once)
        # could otherwise see the seconds between the end of the recovery and the broker's listeners opening,
        # which with its 1 s operation timeout look unresponsive, and force-restart the broker.
        operator.kill9()
    assert failed is not None
    assert failed["message"].startswith(
        f"Pod {CLUSTER}-broker-1 is not ready because the Kafka node is performing log recovery. There are "
    )
    assert failed["message"].endswith(" segments left to recover.")
    assert pids(operator)[1] == recovering_pid, "a broker in log recovery is never restarted"

    # A patient operator finishes the roll (Strimzi's 300 s operation timeout outlasts any recovery's end).
    operator.extra = STEADY
    operator.start()
    kubeobj.wait("Kafka", CLUSTER, ready_at(generation), "Ready once the recovery is over", timeout=600)
    # Should broker 1 have restarted, the message says how often its JVM started and what the patient operator
    # first said of it (a decision to restart it, or the start of a broker that died), in a few short lines.
    said = [line for line in operator.log_since_start() if f"{CLUSTER}-broker-1" in line and "retry" not in line]
    assert pids(operator)[1] == recovering_pid, (
        f"the change was dynamic, yet broker 1 restarted ({starts(operator, 1)} JVM starts in its log); the "
        "operator said:\n" + "\n".join(line[:300] for line in said[:12])
    )
    reports(bootstrap(kubeobj), (1,), "log.cleaner.threads", "2")


def test_deleting_the_kafka_stops_its_nodes_and_agents(kubeobj: Kube, operator: OperatorProcess) -> None:
    found = nodes(operator)
    assert all(n.get("agent_pid") for node_id, n in found.items() if node_id != 3), "each broker has its agent"
    running = [pid for n in found.values() for pid in (n["pid"], n.get("agent_pid", 0)) if pid]
    kubeobj.delete("Kafka", CLUSTER)
    wait_for(lambda: not any(process.alive(pid) for pid in running), 300, "the Kafka's nodes and agents to stop")
    # Then its data goes (a Kafka created again under this name starts afresh).
    wait_for(lambda: not state_file(operator).exists(), 120, "the cluster's record and data to be removed")
    assert not (state_file(operator).parent / "data").exists()
