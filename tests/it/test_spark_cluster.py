"""A pipeline on a real Spark standalone cluster (`spark.master=spark://...`): a master and two workers
from the pyspark distribution, a `sparklink worker` process that is one Spark application on it.

Records flow datagen -> Kafka -> file sink with the Spark jobs on the cluster's executors (their logs
say so), kill -9 of one Spark worker (it and its executors, as a lost machine) loses nothing, and a Java
plugin of plugin.path runs there too: Debezium's PostgreSQL source task on an executor (issue 30), and a
plugin the executors' hosts lack fails its task saying so.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparklink.platform import process
from sparklink.platform.kafka import KafkaCluster
from tests.conftest import worker_props
from tests.helpers import create_topic, read_topic, status, unique, wait_for
from tests.it.postgres import Postgres, postgres_server  # noqa: F401 (the session fixture)
from tests.support.java_plugins import compile_plugin, debezium_postgres_config, plugin_dir, plugins_root
from tests.support.spark_cluster import SparkCluster, spark_cluster
from tests.worker_process import WorkerProcess

# A source connector whose task would idle: what matters is whether its classes load where the task runs.
DRIVER_ONLY = """
package test.driveronly;

import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

public class DriverOnlyConnector extends SourceConnector {
    public static class IdleTask extends SourceTask {
        public String version() { return "1.0"; }
        public void start(Map<String, String> props) { }
        public List<SourceRecord> poll() throws InterruptedException { Thread.sleep(100); return null; }
        public void stop() { }
    }
    public String version() { return "1.0"; }
    public void start(Map<String, String> props) { }
    public Class<? extends Task> taskClass() { return IdleTask.class; }
    public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(Map.of()); }
    public void stop() { }
    public ConfigDef config() { return new ConfigDef(); }
}
"""
DRIVER_ONLY_CLASS = "test.driveronly.DriverOnlyConnector"


@pytest.fixture(scope="module")
def cluster() -> Iterator[SparkCluster]:
    with spark_cluster(workers=2, cores=1, memory="1g") as started:
        yield started


@pytest.fixture(scope="module")
def driver_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plugin.path entry with one small connector, which the worker fixture removes once the worker has
    scanned it: a plugin installed on the driver's host and on no executor's."""
    root = tmp_path_factory.mktemp("driver-only-plugins")
    compile_plugin(root / "driver-only", {"test/driveronly/DriverOnlyConnector.java": DRIVER_ONLY})
    return root


@pytest.fixture(scope="module")
def worker(
    kafka: KafkaCluster, cluster: SparkCluster, tmp_path_factory: pytest.TempPathFactory, driver_only: Path
) -> Iterator[WorkerProcess]:
    plugin_dir("debezium-connector-postgres")  # fail early, saying what to run
    group = unique("sparkc")
    base = tmp_path_factory.mktemp(group)
    props = worker_props(
        kafka,
        group,
        base / "state",
        **{
            "spark.master": cluster.master_url,
            "spark.executor.memory": "512m",
            "spark.executor.cores": "1",
            "task.trigger.interval.ms": 500,
            # One machine: every executor reads the same directories the worker scanned.
            "plugin.path": f"{plugins_root()},{driver_only}",
        },
    )
    previous = os.environ.get("SPARKLINK_DRIVER_MEMORY")
    os.environ["SPARKLINK_DRIVER_MEMORY"] = "512m"
    started = WorkerProcess(props, base / "worker", log_level="INFO")
    try:
        started.start(timeout=400)
        # The worker has loaded it; no executor has scanned plugin.path yet (only a Java source task does).
        shutil.rmtree(driver_only)
        yield started
    finally:
        started.stop()
        if previous is None:
            os.environ.pop("SPARKLINK_DRIVER_MEMORY", None)
        else:
            os.environ["SPARKLINK_DRIVER_MEMORY"] = previous


