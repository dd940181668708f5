"""Three `sparklink worker` processes in one group (distributed mode) on the real broker.

One group per module (each worker is a Python process with its own Spark JVM): connectors and tasks
spread over the workers, writes sent to a non-leader are forwarded, Connect's multi-worker restart
cases, and kill -9 of the leader while datagen -> Kafka -> file sink runs on all three.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparklink.platform.kafka import KafkaCluster
from tests.helpers import create_topic, status, unique, wait_for
from tests.worker_process import WorkerProcess, stop_all

SESSION_TIMEOUT_MS = 6000
REBALANCE_DELAY_MS = 3000
CONFLICT = "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"


@pytest.fixture(scope="module")
def group(kafka: KafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[WorkerProcess]]:
    name = unique("dist")
    props: dict[str, Any] = {
        "bootstrap.servers": kafka.bootstrap_servers,
        "group.id": name,
        "sparklink.worker.mode": "distributed",
        "config.storage.topic": f"{name}-configs",
        "offset.storage.topic": f"{name}-offsets",
        "status.storage.topic": f"{name}-status",
        "offset.storage.partitions": 1,
        "status.storage.partitions": 1,
        "session.timeout.ms": SESSION_TIMEOUT_MS,
        "heartbeat.interval.ms": 1000,
        "rebalance.timeout.ms": 120000,
        "scheduled.rebalance.max.delay.ms": REBALANCE_DELAY_MS,
        "task.trigger.interval.ms": 500,
        "spark.master": "local[1]",
    }
    base = tmp_path_factory.mktemp(name)
    previous = os.environ.get("SPARKLINK_DRIVER_MEMORY")
    os.environ["SPARKLINK_DRIVER_MEMORY"] = "512m"  # three Spark JVMs on a shared 2-core machine
    workers = [WorkerProcess(dict(props), base / f"worker-{i}", log_level="INFO") for i in range(3)]
    errors: list[BaseException] = []

    def start(worker: WorkerProcess) -> None:
        try:
            worker.start(timeout=400)
        except BaseException as exc:  # reported after every start has finished
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


def alive(workers: list[WorkerProcess]) -> list[WorkerProcess]:
    return [w for w in workers if w.pid]


def datagen(topic: str, **extra: str) -> dict[str, str]:
    return {"connector.class": "datagen", "topic": topic, "records.per.second": "30", **extra}


def create(url: str, name: str, config: dict[str, str], forward: str | None = None, **extra: str) -> httpx.Response:
    params = {"forward": forward} if forward else {}
    body = {"name": name, "config": config, **extra}
    return httpx.post(f"{url}/connectors", params=params, json=body, timeout=120)


def delete(url: str, *names: str) -> None:
    """Remove what a test made (through a worker that may have to forward), so the next test's Spark
    queries do not share the two cores with this one's."""
    for name in names:
        response = httpx.delete(f"{url}/connectors/{name}", timeout=120)
        assert response.status_code in (204, 404), response.text


def running_everywhere(url: str, name: str, tasks: int) -> dict[str, Any] | None:
    body = status(url, name)
    states = [body["connector"]["state"], *(t["state"] for t in body["tasks"])]
    return body if len(body["tasks"]) == tasks and set(states) == {"RUNNING"} else None


def log_count(worker: WorkerProcess, line: str) -> int:
    return worker.log.read_text(errors="replace").count(line) if worker.log.exists() else 0


def task_start_count(workers: list[WorkerProcess], name: str) -> int:
    return sum(log_count(w, f"started task {name}-") for w in workers)


def owner(workers: list[WorkerProcess], worker_id: str) -> WorkerProcess:
    return next(w for w in workers if w.url == f"http://{worker_id}")


