"""Workers, their tasks and MirrorMaker 2 on secured Kafka only (real TLS, mutual TLS and SASL; no PLAINTEXT
listener anywhere), every client's settings from sparklink.clients:

- one worker whose own clients (stores, log follower, metadata) use SASL_SSL with SCRAM-SHA-512 runs
  datagen -> Kafka -> FileStreamSink over each listener (the tasks' clients through `producer.override.*` and
  `consumer.override.*`), and its restart and offsets endpoints answer;
- two `sparklink worker` processes in one distributed group over SASL_SSL: kill -9 of one moves its tasks,
  no record is lost;
- MirrorMaker 2 from the SCRAM cluster to the mutual-TLS one: records, offset syncs, checkpoints, heartbeats
  and group offset sync;
- the Spark JVM of a worker whose clients use TLS has its TLS record cipher warmed up, once;
- bad credentials: the worker refuses to start, or a connector's task fails while a canary connector on the
  same worker runs on; either way the error names the listener's protocol and mechanism and the setting to fix,
  and the password is in neither the error nor the log.
The session's secured clusters (tests/support/secured_kafka.py) and SparkSession are shared; the in-process
worker is one per module.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import javaproperties
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from sparklink.clients.settings import KafkaClientSettings
from sparklink.worker.assembly import RunningWorker, start_worker
from sparklink.worker.config import WorkerConfig
from tests.helpers import create_topic, read_topic, status, topic_size, unique, wait_for
from tests.it.mirror_fixtures import checkpoints, committed
from tests.support.secured_kafka import SecuredKafka, connect_props, prefixed
from tests.worker_process import WorkerProcess, stop_all

SCRAM = ("saslssl", "SCRAM-SHA-512")  # the worker's own clients
# (listener, SASL mechanism) of each task route: SSL, mutual TLS, SASL_SSL (SCRAM), SASL_PLAINTEXT (PLAIN).
ROUTES = [("tls", None), ("mtls", None), ("saslssl", "SCRAM-SHA-512"), ("sasl", "PLAIN")]
ROUTE_IDS = [f"{listener}-{mechanism or 'tls'}" for listener, mechanism in ROUTES]
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
MIRROR = "org.apache.kafka.connect.mirror."
BOUND = 30.0  # a refused credential is reported well within this, never after a hang


def internal_topics(group: str) -> dict[str, Any]:
    return {
        "group.id": group,
        "config.storage.topic": f"{group}-configs",
        "offset.storage.topic": f"{group}-offsets",
        "status.storage.topic": f"{group}-status",
        "offset.storage.partitions": 1,
        "status.storage.partitions": 1,
    }


def in_process_worker(client: Mapping[str, str], spark: Any, state: Path) -> RunningWorker:
    group = unique("secured")
    props = {
        **connect_props(client),
        **internal_topics(group),
        "rest.port": 0,
        "task.trigger.interval.ms": 300,
        "sparklink.state.dir": str(state / group),
    }
    return start_worker(WorkerConfig.model_validate(props), spark=spark)


def create(url: str, name: str, config: dict[str, str]) -> None:
    response = httpx.post(f"{url}/connectors", json={"name": name, "config": config}, timeout=120)
    assert response.status_code == 201, response.text


def delete(url: str, *names: str) -> None:
    """Stop what a test started, so the next test's Spark queries do not share the two cores with it."""
    for name in names:
        response = httpx.delete(f"{url}/connectors/{name}", timeout=120)
        assert response.status_code in (204, 404), response.text


def running(url: str, name: str, tasks: int) -> dict[str, Any] | None:
    body = status(url, name)
    states = [body["connector"]["state"], *(t["state"] for t in body["tasks"])]
    return body if len(body["tasks"]) == tasks and set(states) == {"RUNNING"} else None


def delivered(sink_file: Path) -> set[tuple[int, int]]:
    """(task, seq) of each datagen record in the sink file."""
    seen = set()
    for line in sink_file.read_text().splitlines() if sink_file.exists() else []:
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line still being written
        seen.add((int(record["task"]), int(record["seq"])))
    return seen


def datagen(topic: str, total: int, tasks: int = 1, rate: int = 100) -> dict[str, str]:
    return {
        "connector.class": "datagen",
        "topic": topic,
        "tasks.max": str(tasks),
        "total.records": str(total),
        "records.per.second": str(rate),
    }


def passwords(secured: SecuredKafka) -> list[str]:
    return list(secured.cluster.access.users().values())


