"""The first pipeline through the real stack: REST -> herder -> Spark query -> Spark's Kafka sink."""

from __future__ import annotations

import json

import httpx
from prometheus_client.parser import text_string_to_metric_families

from sparklink import __version__
from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.assembly import RunningWorker
from tests.conftest import WorkerFactory
from tests.helpers import read_topic, status, task_states, topic_size, unique, wait_for


def datagen(topic: str, **extra: str) -> dict[str, str]:
    return {"connector.class": "datagen", "topic": topic, "records.per.second": "200", **extra}


def test_datagen_connector_writes_the_expected_records(kafka: KafkaCluster, worker_factory: WorkerFactory) -> None:
    worker = worker_factory()
    topic = unique("gen")
    body = {"name": "gen", "config": datagen(topic, **{"total.records": "300", "tasks.max": "2"})}
    response = httpx.post(f"{worker.url}/connectors", json=body, timeout=60)
    assert response.status_code == 201
    assert response.headers["location"] == f"{worker.url}/connectors/gen"
    info = response.json()
    assert info["name"] == "gen" and info["type"] == "source"
    assert info["config"]["name"] == "gen"

    wait_for(lambda: task_states(worker.url, "gen") == ["RUNNING", "RUNNING"], 60, "both tasks RUNNING")
    records = read_topic(kafka.bootstrap_servers, topic, 300)
    seen = {(json.loads(r.value())["task"], json.loads(r.value())["seq"]) for r in records}
    # 300 records split over two tasks: task 0 and task 1 each number theirs 0..149.
    assert seen == {(t, s) for t in (0, 1) for s in range(150)}
    assert {r.key().decode() for r in records} == {f"{t}-{s}" for t, s in seen}
    state = status(worker.url, "gen")
    assert state["connector"] == {"state": "RUNNING", "worker_id": worker.herder.worker_id, "version": __version__}
    assert httpx.get(f"{worker.url}/connectors", timeout=10).json() == ["gen"]
    assert httpx.get(f"{worker.url}/connectors/gen/config", timeout=10).json()["topic"] == topic
    tasks = httpx.get(f"{worker.url}/connectors/gen/tasks", timeout=10).json()
    assert [t["id"] for t in tasks] == [{"connector": "gen", "task": 0}, {"connector": "gen", "task": 1}]
    assert all(t["config"]["task.class"].endswith("DatagenTask") for t in tasks)

    metrics = httpx.get(f"{worker.url}/metrics", timeout=10).text
    assert 'sparklink_connector_state{connector="gen",state="RUNNING"} 1.0' in metrics

    # A batch's records are counted when Spark reports the batch's progress, which can come after its
    # records are already readable: wait for the count rather than read it once.
    def records_counted() -> bool:
        text = httpx.get(f"{worker.url}/metrics", timeout=10).text
        moved = [line for line in text.splitlines() if line.startswith('sparklink_task_records_total{connector="gen"')]
        return len(moved) == 2 and sum(float(line.split()[-1]) for line in moved) >= 300

    wait_for(records_counted, 60, "both tasks' records counted in /metrics")


def test_a_failing_task_is_failed_with_its_trace_while_siblings_run(worker_factory: WorkerFactory) -> None:
    worker = worker_factory()
    topic = unique("failing")
    config = datagen(topic, **{"tasks.max": "3", "fail.after.records": "20", "fail.task": "1"})
    assert httpx.post(f"{worker.url}/connectors", json={"name": "f", "config": config}, timeout=60).status_code == 201

    failed = wait_for(
        lambda: [t for t in status(worker.url, "f")["tasks"] if t["state"] == "FAILED"], 90, "task 1 to fail"
    )
    assert [t["id"] for t in failed] == [1]
    assert "datagen task 1 failing at seq 20" in failed[0]["trace"]
    task_status = httpx.get(f"{worker.url}/connectors/f/tasks/1/status", timeout=10).json()
    assert task_status["state"] == "FAILED" and "fail.after.records" in task_status["trace"]
    # The siblings keep producing after the failure.
    positions = {p["task"]: o["position"] for p, o in worker.stores.offsets.get("f")}
    wait_for(
        lambda: all(
            o["position"] > positions.get(p["task"], 0) for p, o in worker.stores.offsets.get("f") if p["task"] != 1
        ),
        60,
        "tasks 0 and 2 to keep advancing",
    )
    states = status(worker.url, "f")
    assert states["connector"]["state"] == "RUNNING"
    assert [t["state"] for t in states["tasks"]] == ["RUNNING", "FAILED", "RUNNING"]


