"""The reproductions of the security review's findings 4 (file connectors) and 5 (the SQL transform), sent to
a real worker: each is a 400 that names the rule, nothing is written or read, and a canary connector on
the same worker runs on unharmed. A config stored before the rules does not run either.

The worker allows files under one directory (`sparklink.file.allowed.paths`); its state lives elsewhere.
"""

from __future__ import annotations

import site
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka.admin import AdminClient

from sparklink.api.states import TargetState
from sparklink.clients.settings import client_config
from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.assembly import RunningWorker, start_worker
from sparklink.worker.config import WorkerConfig
from tests.conftest import WorkerFactory, worker_props
from tests.helpers import status, unique, wait_for
from tests.support import canary

SITE_PACKAGES = Path(site.getsitepackages()[0])


@pytest.fixture(scope="module")
def allowed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("allowed")


@pytest.fixture(scope="module")
def guarded(
    kafka: KafkaCluster, spark: Any, allowed: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningWorker]:
    group = unique("rules")
    props = worker_props(kafka, group, tmp_path_factory.mktemp(group), **{"sparklink.file.allowed.paths": str(allowed)})
    runtime = start_worker(WorkerConfig.model_validate(props), spark=spark)
    canary.start(runtime)
    yield runtime
    runtime.stop()


def refused(worker: RunningWorker, name: str, config: dict[str, str]) -> str:
    """POST the connector; it must be Connect's 400, and no connector of that name may exist after."""
    response = httpx.post(f"{worker.url}/connectors", json={"name": name, "config": config}, timeout=60)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error_code"] == 400
    assert name not in httpx.get(f"{worker.url}/connectors", timeout=30).json()
    return str(body["message"])


def validate_errors(worker: RunningWorker, plugin: str, config: dict[str, str], key: str) -> list[str]:
    """Connect's `/config/validate` answer: 200, the error counted and listed on its key."""
    response = httpx.put(f"{worker.url}/connector-plugins/{plugin}/config/validate", json=config, timeout=60)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["error_count"] >= 1
    (value,) = [c["value"] for c in answer["configs"] if c["value"]["name"] == key]
    return list(value["errors"])


def topic_exists(kafka: KafkaCluster, topic: str) -> bool:
    return topic in AdminClient(client_config(kafka.bootstrap_servers)).list_topics(timeout=10).topics


# ------------------------------------------------------------------ finding 4: the file connectors
@pytest.mark.parametrize(
    ("where", "rule"),
    [
        ("site-packages", "inside the worker's own installation or Python path"),
        ("missing-parent", "does not exist: connectors do not create directories"),
        ("outside", "outside the worker's allowed paths (sparklink.file.allowed.paths"),
    ],
)
def test_a_file_sink_to_a_forbidden_path_is_refused_and_writes_nothing(
    guarded: RunningWorker, allowed: Path, tmp_path: Path, where: str, rule: str
) -> None:
    target = {
        "site-packages": SITE_PACKAGES / f"{unique('sparklink-evil')}.pth",
        "missing-parent": allowed / unique("missing") / "out.txt",
        "outside": tmp_path / "out.txt",
    }[where]
    config = {"connector.class": "FileStreamSink", "topics": unique("t"), "file": str(target)}
    message = refused(guarded, unique("sink"), config)
    assert f"Invalid value {target} for configuration file: " in message and rule in message
    assert any(rule in e for e in validate_errors(guarded, "FileStreamSink", config, "file"))
    assert not target.exists()
    if where == "missing-parent":
        assert not target.parent.exists()  # no directory was created either
    canary.unharmed(guarded)


def test_a_file_source_of_a_file_outside_the_allow_list_is_refused_and_reads_nothing(
    guarded: RunningWorker, kafka: KafkaCluster, tmp_path: Path
) -> None:
    secret, topic = tmp_path / "secret.txt", unique("exfiltrate")
    secret.write_text("password=hunter2\n")
    config = {"connector.class": "FileStreamSource", "topic": topic, "file": str(secret)}
    message = refused(guarded, unique("source"), config)
    assert "outside the worker's allowed paths (sparklink.file.allowed.paths" in message
    assert any(
        "outside the worker's allowed paths" in e for e in validate_errors(guarded, "FileStreamSource", config, "file")
    )
    assert not topic_exists(kafka, topic)  # nothing was read, so nothing was sent anywhere
    canary.unharmed(guarded)