# ------------------------------------------------------------------ one worker, every listener for its tasks
@pytest.fixture(scope="module")
def scram_worker(
    secured_kafka: SecuredKafka, spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningWorker]:
    """A worker whose own clients use SASL_SSL with SCRAM-SHA-512; its tasks, the same unless overridden."""
    runtime = in_process_worker(secured_kafka.properties(*SCRAM), spark, tmp_path_factory.mktemp("scram"))
    yield runtime
    runtime.stop()


@pytest.mark.parametrize(("listener", "mechanism"), ROUTES, ids=ROUTE_IDS)
def test_datagen_to_kafka_to_file_sink_over_each_listener(
    scram_worker: RunningWorker, secured_kafka: SecuredKafka, tmp_path: Path, listener: str, mechanism: str | None
) -> None:
    route = secured_kafka.properties(listener, mechanism)
    assert "PLAINTEXT" not in [lst.security_protocol for lst in secured_kafka.cluster.listeners]
    url, total = scram_worker.url, 200
    topic, source, sink = unique(f"sec-{listener}"), unique("gen"), unique("sink")
    sink_file = tmp_path / "records.txt"
    create_topic(secured_kafka.settings(listener, mechanism), topic)
    try:
        create(url, source, {**datagen(topic, total), **prefixed("producer.override.", route)})
        create(
            url,
            sink,
            {"connector.class": FILE_SINK, "file": str(sink_file), "topics": topic}
            | prefixed("consumer.override.", route),
        )
        expected = {(0, seq) for seq in range(total)}
        wait_for(
            lambda: delivered(sink_file) == expected,
            240,
            f"all {total} records through the {listener} listener into the sink file",
            explain=lambda: (status(url, source), status(url, sink)),
        )
        # The source's offsets, read back through the worker's (SCRAM) offset store.
        offsets = httpx.get(f"{url}/connectors/{source}/offsets", timeout=30).json()["offsets"]
        assert [o["offset"] for o in offsets] and offsets[0]["partition"], offsets
        # The sink's committed group offsets, read with its admin on the cluster: the end of the topic.
        sink_offsets = wait_for(
            lambda: (
                (o := httpx.get(f"{url}/connectors/{sink}/offsets", timeout=30).json()["offsets"])
                and o[0]["offset"]["kafka_offset"] == total
                and o
            ),
            60,
            "the sink's committed offset at the end of the topic",
        )
        assert sink_offsets == [
            {"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": total}}
        ]
        # Restart the sink with its task: it comes back RUNNING over the same listener.
        restarted = httpx.post(f"{url}/connectors/{sink}/restart", params={"includeTasks": "true"}, timeout=60)
        assert restarted.status_code in (200, 202, 204), restarted.text
        wait_for(lambda: running(url, sink, 1), 120, f"{sink} RUNNING after its restart")
        assert delivered(sink_file) == expected
    finally:
        delete(url, source, sink)


def test_a_task_whose_credentials_are_refused_fails_naming_the_fix_while_a_canary_runs(
    scram_worker: RunningWorker, secured_kafka: SecuredKafka, caplog: pytest.LogCaptureFixture
) -> None:
    url = scram_worker.url
    canary, bad = unique("canary"), unique("bad")
    canary_topic = unique("canary")
    wrong = secured_kafka.wrong_password("saslssl")
    wrong_password = wrong["sasl.jaas.config"].split('password="', 1)[1].split('"', 1)[0]
    secrets = [*passwords(secured_kafka), wrong_password]
    caplog.set_level(logging.DEBUG)
    try:
        create(url, canary, datagen(canary_topic, 100_000, rate=20))
        wait_for(lambda: running(url, canary, 1), 120, "the canary RUNNING")
        create(url, bad, {**datagen(unique("bad"), 100), **prefixed("producer.override.", wrong)})
        failed = wait_for(
            lambda: [t for t in status(url, bad)["tasks"] if t["state"] == "FAILED"],
            60,
            "the task with the wrong password FAILED",
            explain=lambda: status(url, bad),
        )
        trace = failed[0]["trace"]
        assert "SASL_SSL, SASL mechanism SCRAM-SHA-512" in trace, trace
        assert "SASL authentication failed" in trace and "Check the username and password in sasl.jaas.config" in trace
        for secret in secrets:
            assert secret not in trace
            assert secret not in caplog.text
        # The canary, on the same worker, keeps writing.
        before = topic_size(secured_kafka.settings(*SCRAM), canary_topic)
        wait_for(
            lambda: topic_size(secured_kafka.settings(*SCRAM), canary_topic) > before,
            60,
            "the canary to keep writing",
        )
        assert running(url, canary, 1)
    finally:
        delete(url, canary, bad)