def pipeline(worker: WorkerProcess, topic: str, sink_file: Path, total: int, rate: int) -> tuple[str, str]:
    create_topic(worker.props["bootstrap.servers"], topic, partitions=2)
    source, sink = unique("gen"), unique("sink")
    configs = {
        source: {
            "connector.class": "datagen",
            "topic": topic,
            "tasks.max": "1",
            "total.records": str(total),
            "records.per.second": str(rate),
        },
        sink: {"connector.class": "FileStreamSink", "topics": topic, "file": str(sink_file), "tasks.max": "1"},
    }
    for name, config in configs.items():
        response = httpx.post(f"{worker.url}/connectors", json={"name": name, "config": config}, timeout=120)
        assert response.status_code == 201, response.text
    return source, sink


def delivered(sink_file: Path) -> set[int]:
    seen = set()
    if not sink_file.exists():
        return seen
    for line in sink_file.read_text().splitlines():
        try:
            seen.add(int(json.loads(line)["seq"]))
        except (ValueError, KeyError):
            continue
    return seen


def executor_lines(cluster: SparkCluster, text: str) -> int:
    return sum(
        log.read_text(errors="replace").count(text)
        for spark_worker in cluster.workers
        for log in spark_worker.executor_logs()
    )


def test_tasks_run_on_the_cluster_executors(worker: WorkerProcess, cluster: SparkCluster, tmp_path: Path) -> None:
    total = 300
    sink_file = tmp_path / "out.txt"
    names = pipeline(worker, unique("onspark"), sink_file, total, rate=50)
    wait_for(lambda: set(range(total)) <= delivered(sink_file), 300, f"all {total} records in the sink file")

    app = f"sparklink-{worker.url.removeprefix('http://')}"
    apps: list[dict[str, Any]] = [a for a in cluster.state()["activeapps"] if a["name"] == app]
    assert apps and apps[0]["cores"] >= 1, cluster.state()["activeapps"]
    # The Spark tasks of the pipeline ran in executor JVMs of the cluster's workers, not in the driver.
    assert executor_lines(cluster, "Executor: Finished task") > 0
    for name in names:
        assert httpx.delete(f"{worker.url}/connectors/{name}", timeout=120).status_code == 204


def _task_running(worker: WorkerProcess, name: str) -> bool:
    """Whether the connector and its one task run; a FAILED one raises with its trace."""
    state = status(worker.url, name)
    tasks = state.get("tasks", [])
    if any(t["state"] == "FAILED" for t in tasks) or state.get("connector", {}).get("state") == "FAILED":
        raise AssertionError(f"{name} failed: {json.dumps(state)[:3000]}")
    return [t["state"] for t in tasks] == ["RUNNING"]


def test_a_debezium_source_from_plugin_path_runs_its_task_on_a_cluster_executor(
    worker: WorkerProcess, cluster: SparkCluster, postgres: Postgres
) -> None:
    table, prefix = unique("oncluster").replace("-", "_"), unique("dbzc")
    slot = prefix.replace("-", "_")
    postgres.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, name TEXT NOT NULL)")
    postgres.execute(f"INSERT INTO {table} VALUES (1, 'apple'), (2, 'pear')")
    name = unique("dbz-cluster")
    config = debezium_postgres_config(postgres, prefix, table, slot=slot)
    response = httpx.put(f"{worker.url}/connectors/{name}/config", json=config, timeout=120)
    assert response.status_code == 201, response.text
    topic, bootstrap = f"{prefix}.public.{table}", worker.props["bootstrap.servers"]
    try:
        wait_for(lambda: _task_running(worker, name), 300, "the Debezium connector and its task RUNNING")
        snapshot = read_topic(bootstrap, topic, 2, timeout=300)
        assert [(json.loads(r.value())["op"], json.loads(r.value())["after"]) for r in snapshot] == [
            ("r", {"id": 1, "name": "apple"}),
            ("r", {"id": 2, "name": "pear"}),
        ]
        # Streaming from the WAL once the snapshot is done.
        postgres.execute(f"INSERT INTO {table} VALUES (3, 'plum')")
        postgres.execute(f"INSERT INTO {table} VALUES (4, 'fig')")
        records = read_topic(bootstrap, topic, 4, timeout=180)
        assert [(json.loads(r.value())["op"], json.loads(r.value())["after"]) for r in records[2:]] == [
            ("c", {"id": 3, "name": "plum"}),
            ("c", {"id": 4, "name": "fig"}),
        ]
        assert _task_running(worker, name)

        # Where it ran, as a user finds out: the worker's log names the executor (from Spark's scheduler), one
        # of the application's executor JVMs under a Spark worker, whose log is in that worker's work dir.
        placed = re.compile(rf"task {re.escape(name)}-0 runs (on Spark executor (\S+)|in the Spark driver)")
        found = wait_for(lambda: placed.search(worker.log.read_text(errors="replace")), 60, "the task's placement")
        assert found.group(2) is not None, found.group(0)  # an executor, not the driver
        app = next(
            a for a in cluster.state()["activeapps"] if a["name"] == f"sparklink-{worker.url.removeprefix('http://')}"
        )
        logs = [log for w in cluster.workers for log in w.work_dir.glob(f"{app['id']}/{found.group(2)}/stderr")]
        assert len(logs) == 1, [w.work_dir for w in cluster.workers]
        assert "Running task 0.0 in stage" in logs[0].read_text(errors="replace")
        # Debezium's own lines (SLF4J, at INFO) are in that log beside Spark's, though the executor ran the
        # pipeline's tasks before (test_tasks_run_on_the_cluster_executors): a reused executor JVM.
        started = "Starting PostgresConnectorTask with configuration:"
        logged = wait_for(
            lambda: [line for line in logs[0].read_text(errors="replace").splitlines() if started in line],
            60,
            "Debezium's INFO line in the executor's log",
        )
        assert " INFO " in logged[0], logged
    finally:
        httpx.delete(f"{worker.url}/connectors/{name}", timeout=120)
        wait_for(lambda: httpx.get(f"{worker.url}/connectors/{name}").status_code == 404, 60, "the connector gone")
        # The slot would otherwise hold WAL for the rest of the session.
        wait_for(lambda: postgres.drop_slot(slot), 120, "the replication slot dropped")


