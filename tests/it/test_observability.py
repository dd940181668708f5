"""A worker's /metrics against Strimzi's Connect and MirrorMaker 2 dashboards and alert rules (issue 31).

One worker runs what a Connect cluster watched through Strimzi's dashboards runs: a datagen source, a
file sink with a poison record, errors.tolerance=all and a dead letter queue, a file sink that fails, and
MirrorMaker 2's source and checkpoint connectors between the test clusters. Every metric name Strimzi's
Connect and MM2 dashboards and alert rules query (read from Strimzi's own files, tests/data/strimzi)
must be on /metrics, under the labels Strimzi's exporter rules give, with values that match what
happened: the records counted, the failed task, the dead letter, a sink's lag growing while it is
paused and falling after it resumes, MirrorMaker's replication latency.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer
from prometheus_client.parser import text_string_to_metric_families

from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.assembly import RunningWorker, start_worker
from sparklink.worker.config import WorkerConfig
from tests.conftest import worker_props
from tests.helpers import create_topic, status, task_states, topic_size, unique, wait_for
from tests.it.mirror_fixtures import commit, mirror_config, produce
from tests.it.mirror_fixtures import create_topic as create_mirrored_topic
from tests.support import strimzi_metrics

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

GENERATED = 300
MIRRORED = 100
JSON = {"value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false"}
SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
CHECKPOINT = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"

Sample = tuple[str, dict[str, str], float]


@dataclass(frozen=True)
class Observed:
    worker: RunningWorker
    topic: str
    dlq: str
    mirrored: str
    group: str
    alias: str

    @property
    def mirror(self) -> str:
        return f"{self.alias}->dst.MirrorSourceConnector"

    @property
    def checkpoint(self) -> str:
        return f"{self.alias}->dst.MirrorCheckpointConnector"


def scrape(url: str) -> list[Sample]:
    """Every series of /metrics, through Prometheus' own parser of the text format."""
    text = httpx.get(f"{url}/metrics", timeout=120).text
    return [(s.name, dict(s.labels), s.value) for f in text_string_to_metric_families(text) for s in f.samples]


def values(samples: list[Sample], name: str, **labels: str) -> list[float]:
    return [v for n, ls, v in samples if n == name and all(ls.get(k) == want for k, want in labels.items())]


def one(samples: list[Sample], name: str, **labels: str) -> float:
    found = values(samples, name, **labels)
    assert len(found) == 1, (name, labels, found)
    return found[0]


def quoted(name: str) -> str:
    """A connector name as Kafka's JMX reporter writes it into an MBean name (and so into the label)."""
    return f'"{name}"'


def running(url: str, name: str) -> bool:
    """The connector's tasks all RUNNING. A task that Spark could not start because its Python worker did
    not connect back in time (Spark waits 10 s; this machine is shared and often loaded) after the
    runtime's own retries is restarted: that failure is the machine's, not what this module tests."""
    tasks = status(url, name)["tasks"]
    if any(t["state"] == "FAILED" and "Python worker failed to connect back" in t.get("trace", "") for t in tasks):
        httpx.post(f"{url}/connectors/{name}/restart?includeTasks=true&onlyFailed=true", timeout=60)
        return False
    return bool(tasks) and all(t["state"] == "RUNNING" for t in tasks)


def _post(url: str, name: str, config: dict[str, str]) -> None:
    # A create answers once the connector has started (MirrorMaker's make admin calls): generous on a busy machine.
    response = httpx.post(f"{url}/connectors", json={"name": name, "config": config}, timeout=240)
    assert response.status_code == 201, response.text


@pytest.fixture(scope="module")
def observed(
    kafka: KafkaCluster, target_kafka: KafkaCluster, spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Observed]:
    group = unique("observed")
    tmp = tmp_path_factory.mktemp(group)
    worker = start_worker(WorkerConfig.model_validate(worker_props(kafka, group, tmp / "state")), spark=spark)
    try:
        setup = Observed(worker, unique("gen"), unique("dlq"), unique("mirrored"), unique("app"), unique("obs"))
        bootstrap = kafka.bootstrap_servers
        create_topic(bootstrap, setup.topic, partitions=2)
        producer = Producer({"bootstrap.servers": bootstrap})
        producer.produce(setup.topic, value=b"{not json", partition=1)  # the poison record
        assert producer.flush(30) == 0

        create_mirrored_topic(kafka, setup.mirrored, 1)
        produce(kafka, setup.mirrored, [{"value": f"m{i}".encode()} for i in range(MIRRORED)])
        commit(kafka, setup.group, {(setup.mirrored, 0): MIRRORED - 10})

        _post(
            worker.url,
            "gen",
            {
                "connector.class": "datagen",
                "topic": setup.topic,
                "tasks.max": "2",
                "records.per.second": "100",
                "total.records": str(GENERATED),
                "sparklink.realtime": "false",
            },
        )
        sink = {"connector.class": "FileStreamSink", "topics": setup.topic, "file": str(tmp / "out.txt"), **JSON}
        _post(
            worker.url,
            "sink",
            {
                **sink,
                "errors.tolerance": "all",
                "errors.log.enable": "true",
                "errors.deadletterqueue.topic.name": setup.dlq,
                "errors.deadletterqueue.topic.replication.factor": "1",
            },
        )
        # A full disk (/dev/full refuses every write): the broken sink's task fails on its first batch.
        _post(worker.url, "broken", {**sink, "file": "/dev/full"})
        base = mirror_config(kafka, target_kafka, setup.alias, topics=setup.mirrored, **{"sparklink.realtime": "false"})
        _post(worker.url, setup.mirror, {**base, "connector.class": SOURCE})
        checkpoint = {
            **base,
            "connector.class": CHECKPOINT,
            "groups": setup.group,
            "emit.checkpoints.interval.seconds": "1",
            "refresh.groups.interval.seconds": "2",
        }
        _post(worker.url, setup.checkpoint, checkpoint)
        for name in ("gen", "sink", setup.mirror, setup.checkpoint):
            wait_for(lambda n=name: running(worker.url, n), 240, f"{name} RUNNING")
        wait_for(lambda: task_states(worker.url, "broken") == ["FAILED"], 120, "the broken sink's task FAILED")
        yield setup
    finally:
        worker.stop()