def test_connectors_and_tasks_spread_over_the_group_and_writes_to_non_leaders_are_forwarded(
    group: list[WorkerProcess],
) -> None:
    # One create through each worker: two of them are not the leader, so their writes were forwarded.
    names = [unique(f"spread{i}") for i in range(3)]
    for worker, name in zip(group, names, strict=True):
        response = create(worker.url, name, datagen(unique("spread"), **{"tasks.max": "2"}))
        assert response.status_code == 201, response.text
        assert response.json()["name"] == name
    bodies = [wait_for(lambda n=n: running_everywhere(group[0].url, n, 2), 240, f"{n} RUNNING") for n in names]
    owners = {t["worker_id"] for b in bodies for t in b["tasks"]} | {b["connector"]["worker_id"] for b in bodies}
    assert owners == {w.url.removeprefix("http://") for w in group}, owners
    # Every worker answers reads from its own view of the topics.
    for worker in group:
        assert sorted(httpx.get(f"{worker.url}/connectors", timeout=30).json()) >= sorted(names)
    # A request that already made its hops is not forwarded again: the two non-leaders refuse it.
    refused, made = [], []
    for worker in group:
        hop = unique("hop")
        response = create(worker.url, hop, datagen(hop), forward="false", initial_state="STOPPED")
        if response.status_code == 409:
            assert response.json() == {"error_code": 409, "message": CONFLICT}
            refused.append(worker)
        else:
            assert response.status_code == 201, response.text
            made.append(hop)
    assert len(refused) == 2
    delete(group[1].url, *names, *made)


def test_multi_worker_restart_only_connector(group: list[WorkerProcess]) -> None:
    name = unique("restart-conn")
    assert create(group[0].url, name, datagen(unique("rc"), **{"tasks.max": "2"})).status_code == 201
    body = wait_for(lambda: running_everywhere(group[0].url, name, 2), 240, f"{name} RUNNING")
    connector_owner = owner(group, body["connector"]["worker_id"])
    other = next(w for w in group if w is not connector_owner)
    starts = log_count(connector_owner, f"started connector {name}")
    # A task reports RUNNING before its query has started (and logged so): wait for both queries.
    task_starts = wait_for(lambda: task_start_count(group, name) >= 2 and task_start_count(group, name), 120, "tasks")
    response = httpx.post(f"{other.url}/connectors/{name}/restart", timeout=120)
    assert response.status_code == 204, response.text
    wait_for(lambda: log_count(connector_owner, f"started connector {name}") == starts + 1, 120, "connector restart")
    wait_for(lambda: running_everywhere(other.url, name, 2), 120, f"{name} RUNNING again")
    assert task_start_count(group, name) == task_starts
    delete(other.url, name)


def test_multi_worker_restart_both_connector_and_tasks(group: list[WorkerProcess]) -> None:
    name = unique("restart-all")
    assert create(group[1].url, name, datagen(unique("ra"), **{"tasks.max": "3"})).status_code == 201
    body = wait_for(lambda: running_everywhere(group[0].url, name, 3), 240, f"{name} RUNNING")
    connector_owner = owner(group, body["connector"]["worker_id"])
    other = next(w for w in group if w is not connector_owner)
    task_owners = {t["id"]: owner(group, t["worker_id"]) for t in body["tasks"]}
    before = {
        i: wait_for(lambda i=i, w=w: log_count(w, f"started task {name}-{i} "), 120, f"task {i} started")
        for i, w in task_owners.items()
    }
    response = httpx.post(f"{other.url}/connectors/{name}/restart?includeTasks=true", timeout=120)
    assert response.status_code == 202, response.text
    plan = response.json()
    assert plan["connector"]["state"] == "RESTARTING"
    assert [t["state"] for t in plan["tasks"]] == ["RESTARTING"] * 3
    for i, worker in task_owners.items():
        wait_for(lambda i=i, w=worker: log_count(w, f"started task {name}-{i} ") > before[i], 120, f"task {i} restart")
    wait_for(lambda: running_everywhere(other.url, name, 3), 120, f"{name} RUNNING after the restart")
    delete(other.url, name)