def test_restarted_worker_lists_and_resumes_its_connectors(kafka: KafkaCluster, worker_factory: WorkerFactory) -> None:
    group = unique("restart")
    first = worker_factory(group)
    topic = unique("resume")
    config = datagen(topic, **{"total.records": "400", "records.per.second": "50"})
    assert httpx.post(f"{first.url}/connectors", json={"name": "r", "config": config}, timeout=60).status_code == 201
    wait_for(lambda: 0 < _position(first) < 400, 60, "some records written")
    first.stop()
    stopped_at = _stored_position(kafka, group)

    second = worker_factory(group)
    assert httpx.get(f"{second.url}/connectors", timeout=10).json() == ["r"]
    assert httpx.get(f"{second.url}/connectors/r/config", timeout=10).json() == {**config, "name": "r"}
    wait_for(lambda: task_states(second.url, "r") == ["RUNNING"], 60, "the task to run again")
    records = read_topic(kafka.bootstrap_servers, topic, 400, timeout=90)
    seqs = [json.loads(r.value())["seq"] for r in records]
    # Nothing lost, and it resumed from the stored offset rather than starting over.
    assert set(seqs) == set(range(400))
    assert len(seqs) - 400 < stopped_at, "the resumed task regenerated what was already committed"
    assert wait_for(lambda: _position(second) == 400, 30, "the final offset")


def _position(worker: RunningWorker) -> int:
    offsets = worker.stores.offsets.get("r")
    return int(offsets[0][1]["position"]) if offsets else 0


def _stored_position(kafka: KafkaCluster, group: str) -> int:
    from sparklink.worker.storage.backend import KafkaBackend
    from sparklink.worker.storage.kafka_log import KafkaLog
    from sparklink.worker.storage.offsets import OffsetStore

    store = OffsetStore(KafkaBackend(KafkaLog(KafkaClientSettings(kafka.bootstrap_servers), f"{group}-offsets")))
    store.start()
    try:
        return int(store.get("r")[0][1]["position"])
    finally:
        store.stop()


def test_restarted_worker_restores_target_states(worker_factory: WorkerFactory) -> None:
    group = unique("states")
    first = worker_factory(group)
    for name, state in (("p", "PAUSED"), ("s", "STOPPED")):
        body = {"name": name, "config": datagen(unique(name)), "initial_state": state}
        assert httpx.post(f"{first.url}/connectors", json=body, timeout=60).status_code == 201
    body = {"name": "r", "config": datagen(unique("r"), **{"tasks.max": "2"})}
    assert httpx.post(f"{first.url}/connectors", json=body, timeout=60).status_code == 201
    assert httpx.put(f"{first.url}/connectors/r/pause", timeout=60).status_code == 202
    first.stop()

    second = worker_factory(group)
    assert sorted(httpx.get(f"{second.url}/connectors", timeout=10).json()) == ["p", "r", "s"]
    assert status(second.url, "p")["connector"]["state"] == "PAUSED" and status(second.url, "p")["tasks"] == []
    assert status(second.url, "s")["connector"]["state"] == "STOPPED" and status(second.url, "s")["tasks"] == []
    assert task_states(second.url, "r") == ["PAUSED", "PAUSED"]
    assert len(httpx.get(f"{second.url}/connectors/r/tasks", timeout=10).json()) == 2