def test_every_metric_strimzis_connect_and_mm2_dashboards_and_alerts_query_is_served(observed: Observed) -> None:
    queried = strimzi_metrics.queried_names(
        [
            strimzi_metrics.CONNECT_DASHBOARD,
            strimzi_metrics.CONNECT_ALERTS,
            strimzi_metrics.MM2_DASHBOARD,
            strimzi_metrics.MM2_ALERTS,
        ]
    )
    # cAdvisor's series (the kubelet's, about the container) are all a worker cannot serve.
    expected = {n for n in queried if not n.startswith("container_")}
    assert len(expected) > 30 and "kafka_connect_worker_connector_failed_task_count" in expected

    def missing() -> set[str]:
        running(observed.worker.url, observed.checkpoint)  # restarted if the machine failed its start
        return expected - {name for name, _, _ in scrape(observed.worker.url)}

    # The checkpoint's and the mirror's series appear once their first records are through.
    wait_for(lambda: not missing(), 300, "every queried metric on /metrics", explain=missing)


def test_records_are_counted_where_they_were_moved(observed: Observed) -> None:
    url, mirror = observed.worker.url, quoted(observed.mirror)

    def counted() -> tuple[float, float, float, float]:
        samples = scrape(url)
        return (
            sum(values(samples, "kafka_connect_source_task_source_record_write_total", connector="gen")),
            one(samples, "kafka_connect_sink_task_sink_record_read_total", connector="sink", task="0"),
            one(samples, "kafka_connect_sink_task_sink_record_send_total", connector="sink", task="0"),
            sum(
                values(
                    samples,
                    "kafka_connect_mirror_mirrorsourceconnector_record_count",
                    topic=f"{observed.alias}.{observed.mirrored}",
                )
            ),
        )

    # The generated records, the poison one read and not sent, and every mirrored record.
    want = (GENERATED, GENERATED + 1, GENERATED, MIRRORED)
    wait_for(lambda: counted() == want, 180, "the records counted", explain=counted)
    samples = scrape(url)
    assert len(values(samples, "kafka_connect_source_task_source_record_write_total", connector="gen")) == 2
    assert one(samples, "kafka_connect_connector_status", connector="gen", status="running") == 1.0
    assert one(samples, "kafka_connect_connector_task_status", connector=mirror, task="0", status="running") == 1.0
    assert one(samples, "kafka_connect_connector_connector_class", connector="gen", connector_class="datagen") == 1.0
    assert one(samples, "kafka_connect_worker_connector_count") == 5.0
    # Spark's side of each task beside Connect's.
    (trigger,) = [
        ls["trigger"]
        for n, ls, _ in samples
        if n == "sparklink_task_query_info" and ls["connector"] == "gen" and ls["task"] == "0"
    ]
    assert trigger == "ProcessingTime(300 milliseconds)"
    assert values(samples, "sparklink_task_query_processed_rows_per_second", connector="gen", task="0")