def test_a_group_refuses_exactly_once_required_and_a_sink_in_the_workers_own_consumer_group(
    group: list[WorkerProcess],
) -> None:
    # Connect's DistributedHerder checks: no exactly-once source mode here, and datagen cannot say whether it
    # could (it has no exactlyOnceSupport), so both of Connect's messages; on a follower, then forwarded.
    url, name = group[1].url, unique("eos")
    config = {**datagen(unique("eos")), "exactly.once.support": "required"}
    answer = httpx.put(f"{url}/connector-plugins/datagen/config/validate", json={**config, "name": name}, timeout=60)
    assert answer.status_code == 200, answer.text
    values = {c["value"]["name"]: c["value"]["errors"] for c in answer.json()["configs"]}
    assert values["exactly.once.support"][0] == "This worker does not have exactly-once source support enabled."
    assert values["exactly.once.support"][1].startswith("The connector does not implement the API required for")
    refused = create(url, name, config)
    assert refused.status_code == 400 and "exactly-once source support" in refused.json()["message"], refused.text
    worker_group = str(group[0].props["group.id"])
    sink = {"connector.class": "FileStreamSink", "topics": "t", "file": "/tmp/never.txt"}
    refused = create(url, unique("sink"), {**sink, "consumer.override.group.id": worker_group})
    assert refused.status_code == 400, refused.text
    assert f"Consumer group {worker_group} conflicts with Connect worker group {worker_group}" in refused.text
    assert name not in httpx.get(f"{url}/connectors", timeout=30).json()


def test_kill_9_of_the_leader_moves_its_tasks_and_loses_no_record(group: list[WorkerProcess], tmp_path: Path) -> None:
    kafka_bootstrap = group[0].props["bootstrap.servers"]
    topic, total = unique("failover"), 1500
    create_topic(kafka_bootstrap, topic, partitions=3)
    sink_file = tmp_path / "sink" / "records.txt"
    sink_file.parent.mkdir()
    source = datagen(topic, **{"tasks.max": "3", "total.records": str(total), "records.per.second": "60"})
    assert create(group[2].url, "fo-source", source).status_code == 201
    sink = {"connector.class": "FileStreamSink", "file": str(sink_file), "topics": topic, "tasks.max": "3"}
    assert create(group[1].url, "fo-sink", sink).status_code == 201
    for name in ("fo-source", "fo-sink"):
        wait_for(lambda n=name: running_everywhere(group[0].url, n, 3), 240, f"{name} RUNNING on the group")
    wait_for(lambda: sink_file.exists() and sink_file.stat().st_size > 0, 120, "records in the sink file")

    # The leader is the worker that refuses nothing: a create with forward=false succeeds only there.
    leader = next(
        w
        for w in group
        if create(w.url, unique("probe"), datagen(unique("p")), forward="false", initial_state="STOPPED").status_code
        == 201
    )
    leader_id = leader.url.removeprefix("http://")
    leader.kill()
    survivors = alive(group)
    survivor_ids = {w.url.removeprefix("http://") for w in survivors}

    def moved(name: str) -> bool:
        body = running_everywhere(survivors[0].url, name, 3)
        ids = {t["worker_id"] for t in body["tasks"]} | {body["connector"]["worker_id"]} if body else set()
        return bool(body) and ids <= survivor_ids

    # Session timeout, then the scheduled rebalance delay, then the rebalance itself (Spark query starts).
    for name in ("fo-source", "fo-sink"):
        wait_for(lambda n=name: moved(n), 240, f"{name} RUNNING on the survivors only")
    assert leader_id not in json.dumps([status(survivors[0].url, n) for n in ("fo-source", "fo-sink")])

    # A new leader takes config writes, through either survivor.
    for worker in survivors:
        response = create(worker.url, unique("after"), datagen(unique("after")), initial_state="STOPPED")
        assert response.status_code == 201, response.text

    # At least once: every generated record reaches the sink file.
    expected = {(t, s) for t in range(3) for s in range(total // 3)}

    def delivered() -> set[tuple[int, int]]:
        seen = set()
        for line in sink_file.read_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            seen.add((int(record["task"]), int(record["seq"])))
        return seen

    wait_for(lambda: expected <= delivered(), 300, f"all {total} records in the sink file")