def test_a_java_plugin_missing_on_the_executors_host_fails_its_task_saying_so(
    worker: WorkerProcess, driver_only: Path
) -> None:
    name = unique("driver-only")
    response = httpx.put(f"{worker.url}/connectors/{name}/config", json={"connector.class": DRIVER_ONLY_CLASS})
    assert response.status_code == 201, response.text  # the worker (the driver) has the plugin

    def failed() -> dict[str, Any] | None:
        tasks = status(worker.url, name).get("tasks", [])
        return tasks[0] if tasks and tasks[0]["state"] == "FAILED" else None

    task = wait_for(failed, 300, "the task FAILED on the executor")
    first = task["trace"].splitlines()[0]
    assert first.startswith(
        f"org.apache.kafka.connect.errors.ConnectException: Connector class {DRIVER_ONLY_CLASS} cannot be loaded "
        "in the JVM that runs the task"
    ), task["trace"][:2000]
    assert f"plugin.path entry {driver_only} does not exist" in first
    assert "each executor of a Spark cluster" in first
    assert status(worker.url, name)["connector"]["state"] == "RUNNING"
    assert httpx.delete(f"{worker.url}/connectors/{name}", timeout=120).status_code == 204


def test_kill_9_of_a_spark_worker_loses_no_record(worker: WorkerProcess, cluster: SparkCluster, tmp_path: Path) -> None:
    total = 900
    sink_file = tmp_path / "out.txt"
    names = pipeline(worker, unique("sparkkill"), sink_file, total, rate=30)
    wait_for(lambda: len(delivered(sink_file)) > 100, 300, "records flowing through the cluster")

    # The worker that runs executors of our application goes, with its executors (its process group).
    victim = next(w for w in cluster.workers if w.executor_logs())
    process.kill(victim.pid)

    def all_delivered() -> bool:
        # The query carries on (Spark re-runs lost tasks elsewhere) or fails; a failed task is restarted
        # as a user or the operator would, and resumes from its committed offsets.
        for name in names:
            if any(t["state"] == "FAILED" for t in status(worker.url, name)["tasks"]):
                httpx.post(f"{worker.url}/connectors/{name}/restart?includeTasks=true&onlyFailed=true", timeout=120)
        return set(range(total)) <= delivered(sink_file)

    wait_for(all_delivered, 400, f"all {total} records in the sink file after the Spark worker died", interval=2)
    alive = [w for w in cluster.state()["workers"] if w["state"] == "ALIVE"]
    assert len(alive) == 1
