"""MirrorSource tasks written by Spark's Kafka sink itself (execution/direct.py), in real-time mode or
in micro-batches: no Python per batch, offsets from query progress, offset syncs from the producer's
acknowledgements (jvm/interceptor/OffsetSyncInterceptor.java)."""

from __future__ import annotations

import itertools

import httpx
import pytest

from sparklink.connectors.mirror import formats
from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.assembly import RunningWorker
from sparklink.worker.execution.direct import last_progress
from sparklink.worker.execution.direct_run import DirectRun
from sparklink.worker.execution.run import TaskRun
from tests.conftest import WorkerFactory
from tests.helpers import read_topic, task_states, topic_size, unique, wait_for
from tests.it.mirror_fixtures import create_topic, mirror_config, produce, read_partitions

SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
SYNCS_TOPIC = "mm2-offset-syncs.dst.internal"


def _runs(worker: RunningWorker, connector: str) -> list[TaskRun]:
    return sorted((r for r in worker.worker.tasks.runs() if r.connector == connector), key=lambda r: r.task_id)


def _stored(worker: RunningWorker, connector: str) -> dict[tuple[str, int], int]:
    offsets = httpx.get(f"{worker.url}/connectors/{connector}/offsets", timeout=30).json()["offsets"]
    return {(o["partition"]["topic"], o["partition"]["partition"]): o["offset"]["offset"] for o in offsets}


def _syncs(kafka: KafkaCluster, topic: str) -> list[formats.OffsetSync]:
    records = read_topic(kafka.bootstrap_servers, SYNCS_TOPIC, 1)
    return [s for s in (formats.decode_offset_sync(m.key(), m.value()) for m in records) if s.topic == topic]


@pytest.mark.parametrize("realtime", [True, False], ids=["real-time", "micro-batch"])
def test_a_mirror_task_writes_through_sparks_kafka_sink_and_its_offsets_and_syncs_are_facts(
    kafka: KafkaCluster, target_kafka: KafkaCluster, worker_factory: WorkerFactory, realtime: bool
) -> None:
    alias, topic = unique("src"), unique("direct")
    create_topic(kafka, topic, 1)
    produce(
        kafka,
        topic,
        [{"key": f"k{i}".encode(), "value": f"v{i}".encode(), "headers": [("h", b"x")]} for i in range(250)],
    )
    # Real-time batches of Spark's minimum, so that one ends (and posts its progress) within the test.
    worker = worker_factory(
        **{"bootstrap.servers": target_kafka.bootstrap_servers, "task.realtime.batch.interval.ms": "5000"}
    )
    config = {
        **mirror_config(kafka, target_kafka, alias, topics=topic),
        "connector.class": SOURCE,
        "offset.lag.max": "40",
        "sparklink.realtime": str(realtime).lower(),
    }
    response = httpx.post(f"{worker.url}/connectors", json={"name": "mm", "config": config}, timeout=60)
    assert response.status_code == 201, response.text
    wait_for(lambda: task_states(worker.url, "mm") == ["RUNNING"], 60, "the task RUNNING")
    (run,) = _runs(worker, "mm")
    assert isinstance(run, DirectRun) and run.ctx.realtime is realtime

    remote = f"{alias}.{topic}"
    want = read_partitions(kafka, topic, 250)
    assert read_partitions(target_kafka, remote, 250) == want  # the carrier headers never reach the target
    wait_for(lambda: _stored(worker, "mm").get((topic, 0)) == 249, 60, "offset 249 stored")
    # Spark's Kafka sink writes the batches: no foreachBatch, so Python is never called per batch.
    assert run.query is not None
    progress = wait_for(lambda: last_progress(run.query), 60, "a progress event")
    assert "kafka010" in progress["sink"]["description"] and "ForeachBatch" not in progress["sink"]["description"]

    # Every sync pairs an upstream record with the downstream offset that holds the same record, one
    # at least every offset.lag.max + 1 records, and the last record is synced (promoted when delayed).
    got = read_partitions(target_kafka, remote, 250)
    wait_for(lambda: any(s.upstream_offset == 249 for s in _syncs(kafka, topic)), 30, "a sync of the last record")
    syncs = _syncs(kafka, topic)
    for s in syncs:
        assert want[0][s.upstream_offset] == got[0][s.downstream_offset]
    upstream = sorted({s.upstream_offset for s in syncs})
    assert upstream[0] == 0 and all(b - a <= 41 for a, b in itertools.pairwise(upstream))

    # Stopped and resumed: the task goes on from its stored offset.
    assert httpx.put(f"{worker.url}/connectors/mm/stop", timeout=60).status_code == 204
    wait_for(lambda: not _runs(worker, "mm"), 60, "the task stopped")
    produce(kafka, topic, [{"key": b"k", "value": f"later{i}".encode()} for i in range(30)])
    assert httpx.put(f"{worker.url}/connectors/mm/resume", timeout=60).status_code == 202
    wait_for(lambda: _stored(worker, "mm").get((topic, 0)) == 279, 90, "offset 279 stored after the resume")
    mirrored = [r[1] for r in read_partitions(target_kafka, remote, 280)[0]]
    assert set(mirrored) == {r[1] for r in read_partitions(kafka, topic, 280)[0]}  # nothing lost
    if not realtime:
        # A micro-batch query is stopped between batches and its last progress stored: no repeats.
        assert len(mirrored) == 280


