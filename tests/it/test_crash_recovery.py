"""kill -9 of a worker mid-pipeline (datagen -> Kafka -> file sink), then a restart: nothing is lost.

The worker runs as its own process so that SIGKILL takes down it and its Spark JVM at once; a new
worker on the same internal topics must resume both connectors from their stored offsets.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparklink.platform.kafka import KafkaCluster
from tests.conftest import worker_props
from tests.helpers import status, task_states, unique, wait_for
from tests.worker_process import WorkerProcess


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[list[WorkerProcess]]:
    started: list[WorkerProcess] = []
    yield started
    for worker in started:
        worker.stop()


def sink_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def offsets(url: str, name: str) -> list[dict[str, Any]]:
    return list(httpx.get(f"{url}/connectors/{name}/offsets", timeout=30).json()["offsets"])


def test_kill_9_mid_pipeline_then_restart_loses_nothing(
    kafka: KafkaCluster, tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    group = unique("crash")
    props = worker_props(kafka, group, tmp_path / "state", **{"task.trigger.interval.ms": 500})
    first = WorkerProcess(props, tmp_path / "w1").start()
    workers.append(first)
    topic, out = unique("crash"), tmp_path / "sink.txt"
    source = {"connector.class": "datagen", "topic": topic, "records.per.second": "200", "tasks.max": "2"}
    sink = {"connector.class": "FileStreamSink", "topics": topic, "file": str(out)}
    assert httpx.post(f"{first.url}/connectors", json={"name": "gen", "config": source}, timeout=120).status_code == 201
    wait_for(
        lambda: httpx.get(f"{first.url}/connectors/gen/topics", timeout=5).json()["gen"]["topics"],
        120,
        "the source to create its topic",
    )
    assert httpx.post(f"{first.url}/connectors", json={"name": "sink", "config": sink}, timeout=120).status_code == 201

    # Kill in the middle: both connectors have made progress and the generator keeps going.
    wait_for(lambda: len(sink_lines(out)) > 50, 120, "records reaching the sink")
    before = {"gen": offsets(first.url, "gen"), "sink": offsets(first.url, "sink")}
    first.kill()

    second = WorkerProcess({**props, "rest.port": 0}, tmp_path / "w2").start()
    workers.append(second)
    assert sorted(httpx.get(f"{second.url}/connectors", timeout=10).json()) == ["gen", "sink"]
    wait_for(
        lambda: (
            task_states(second.url, "gen") == ["RUNNING", "RUNNING"] and task_states(second.url, "sink") == ["RUNNING"]
        ),
        120,
        "both connectors RUNNING again",
    )
    assert status(second.url, "gen")["connector"]["state"] == "RUNNING"

    # Offsets survived the crash: nothing restarted from scratch.
    after = {"gen": offsets(second.url, "gen"), "sink": offsets(second.url, "sink")}
    for name in ("gen", "sink"):
        old = {json.dumps(o["partition"], sort_keys=True): o["offset"] for o in before[name]}
        new = {json.dumps(o["partition"], sort_keys=True): o["offset"] for o in after[name]}
        assert old.keys() <= new.keys()
        for partition, offset in old.items():
            assert next(iter(new[partition].values())) >= next(iter(offset.values()))

    # Stop the generator where it is; everything it generated must reach the sink at least once.
    generated = {o["partition"]["task"]: o["offset"]["position"] for o in before["gen"]}
    wait_for(
        lambda: all(
            o["offset"]["position"] > generated[o["partition"]["task"]] + 100 for o in offsets(second.url, "gen")
        ),
        120,
        "the generator to move on after the restart",
    )
    assert httpx.put(f"{second.url}/connectors/gen/stop", timeout=60).status_code == 204
    final = {o["partition"]["task"]: o["offset"]["position"] for o in offsets(second.url, "gen")}
    expected = {(task, seq) for task, end in final.items() for seq in range(end)}
    wait_for(
        lambda: {(r["task"], r["seq"]) for r in sink_lines(out)} >= expected,
        180,
        f"all {len(expected)} generated records in the sink file",
    )
    assert sorted(final) == [0, 1]