def test_a_source_batch_is_one_spark_job_whose_write_yields_its_offsets(worker_factory: WorkerFactory) -> None:
    """The write observes the batch's count and highest seq: no caching, counting or aggregating
    pass of its own, and the stored offset is still exactly the next seq to write."""
    worker = worker_factory()
    topic = unique("onepass")
    config = datagen(topic, **{"records.per.second": "100", "total.records": "300", "tasks.max": "1"})
    response = httpx.post(f"{worker.url}/connectors", json={"name": "onepass", "config": config}, timeout=60)
    assert response.status_code == 201
    wait_for(lambda: task_states(worker.url, "onepass") == ["RUNNING"], 60, "the task RUNNING")
    (run,) = [r for r in worker.worker.tasks.runs() if r.connector == "onepass"]
    assert run.query is not None
    query = run.query

    def stored() -> list[object]:
        return list(httpx.get(f"{worker.url}/connectors/onepass/offsets", timeout=30).json()["offsets"])

    wait_for(lambda: stored() == [{"partition": {"task": 0}, "offset": {"position": 300}}], 60, "offset 300")
    wait_for(lambda: len(query.recentProgress) >= 4, 60, "four batches")
    assert httpx.put(f"{worker.url}/connectors/onepass/stop", timeout=60).status_code == 204
    wait_for(lambda: not query.isActive, 60, "the task's query stopped")

    # Spark runs a query's batch jobs, foreachBatch's included, in a job group named by its run id.
    jobs = worker.spark.sparkContext.statusTracker().getJobIdsForGroup(str(query.runId))
    batches = len(query.recentProgress)
    assert batches >= 4
    # A stop can cut the last batch between its job and its progress report: at most one job more.
    assert len(jobs) <= batches + 1, f"{len(jobs)} Spark jobs for {batches} batches"


CHAIN = {
    "transforms": "route,origin,trim",
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.route.regex": "(.*)",
    "transforms.route.replacement": "$1-routed",
    "transforms.origin.type": "org.apache.kafka.connect.transforms.InsertField$Value",
    "transforms.origin.static.field": "origin",
    "transforms.origin.static.value": "datagen",
    "transforms.trim.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
    "transforms.trim.exclude": "payload",
    "transforms.trim.renames": "seq:sequence",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
}


def task_counts(worker: RunningWorker, connector: str) -> tuple[float, float]:
    """The task's source-record-poll-total and source-record-write-total, as /metrics serves them."""
    text = httpx.get(f"{worker.url}/metrics", timeout=30).text
    found = {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.labels.get("connector", "").strip('"') == connector
    }
    prefix = "kafka_connect_source_task_source_record_"
    return found.get(prefix + "poll_total", -1.0), found.get(prefix + "write_total", -1.0)


def run_one_pass(worker: RunningWorker, name: str, config: dict[str, str]) -> tuple[tuple[float, float], str]:
    """Create the connector, wait for its 300 records' offset, stop it; assert its batches were one job each.
    Returns the task's (poll, write) totals before the stop (a stopped task's metrics are gone) and
    the kind of its run (DirectRun: Spark's Kafka sink writes the query; SourceRun: a batch function)."""
    response = httpx.post(f"{worker.url}/connectors", json={"name": name, "config": config}, timeout=60)
    assert response.status_code == 201, response.text
    wait_for(lambda: task_states(worker.url, name) == ["RUNNING"], 60, "the task RUNNING")
    (run,) = [r for r in worker.worker.tasks.runs() if r.connector == name]
    assert run.query is not None
    query = run.query

    def stored() -> list[object]:
        return list(httpx.get(f"{worker.url}/connectors/{name}/offsets", timeout=30).json()["offsets"])

    wait_for(lambda: stored() == [{"partition": {"task": 0}, "offset": {"position": 300}}], 90, "offset 300")
    wait_for(lambda: task_counts(worker, name)[0] >= 300, 60, "the 300 polled records counted")
    counts = task_counts(worker, name)
    assert httpx.put(f"{worker.url}/connectors/{name}/stop", timeout=60).status_code == 204
    wait_for(lambda: not query.isActive, 60, "the task's query stopped")
    jobs = worker.spark.sparkContext.statusTracker().getJobIdsForGroup(str(query.runId))
    batches = len(query.recentProgress)
    assert len(jobs) <= batches + 1, f"{len(jobs)} Spark jobs for {batches} batches"
    return counts, type(run).__name__