def test_the_spark_jvm_of_a_worker_with_tls_clients_runs_the_tls_cipher_warm_up_once(
    scram_worker: RunningWorker, spark: Any
) -> None:
    # Started by the worker (its clients use SASL_SSL), it finishes within seconds; a second start is refused,
    # so workers and tasks sharing the JVM may all ask for it (kafka_io.warm_up_tls).
    warm_up = spark._jvm.io.sparklink.kafka.TlsCipherWarmup
    assert warm_up.finished(120_000), "the TLS cipher warm-up was not started, or did not finish in 120 s"
    assert not warm_up.start(1)


def test_a_worker_with_a_wrong_password_refuses_to_start_and_says_what_to_fix(
    secured_kafka: SecuredKafka, tmp_path: Path
) -> None:
    wrong = secured_kafka.wrong_password("saslssl")
    wrong_password = wrong["sasl.jaas.config"].split('password="', 1)[1].split('"', 1)[0]
    group = unique("refused")
    props = {**connect_props(wrong), **internal_topics(group), "rest.port": "0", "sparklink.state.dir": str(tmp_path)}
    config = tmp_path / "worker.properties"
    config.touch(mode=0o600)
    config.write_text(javaproperties.dumps({k: str(v) for k, v in props.items()}, timestamp=False))
    command = [sys.executable, "-m", "sparklink.cli.main", "worker", str(config), "--log-level", "DEBUG"]
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    elapsed = time.monotonic() - started
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    bootstrap = secured_kafka.cluster.bootstrap("saslssl")
    assert f"sparklink worker cannot start: Kafka at {bootstrap} (SASL_SSL, SASL mechanism SCRAM-SHA-512)" in output
    assert "Check the username and password in sasl.jaas.config" in output
    assert elapsed < BOUND + 30, f"refused after {elapsed:.0f}s"  # the preflight's answer, plus Python's start
    assert "SparkContext" not in output  # refused before Spark started
    for secret in [*passwords(secured_kafka), wrong_password]:
        assert secret not in output
    # Nothing was created with the refused settings.
    admin = AdminClient(secured_kafka.settings(*SCRAM).librdkafka())
    assert f"{group}-configs" not in admin.list_topics(timeout=10).topics


# ------------------------------------------------------------------ a distributed group over SASL_SSL
@pytest.fixture(scope="module")
def scram_group(secured_kafka: SecuredKafka, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[WorkerProcess]]:
    name = unique("secured-dist")
    props: dict[str, Any] = {
        **connect_props(secured_kafka.properties(*SCRAM)),
        **internal_topics(name),
        "sparklink.worker.mode": "distributed",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 1000,
        "rebalance.timeout.ms": 120000,
        "scheduled.rebalance.max.delay.ms": 3000,
        "task.trigger.interval.ms": 500,
        "spark.master": "local[1]",
    }
    base = tmp_path_factory.mktemp(name)
    previous = os.environ.get("SPARKLINK_DRIVER_MEMORY")
    os.environ["SPARKLINK_DRIVER_MEMORY"] = "512m"  # two Spark JVMs on a shared 2-core machine
    workers = [WorkerProcess(dict(props), base / f"worker-{i}", log_level="INFO") for i in range(2)]
    errors: list[BaseException] = []

    def start(worker: WorkerProcess) -> None:
        try:
            worker.start(timeout=400)
        except BaseException as exc:  # reported once both starts have finished
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(w,)) for w in workers]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        yield workers
    finally:
        stop_all(workers)
        if previous is None:
            os.environ.pop("SPARKLINK_DRIVER_MEMORY", None)
        else:
            os.environ["SPARKLINK_DRIVER_MEMORY"] = previous