def test_files_inside_the_allow_list_still_flow(guarded: RunningWorker, allowed: Path) -> None:
    source, sink, topic = allowed / "in.txt", allowed / "out.txt", unique("ok")
    source.write_text("".join(f"line {n}\n" for n in range(20)))
    for name, config in (
        ("ok-src", {"connector.class": "FileStreamSource", "topic": topic, "file": str(source)}),
        ("ok-sink", {"connector.class": "FileStreamSink", "topics": topic, "file": str(sink)}),
    ):
        response = httpx.post(f"{guarded.url}/connectors", json={"name": name, "config": config}, timeout=60)
        assert response.status_code == 201, response.text
    wait_for(lambda: sink.exists() and len(sink.read_text().splitlines()) == 20, 180, "20 lines through both")


# ------------------------------------------------------------------ finding 5: the SQL transform
@pytest.mark.parametrize(
    ("statement", "rule"),
    [
        ("SELECT key, value, topic FROM text.`/etc/passwd`", "reads the file /etc/passwd through the text format"),
        ("SELECT reflect('java.lang.System', 'getenv', 'HOME') AS value, topic FROM records", "calls reflect()"),
        ("SELECT '${env:HOME}' AS value, topic FROM records", "holds ${env:HOME}: variable substitution"),
        (
            "SELECT r.key, c.value, r.topic FROM records r JOIN connect_offsets c ON r.key = c.key",
            "reads connect_offsets",
        ),
        ("CREATE TABLE stolen AS SELECT * FROM records", "not a query"),
    ],
    ids=["file", "reflect", "env", "second-relation", "ddl"],
)
def test_a_sql_transform_that_leaves_records_is_refused(
    guarded: RunningWorker, kafka: KafkaCluster, statement: str, rule: str
) -> None:
    topic = unique("sql")
    config = {
        "connector.class": "datagen",
        "topic": topic,
        "transforms": "q",
        "transforms.q.type": "sql",
        "transforms.q.statement": statement,
    }
    message = refused(guarded, unique("sql"), config)
    assert "The SQL statement of transforms.q.statement is refused: it " in message and rule in message
    assert any(rule in e for e in validate_errors(guarded, "datagen", config, "transforms.q.statement"))
    assert not topic_exists(kafka, topic)
    canary.unharmed(guarded)


# ------------------------------------------------------------------ configs stored before the rules
def test_configs_stored_before_the_rules_fail_their_tasks_instead_of_running(
    worker_factory: WorkerFactory, kafka: KafkaCluster, tmp_path: Path
) -> None:
    """Configs that reached the config topic without today's validation (an older worker wrote them)
    are refused when their tasks start: each task FAILED with the rule, nothing written or read."""
    group, pth = unique("stored"), SITE_PACKAGES / f"{unique('sparklink-stored')}.pth"
    sql_topic = unique("stored-sql")
    first = worker_factory(group)
    stored = {
        "old-sink": {"connector.class": "FileStreamSink", "topics": unique("t"), "file": str(pth)},
        "old-sql": {
            "connector.class": "datagen",
            "topic": sql_topic,
            "transforms": "q",
            "transforms.q.type": "sql",
            "transforms.q.statement": "SELECT * FROM records UNION ALL SELECT * FROM text.`/etc/passwd`",
        },
    }
    for name, config in stored.items():
        first.stores.configs.put_connector_config(name, {**config, "name": name}, TargetState.STARTED)
    first.stop()

    second = worker_factory(group)

    def failed(name: str) -> str:
        tasks = status(second.url, name)["tasks"]
        return str(tasks[0]["trace"]) if tasks and tasks[0]["state"] == "FAILED" else ""

    sink_trace = wait_for(lambda: failed("old-sink"), 120, "the stored sink's task FAILED")
    assert "inside the worker's own installation or Python path" in sink_trace
    sql_trace = wait_for(lambda: failed("old-sql"), 120, "the stored SQL transform's task FAILED")
    assert "reads the file /etc/passwd through the text format" in sql_trace
    assert not pth.exists()
    assert not topic_exists(kafka, sql_topic)
