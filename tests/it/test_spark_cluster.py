"""A pipeline on a real Spark standalone cluster (`spark.master=spark://...`): a master and two workers
from the pyspark distribution, a `sparklink worker` process that is one Spark application on it.

Records flow datagen -> Kafka -> file sink with the Spark jobs on the cluster's executors (their logs
say so), and kill -9 of one Spark worker (it and its executors, as a lost machine) loses nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparklink.platform import process
from sparklink.platform.kafka import KafkaCluster
from tests.conftest import worker_props
from tests.helpers import create_topic, status, unique, wait_for
from tests.support.spark_cluster import SparkCluster, spark_cluster
from tests.worker_process import WorkerProcess


@pytest.fixture(scope="module")
def cluster() -> Iterator[SparkCluster]:
    with spark_cluster(workers=2, cores=1, memory="1g") as started:
        yield started


@pytest.fixture(scope="module")
def worker(
    kafka: KafkaCluster, cluster: SparkCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
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
        },
    )
    previous = os.environ.get("SPARKLINK_DRIVER_MEMORY")
    os.environ["SPARKLINK_DRIVER_MEMORY"] = "512m"
    started = WorkerProcess(props, base / "worker", log_level="INFO")
    try:
        started.start(timeout=400)
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