def test_kill_9_of_a_sasl_ssl_worker_moves_its_tasks_and_loses_no_record(
    scram_group: list[WorkerProcess], secured_kafka: SecuredKafka, tmp_path: Path
) -> None:
    first, second = scram_group
    topic, total = unique("sec-failover"), 600
    create_topic(secured_kafka.settings(*SCRAM), topic, partitions=2)
    sink_file = tmp_path / "sink" / "records.txt"
    sink_file.parent.mkdir()  # connectors write only into a directory that exists
    create(first.url, "fo-source", datagen(topic, total, tasks=2, rate=30))
    create(
        second.url, "fo-sink", {"connector.class": FILE_SINK, "file": str(sink_file), "topics": topic, "tasks.max": "2"}
    )
    bodies = [
        wait_for(functools.partial(running, first.url, n, 2), 300, f"{n} RUNNING") for n in ("fo-source", "fo-sink")
    ]
    owners = {t["worker_id"] for b in bodies for t in b["tasks"]}
    assert owners == {w.url.removeprefix("http://") for w in scram_group}, owners  # both workers run tasks
    wait_for(lambda: delivered(sink_file), 120, "records in the sink file")

    victim, survivor = first, second
    victim_id = victim.url.removeprefix("http://")
    victim.kill()

    def moved(name: str) -> bool:
        body = running(survivor.url, name, 2)
        return bool(body) and victim_id not in json.dumps(body)

    for name in ("fo-source", "fo-sink"):
        wait_for(functools.partial(moved, name), 300, f"{name} RUNNING on the survivor only")
    expected = {(task, seq) for task in range(2) for seq in range(total // 2)}
    wait_for(
        lambda: expected <= delivered(sink_file),
        300,
        f"all {total} records in the sink file",
        explain=lambda: sorted(expected - delivered(sink_file))[:10],
    )


# ------------------------------------------------------------------ MirrorMaker 2: SCRAM source, mTLS target
def test_mirror_maker_2_replicates_from_a_scram_cluster_to_a_mutual_tls_cluster(
    secured_kafka: SecuredKafka, secured_kafka_target: SecuredKafka, spark: Any, tmp_path: Path
) -> None:
    source_props, target_props = secured_kafka.properties(*SCRAM), secured_kafka_target.properties("mtls")
    source, target = (
        KafkaClientSettings.from_properties(source_props),
        KafkaClientSettings.from_properties(target_props),
    )
    alias, topic, group = unique("scram"), unique("events"), unique("app")
    create_topic(source, topic, 1)
    producer = Producer(source.librdkafka())
    for i in range(100):
        producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
    assert producer.flush(60) == 0
    consumer = Consumer(source.librdkafka(**{"group.id": group}))
    try:  # the application read 90 records on the source
        consumer.commit(offsets=[TopicPartition(topic, 0, 90)], asynchronous=False)
    finally:
        consumer.close()

    worker = in_process_worker(target_props, spark, tmp_path)  # Connect runs MirrorMaker 2 near its target
    base = {
        "source.cluster.alias": alias,
        "target.cluster.alias": "dst",
        **prefixed("source.cluster.", source_props),
        **prefixed("target.cluster.", target_props),
        "topics": topic,
        "groups": group,
        "replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1",
        "sync.topic.acls.enabled": "false",
        "emit.heartbeats.interval.seconds": "1",
        "emit.checkpoints.interval.seconds": "1",
        "refresh.groups.interval.seconds": "2",
        "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": "1",
    }
    names = {kind: unique(kind) for kind in ("source", "checkpoint", "heartbeat")}
    try:
        create(worker.url, names["source"], {**base, "connector.class": MIRROR + "MirrorSourceConnector"})
        create(worker.url, names["checkpoint"], {**base, "connector.class": MIRROR + "MirrorCheckpointConnector"})
        create(worker.url, names["heartbeat"], {**base, "connector.class": MIRROR + "MirrorHeartbeatConnector"})
        remote, checkpoint_topic = f"{alias}.{topic}", f"{alias}.checkpoints.internal"
        records = read_topic(target, remote, 100, timeout=240)
        assert sorted(r.value() for r in records) == sorted(f"v{i}".encode() for i in range(100))
        # Offset syncs on the source cluster (written with the source's SCRAM login).
        wait_for(lambda: topic_size(source, "mm2-offset-syncs.dst.internal") > 0, 60, "offset syncs on the source")
        cps = wait_for(
            lambda: topic_size(target, checkpoint_topic) > 0 and checkpoints(target, checkpoint_topic, group),
            120,
            "a checkpoint on the target",
        )
        assert (cps[0].topic, cps[0].upstream_offset) == (remote, 90)
        want = {(remote, 0): cps[0].downstream_offset}
        wait_for(lambda: committed(target, group, list(want)) == want, 90, "the group's offsets synced to the target")
        beats = wait_for(lambda: topic_size(target, "heartbeats"), 90, "heartbeats on the target")
        assert beats > 0
    finally:
        delete(worker.url, *names.values())
        worker.stop()
