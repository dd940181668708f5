"""SIGTERM stops a `sparklink worker` cleanly: queries first, then the watchdog, then the Spark JVM."""

from __future__ import annotations

from pathlib import Path

import httpx

from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform import process
from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.storage.kafka_log import KafkaLog
from tests.conftest import worker_props
from tests.helpers import task_states, unique, wait_for
from tests.worker_process import WorkerProcess

GRACE_SECONDS = 60


def test_sigterm_exits_zero_without_errors_or_a_leftover_jvm(kafka: KafkaCluster, tmp_path: Path) -> None:
    group = unique("term")
    worker = WorkerProcess(worker_props(kafka, group, tmp_path / "state"), tmp_path / "worker").start()
    try:
        body = {"name": "steady", "config": {"connector.class": "datagen", "topic": unique("term"), "tasks.max": "2"}}
        assert httpx.post(f"{worker.url}/connectors", json=body, timeout=60).status_code == 201
        wait_for(lambda: task_states(worker.url, "steady") == ["RUNNING", "RUNNING"], 90, "two RUNNING tasks")
        jvms = worker.children()
        assert jvms, "the worker runs its Spark JVM as a child process"
        code = worker.terminate(GRACE_SECONDS)
    finally:
        if worker.pid:  # still running: do not leave it behind
            worker.kill()
    assert code == 0, process.tail(worker.log)
    log = worker.log.read_text(errors="replace")
    errors = [line for line in log.splitlines() if "ERROR" in line or "Traceback" in line]
    assert not errors, "\n".join(errors[:20])
    wait_for(lambda: not any(process.alive(pid) for pid in jvms), 30, "the Spark JVM to exit")
    # The tasks we stopped are recorded UNASSIGNED (Connect's shutdown state), never FAILED.
    records = KafkaLog(KafkaClientSettings(kafka.bootstrap_servers), f"{group}-status").read_all()
    latest = {k.decode(): v for k, v in records if k}
    task_values = [latest[f"status-task-steady-{i}"] for i in range(2)]
    assert all(v is not None and b'"state":"UNASSIGNED"' in v for v in task_values), task_values


def test_sigterm_during_the_first_start_exits_zero_without_errors(kafka: KafkaCluster, tmp_path: Path) -> None:
    """Stopped while it still starts (its REST server answers 503), a fresh worker warms Spark up to the
    end and then stops: it never aborts a Spark job it is running (Spark logs that as an ERROR)."""
    props = worker_props(kafka, unique("early"), tmp_path / "state", **{"sparklink.warm.up.enable": "true"})
    worker = WorkerProcess(props, tmp_path / "worker", log_level="INFO").launch()
    try:
        wait_for(lambda: worker.health() == 503, 120, "the worker to answer that it is starting", interval=0.1)
        code = worker.terminate(GRACE_SECONDS)
    finally:
        if worker.pid:
            worker.kill()
    assert code == 0, process.tail(worker.log)
    log = worker.log.read_text(errors="replace")
    errors = [line for line in log.splitlines() if " ERROR " in line or "Traceback" in line]
    assert not errors, "\n".join(errors[:20])
    assert "Spark's write path warmed up" in log, "the warm-up ran to its end before the exit"