def test_a_transformed_source_batch_is_one_job_that_yields_its_records_topics_and_offsets(
    kafka: KafkaCluster, worker_factory: WorkerFactory
) -> None:
    """RegexRouter, InsertField and ReplaceField on a source: the chain keeps every record and routes by
    topic alone, so it runs inside the task's query written by Spark's Kafka sink, and the routed topic,
    known before any record, is the one recorded (KIP-558); nothing runs the chain a second time."""
    worker = worker_factory()
    topic = unique("chain")
    config = datagen(topic, **{"records.per.second": "100", "total.records": "300", "tasks.max": "1"}, **CHAIN)
    counts, kind = run_one_pass(worker, "chain", config)
    assert kind == "DirectRun"

    records = read_topic(kafka.bootstrap_servers, f"{topic}-routed", 300)
    values = [json.loads(r.value()) for r in records]
    assert sorted(v["sequence"] for v in values) == list(range(300))
    assert all(v["origin"] == "datagen" and "payload" not in v and "seq" not in v for v in values)
    routed = httpx.get(f"{worker.url}/connectors/chain/topics", timeout=10).json()
    assert routed == {"chain": {"topics": [f"{topic}-routed"]}}
    assert counts == (300.0, 300.0)


def test_records_a_filter_drops_are_polled_not_written_and_their_offsets_still_count(
    kafka: KafkaCluster, worker_factory: WorkerFactory
) -> None:
    worker = worker_factory()
    topic = unique("dropped")
    dropping = {"transforms": "drop", "transforms.drop.type": "org.apache.kafka.connect.transforms.Filter"}
    config = datagen(topic, **{"records.per.second": "100", "total.records": "300", "tasks.max": "1"}, **dropping)
    # A chain that may drop records takes the batch path, whose write counts what leaves the chain.
    assert run_one_pass(worker, "dropped", config) == ((300.0, 0.0), "SourceRun")
    assert httpx.get(f"{worker.url}/connectors/dropped/topics", timeout=10).json() == {"dropped": {"topics": []}}
    assert topic_size(kafka.bootstrap_servers, topic) == 0


def test_a_chain_record_that_fails_in_the_direct_query_fails_the_task_naming_it(worker_factory: WorkerFactory) -> None:
    """errors.tolerance=none inside a direct query: the first record a transform cannot convert fails
    the task with Connect's message, naming the transform and the record; nothing is written."""
    worker = worker_factory()
    topic = unique("castfail")
    cast = {
        "transforms": "route,cast",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "(.*)",
        "transforms.route.replacement": "$1-routed",
        "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value",
        "transforms.cast.spec": "payload:int32",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    }
    config = datagen(topic, **{"total.records": "50", "tasks.max": "1"}, **cast)
    assert (
        httpx.post(f"{worker.url}/connectors", json={"name": "castfail", "config": config}, timeout=60).status_code
        == 201
    )
    wait_for(lambda: task_states(worker.url, "castfail") == ["FAILED"], 90, "the task to fail")
    assert [type(r).__name__ for r in worker.worker.tasks.runs() if r.connector == "castfail"] == ["DirectRun"]
    trace = status(worker.url, "castfail")["tasks"][0]["trace"]
    assert "Tolerance exceeded in error handler" in trace and "Cast" in trace, trace
    assert f"topic={topic}, partition=" in trace, trace
    assert topic_size(worker.config.bootstrap_servers, f"{topic}-routed") == 0
