"""A Kafka outage under a running datagen -> file sink pipeline on a standalone worker: the broker is stopped
for 30 s, both tasks come back RUNNING by themselves once it returns, and every record arrives.

The module runs its own one-node cluster (the session broker is shared and must stay up); the node
keeps its port across the stop, so every client reconnects to the same address.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka.admin import AdminClient

from sparklink.clients.admin import RenewingAdmin
from sparklink.clients.group_offsets import committed_offsets
from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.assembly import RunningWorker, start_worker
from sparklink.worker.config import WorkerConfig
from sparklink.worker.execution import outages
from tests.conftest import worker_props
from tests.helpers import status, task_states, topic_size, unique, wait_for
from tests.support.kafka import kafka_cluster

OUTAGE_S = 30.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[KafkaCluster]:
    """The module's own one-broker cluster, small (a quarter-GiB heap); destroyed with its files afterwards."""
    with kafka_cluster("sparklink-outage-kafka-", heap="256m") as kafka:
        yield kafka


@pytest.fixture
def outage_worker(cluster: KafkaCluster, spark: Any, tmp_path: Path) -> Iterator[RunningWorker]:
    group = unique("outage")
    runtime = start_worker(WorkerConfig.model_validate(worker_props(cluster, group, tmp_path / "state")), spark=spark)
    yield runtime
    runtime.stop()


def sink_records(path: Path) -> set[tuple[int, int]]:
    if not path.exists():
        return set()
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {(r["task"], r["seq"]) for r in lines}


def generated(url: str) -> dict[int, int]:
    offsets = httpx.get(f"{url}/connectors/gen/offsets", timeout=30).json()["offsets"]
    return {o["partition"]["task"]: o["offset"]["position"] for o in offsets}


def sink_committed(url: str) -> int:
    offsets = httpx.get(f"{url}/connectors/sink/offsets", timeout=30).json()["offsets"]
    return sum(int(o["offset"]["kafka_offset"]) for o in offsets)


def states(url: str) -> dict[str, list[str]]:
    return {name: task_states(url, name) for name in ("gen", "sink")}


def test_the_jvm_knows_which_kafka_errors_are_retriable(spark: Any) -> None:
    classifier = outages.Classifier.on_jvm(spark.sparkContext._jvm)
    trace = "Caused by: org.apache.kafka.common.errors.NotLeaderOrFollowerException: moved\n"
    assert classifier.in_trace(trace) == "org.apache.kafka.common.errors.NotLeaderOrFollowerException: moved"
    assert classifier.in_trace("org.apache.kafka.common.errors.RecordTooLargeException: big") is None
    assert classifier.in_trace("java.lang.IllegalStateException: no") is None


def test_an_admin_request_unanswered_while_the_broker_is_down_gets_the_next_request_a_new_client(
    cluster: KafkaCluster,
) -> None:
    made: list[AdminClient] = []

    def counting(config: dict[str, Any]) -> AdminClient:
        made.append(AdminClient(config))
        return made[-1]

    admin = RenewingAdmin(KafkaClientSettings(cluster.bootstrap_servers).librdkafka(), factory=counting)
    group = unique("renew")
    with admin.request() as client:
        client.list_topics(timeout=30)
    (node,) = cluster.nodes
    cluster.stop_node(node.node_id)
    try:
        with pytest.raises(TimeoutError), admin.request() as client:
            client.describe_consumer_groups([group])[group].result(3)
    finally:
        cluster.restart_node(node.node_id)

    answering: list[AdminClient] = []

    def answered() -> bool:
        try:
            assert committed_offsets(admin, group, 10) == {}
            answering.append(admin.client())
        except TimeoutError:
            return False  # no answer yet: that client is dropped too, and the next try makes another
        return True

    wait_for(answered, 60, "an answer to a consumer-group request after the broker's restart")
    assert answering[0] is not made[0], "the client whose request went unanswered was kept"


def test_a_30_s_broker_stop_leaves_both_tasks_running_and_loses_nothing(
    cluster: KafkaCluster, outage_worker: RunningWorker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="sparklink.worker.execution")
    url, topic, out = outage_worker.url, unique("outage"), tmp_path / "sink.txt"
    source = {"connector.class": "datagen", "topic": topic, "records.per.second": "50", "tasks.max": "1"}
    sink = {"connector.class": "FileStreamSink", "topics": topic, "file": str(out)}
    assert httpx.post(f"{url}/connectors", json={"name": "gen", "config": source}, timeout=120).status_code == 201
    wait_for(lambda: httpx.get(f"{url}/connectors/gen/topics", timeout=5).json()["gen"]["topics"], 120, "the topic")
    assert httpx.post(f"{url}/connectors", json={"name": "sink", "config": sink}, timeout=120).status_code == 201
    wait_for(lambda: len(sink_records(out)) > 50, 180, "records reaching the sink", explain=lambda: states(url))

    (node,) = cluster.nodes
    cluster.stop_node(node.node_id)
    # The outage itself lasts 30 s (the scenario, not a wait for a result); every status read during
    # it must not say FAILED (a task waiting for its restart stays RUNNING, as a Connect task does
    # while its clients retry).
    back_at = time.monotonic() + OUTAGE_S

    def outage_over() -> bool:
        now = states(url)
        assert "FAILED" not in now["gen"] + now["sink"], now
        return time.monotonic() >= back_at

    wait_for(outage_over, OUTAGE_S + 60, "the end of the 30 s outage", interval=1.0)
    cluster.restart_node(node.node_id)

    # Back by themselves: nobody restarts anything; the generator moves on from where it stood.
    before = generated(url)
    wait_for(
        lambda: states(url) == {"gen": ["RUNNING"], "sink": ["RUNNING"]} and generated(url)[0] > before[0] + 100,
        300,
        "both tasks RUNNING and the generator producing again",
        explain=lambda: (states(url), status(url, "gen"), status(url, "sink")),
    )
    assert httpx.put(f"{url}/connectors/gen/stop", timeout=60).status_code == 204
    final = generated(url)
    expected = {(task, seq) for task, end in final.items() for seq in range(end)}
    wait_for(
        lambda: sink_records(out) >= expected,
        300,
        f"all {len(expected)} generated records in the sink file",
        explain=lambda: (len(expected - sink_records(out)), states(url)),
    )
    assert status(url, "sink")["tasks"][0]["state"] == "RUNNING"
    # And the sink commits again: its group's offsets reach the end of the topic (the generator is stopped).
    end = topic_size(cluster.bootstrap_servers, topic)
    wait_for(
        lambda: sink_committed(url) == end,
        120,
        "the sink's committed offsets at the end of the topic",
        explain=lambda: (sink_committed(url), end),
    )
    restarts = [r.getMessage() for r in caplog.records if "Kafka is unavailable" in r.getMessage()]
    print(f"outage restarts logged: {len(restarts)}", *restarts[:5], sep="\n")
