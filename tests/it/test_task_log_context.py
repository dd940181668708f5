"""The log lines a task causes carry Connect's context, `[name|task-0] `, from Python and from the Spark JVM.

A `sparklink worker` process (its Python and its Spark JVM write to one log, as a service's journal
holds them) runs a file sink that fails: its output directory is a file. The task's lines come from
the worker's Python threads (its start, its query's end, its failure) and from the JVM threads that
ran its Spark tasks and its query; every one of them names the task, so one grep finds its story.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Producer

from sparklink.platform.kafka import KafkaCluster
from tests.conftest import worker_props
from tests.helpers import create_topic, unique, wait_for
from tests.worker_process import WorkerProcess

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

JVM_LINE = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} [A-Z]+ [\w$.]+: ")  # execution/log4j2.properties' layout
PYTHON_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ sparklink[\w.]*: ")  # log_context.LOG_FORMAT


@pytest.fixture(scope="module")
def worker(kafka: KafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerProcess]:
    state = tmp_path_factory.mktemp("log-context")
    group = unique("logs")
    props = worker_props(kafka, group, state / "state")
    process = WorkerProcess(props, state, log_level="INFO")
    try:
        yield process.start()
    finally:
        process.stop()


FULL_DISK = "/dev/full"


def test_a_tasks_log_lines_carry_its_context_from_python_and_from_the_jvm(
    kafka: KafkaCluster, worker: WorkerProcess, tmp_path: Path
) -> None:
    topic, name = unique("logged"), unique("ctx-sink")
    create_topic(kafka.bootstrap_servers, topic)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    for i in range(10):
        producer.produce(topic, value=f"line {i}".encode())
    assert producer.flush(30) == 0
    # A full disk (/dev/full refuses every write): the sink's writer fails in the executor's JVM.
    config = {"connector.class": "FileStreamSink", "topics": topic, "file": FULL_DISK}
    response = httpx.post(f"{worker.url}/connectors", json={"name": name, "config": config}, timeout=60)
    assert response.status_code == 201, response.text

    context = f"[{name}|task-0] "

    def lines() -> list[str]:
        return worker.log.read_text(errors="replace").splitlines()

    def told() -> tuple[list[str], list[str]] | None:
        mine = [line for line in lines() if context in line]
        python = [line for line in mine if PYTHON_LINE.match(line)]
        jvm = [line for line in mine if JVM_LINE.match(line)]
        return (python, jvm) if jvm and any("failed" in line for line in python) else None

    # The task fails on its first batch: Python reports it FAILED, Spark's executor logs the exception.
    python, jvm = wait_for(
        told,
        180,
        "the task's failure logged from Python and from the JVM",
        explain=lambda: "\n".join(lines()[-40:]),
    )
    assert any(f"started task {name}-0" in line for line in python), python
    assert any("Exception in task" in line for line in jvm), jvm
    # The context comes right before the message, in both layouts (Connect's `%X{connector.context}%m`).
    assert all(re.match(r"^\S+ \S+ \S+ \S+: " + re.escape(context), line) for line in python), python
    assert all(re.match(r"^\S+ \S+ \S+: " + re.escape(context), line) for line in jvm), jvm
    # Every line that names the task's connector is in its context (the task's, or its connector's).
    named = [line for line in lines() if name in line and (PYTHON_LINE.match(line) or JVM_LINE.match(line))]
    assert named and all(context in line or f"[{name}|worker] " in line for line in named), named