def test_real_time_mode_takes_only_free_spark_task_slots_and_gives_them_back(
    kafka: KafkaCluster, target_kafka: KafkaCluster, worker_factory: WorkerFactory
) -> None:
    alias, topic = unique("src"), unique("slots")
    create_topic(kafka, topic, 2)
    produce(kafka, topic, [{"partition": i % 2, "value": str(i).encode()} for i in range(40)])
    worker = worker_factory(**{"bootstrap.servers": target_kafka.bootstrap_servers})
    slots = worker.spark.sparkContext.defaultParallelism
    config = {**mirror_config(kafka, target_kafka, alias, topics=topic), "connector.class": SOURCE}
    config["sparklink.realtime"] = "true"
    config["tasks.max"] = str(slots)  # one partition per task, more tasks than free slots
    response = httpx.post(f"{worker.url}/connectors", json={"name": "mm", "config": config}, timeout=60)
    assert response.status_code == 201, response.text
    wait_for(lambda: task_states(worker.url, "mm") == ["RUNNING", "RUNNING"], 60, "both tasks RUNNING")
    runs = _runs(worker, "mm")
    # One slot is kept for micro-batch queries, so a 2-slot worker runs one task in real time.
    assert sum(r.ctx.realtime for r in runs) == min(2, slots - 1)
    assert all(isinstance(r, DirectRun) for r in runs)
    assert read_partitions(target_kafka, f"{alias}.{topic}", 40) == read_partitions(kafka, topic, 40)

    assert httpx.delete(f"{worker.url}/connectors/mm", timeout=60).status_code == 204
    wait_for(lambda: not _runs(worker, "mm"), 60, "the tasks stopped")
    assert worker.worker.tasks.services.slots.held == 0


def test_a_real_time_task_stopped_mid_batch_stores_what_its_producer_acknowledged(
    kafka: KafkaCluster, target_kafka: KafkaCluster, worker_factory: WorkerFactory
) -> None:
    alias, topic = unique("src"), unique("midbatch")
    create_topic(kafka, topic, 1)
    produce(kafka, topic, [{"key": f"k{i}".encode(), "value": f"v{i}".encode()} for i in range(200)])
    # Batches far longer than the test: the query posts no progress, so only the producer's
    # acknowledgements (AcknowledgedOffsets) can say where the task stands, while it runs (every
    # offset.flush.interval.ms) and when it stops.
    worker = worker_factory(
        **{
            "bootstrap.servers": target_kafka.bootstrap_servers,
            "task.realtime.batch.interval.ms": "600000",
            "offset.flush.interval.ms": "500",
        }
    )
    config = {
        **mirror_config(kafka, target_kafka, alias, topics=topic),
        "connector.class": SOURCE,
        "sparklink.realtime": "true",
    }
    response = httpx.post(f"{worker.url}/connectors", json={"name": "mm", "config": config}, timeout=60)
    assert response.status_code == 201, response.text
    wait_for(lambda: task_states(worker.url, "mm") == ["RUNNING"], 60, "the task RUNNING")
    (run,) = _runs(worker, "mm")
    assert run.ctx.realtime and run.query is not None
    remote = f"{alias}.{topic}"
    assert read_partitions(target_kafka, remote, 200) == read_partitions(kafka, topic, 200)
    wait_for(lambda: _stored(worker, "mm") == {(topic, 0): 199}, 30, "offset 199 stored while the task runs")
    # Counted and reported as they were acknowledged, not at the batch end ten minutes away.
    wait_for(lambda: run.records == 200, 30, "the 200 records counted mid-batch")
    active = httpx.get(f"{worker.url}/connectors/mm/topics", timeout=30).json()
    assert remote in active["mm"]["topics"]
    assert last_progress(run.query) is None  # mid-batch: nothing came from progress

    assert httpx.put(f"{worker.url}/connectors/mm/stop", timeout=60).status_code == 204
    wait_for(lambda: not _runs(worker, "mm"), 60, "the task stopped")
    assert _stored(worker, "mm") == {(topic, 0): 199}

    produce(kafka, topic, [{"key": b"k", "value": f"later{i}".encode()} for i in range(30)])
    assert httpx.put(f"{worker.url}/connectors/mm/resume", timeout=60).status_code == 202
    wait_for(lambda: topic_size(target_kafka.bootstrap_servers, remote) >= 230, 90, "the later records mirrored")
    assert httpx.put(f"{worker.url}/connectors/mm/stop", timeout=60).status_code == 204
    wait_for(lambda: not _runs(worker, "mm"), 60, "the task stopped again")
    assert _stored(worker, "mm") == {(topic, 0): 229}
    # The resume began where the acknowledgements said: nothing lost, nothing written twice.
    assert topic_size(target_kafka.bootstrap_servers, remote) == 230
    assert read_partitions(target_kafka, remote, 230) == read_partitions(kafka, topic, 230)