def test_the_failed_task_and_the_dead_letter_are_counted(observed: Observed) -> None:
    url = observed.worker.url

    def errors() -> tuple[float, ...]:
        samples = scrape(url)
        return (
            one(samples, "kafka_connect_task_error_total_record_errors", connector="sink", task="0"),
            one(samples, "kafka_connect_task_error_total_records_skipped", connector="sink", task="0"),
            one(samples, "kafka_connect_task_error_total_errors_logged", connector="sink", task="0"),
            one(samples, "kafka_connect_task_error_deadletterqueue_produce_requests", connector="sink", task="0"),
            one(samples, "kafka_connect_task_error_deadletterqueue_produce_failures", connector="sink", task="0"),
        )

    wait_for(lambda: errors() == (1, 1, 1, 1, 0), 120, "the poison record counted", explain=errors)
    assert topic_size(observed.worker.config.bootstrap_servers, observed.dlq) == 1
    samples = scrape(url)
    assert one(samples, "kafka_connect_worker_connector_failed_task_count", connector="broken") == 1.0
    assert one(samples, "kafka_connect_worker_connector_failed_task_count", connector="sink") == 0.0
    assert one(samples, "kafka_connect_connector_task_status", connector="broken", task="0", status="failed") == 1.0
    # The alert rules' expressions, on these series: a failed task fires ConnectFailedTask, no connector failed.
    assert sum(values(samples, "kafka_connect_worker_connector_failed_task_count")) == 1.0
    assert sum(values(samples, "kafka_connect_connector_status", status="failed")) == 0.0
    assert status(url, "broken")["tasks"][0]["state"] == "FAILED"


def test_a_paused_sinks_lag_grows_and_falls_after_it_resumes(observed: Observed) -> None:
    url = observed.worker.url

    def lag() -> float:
        return one(scrape(url), "kafka_connect_sink_task_sink_record_lag_max", connector="sink", task="0")

    wait_for(lambda: lag() == 0.0, 120, "the sink caught up", explain=lag)
    assert httpx.put(f"{url}/connectors/sink/pause", timeout=60).status_code == 202
    wait_for(lambda: task_states(url, "sink") == ["PAUSED"], 60, "the sink PAUSED")
    producer = Producer({"bootstrap.servers": observed.worker.config.bootstrap_servers})
    for i in range(50):
        producer.produce(observed.topic, value=json.dumps({"late": i}).encode(), partition=0)
    assert producer.flush(30) == 0
    assert wait_for(lambda: lag() >= 50.0, 60, "the lag to grow while paused", explain=lag)
    samples = scrape(url)
    assert one(samples, "kafka_connect_connector_task_status", connector="sink", task="0", status="paused") == 1.0
    assert one(samples, "kafka_connect_worker_connector_paused_task_count", connector="sink") == 1.0

    assert httpx.put(f"{url}/connectors/sink/resume", timeout=60).status_code == 202
    wait_for(lambda: lag() == 0.0, 120, "the lag to fall after resume", explain=lag)


def test_mirror_makers_replication_latency_is_measured_per_partition(observed: Observed, kafka: KafkaCluster) -> None:
    url, remote = observed.worker.url, f"{observed.alias}.{observed.mirrored}"
    labels = {"source": observed.alias, "target": "dst", "topic": remote, "partition": "0"}

    def count() -> float:
        return one(scrape(url), "kafka_connect_mirror_mirrorsourceconnector_record_count", **labels)

    wait_for(lambda: count() >= MIRRORED, 120, "the first records replicated", explain=count)
    # Fresh records, stamped as they are produced: their latency is the replication's alone.
    produce(kafka, observed.mirrored, [{"value": f"fresh{i}".encode()} for i in range(MIRRORED)])
    wait_for(lambda: count() >= 2 * MIRRORED, 120, "the fresh records replicated", explain=count)
    samples = scrape(url)
    latency = one(samples, "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms", **labels)
    low = one(samples, "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_min", **labels)
    high = one(samples, "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_max", **labels)
    mean = one(samples, "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_avg", **labels)
    # The last record's latency: one micro-batch trigger and a write on a busy machine, well under 10 s
    # (bench.mirror_latency measures tens of milliseconds at the 99th percentile on a quiet one).
    assert 0 <= latency < 10_000
    assert 0 <= low <= mean <= high and not math.isnan(mean)
    age = one(samples, "kafka_connect_mirror_mirrorsourceconnector_record_age_ms", **labels)
    assert 0 <= age <= latency + 1_000  # a record is polled before it is acknowledged
    assert one(samples, "kafka_connect_mirror_mirrorsourceconnector_byte_count", **labels) > 0
    # The producer of the MirrorSource task, found as the MM2 dashboard finds it (its client id).
    dashboard = re.compile(r'".*SourceConnector-[0-9]+"')
    buffers = [ls["clientid"] for n, ls, _ in samples if n == "kafka_producer_buffer_available_bytes"]
    assert any(dashboard.fullmatch(c) for c in buffers), buffers
    checkpoint = {"source": observed.alias, "target": "dst", "group": observed.group, "topic": remote, "partition": "0"}
    assert one(samples, "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms", **checkpoint) >= 0


def test_the_worker_reports_no_rebalance_standalone(observed: Observed) -> None:
    samples = scrape(observed.worker.url)
    assert one(samples, "kafka_connect_worker_rebalance_rebalancing") == 0.0
    assert one(samples, "kafka_connect_worker_rebalance_completed_rebalances_total") == 0.0
    assert one(samples, "kafka_connect_coordinator_assigned_connectors") == 5.0
