"""Java Connect plugins from plugin.path on a real worker process (real Kafka, local Spark, real PostgreSQL),
and plugin names that are not plugins (issue 30; issue 28 finding 4).

One `sparklink worker` process serves the module. Its plugin.path holds the published plugins as the
bootstrap fetched them from Maven (Apache's connect-file 4.3.1, Debezium's PostgreSQL connector
3.6.1.Final, unmodified), the test Python plugins, a corrupt jar and a connector compiled here whose
start() throws. Its PYTHONPATH holds a marker module whose import would write a file: a REST body that
names it (or `os.system`, ...) as a plugin must get Connect's 400 and import nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer
from prometheus_client.parser import text_string_to_metric_families

from sparklink.clients.settings import client_config
from sparklink.platform import process
from sparklink.platform.kafka import KafkaCluster
from tests.conftest import TEST_PLUGIN_PATH, worker_props
from tests.helpers import create_topic, read_topic, topic_size, unique, wait_for
from tests.it.postgres import Postgres, postgres_server  # noqa: F401 (the session fixture)
from tests.support.java_plugins import (
    DEBEZIUM_POSTGRES,
    compile_plugin,
    debezium_postgres_config,
    plugin_dir,
    plugins_root,
)
from tests.worker_process import WorkerProcess

MARKER = "sparklink_import_marker"
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
POSTGRES = DEBEZIUM_POSTGRES
STRINGS = {
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.storage.StringConverter",
}

FAILING_START = """
package test.failing;

import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

public class FailingStartConnector extends SourceConnector {
    public static class NeverTask extends SourceTask {
        public String version() { return "1.0"; }
        public void start(Map<String, String> props) { }
        public List<SourceRecord> poll() { return null; }
        public void stop() { }
    }
    public String version() { return "1.0"; }
    public void start(Map<String, String> props) {
        throw new IllegalStateException("start refused by the test connector");
    }
    public Class<? extends Task> taskClass() { return NeverTask.class; }
    public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(); }
    public void stop() { }
    public ConfigDef config() { return new ConfigDef(); }
}
"""

# A connector whose class needs a helper its jar lacks (a missing dependency): it cannot be instantiated.
NEEDS_HELPER = """
package test.missing;

import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;

public class NeedsHelperConnector extends SourceConnector {
    private final Helper helper = new Helper();
    public String version() { return "1.0"; }
    public void start(Map<String, String> props) { }
    public Class<? extends Task> taskClass() { return null; }
    public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(); }
    public void stop() { }
    public ConfigDef config() { return new ConfigDef(); }
}
"""
MISSING_DEPENDENCY = {
    "test/missing/Helper.java": "package test.missing; public class Helper { }",
    "test/missing/NeedsHelperConnector.java": NEEDS_HELPER,
}
NEEDS_HELPER_CLASS = "test.missing.NeedsHelperConnector"

# One connector class, two plugin locations, two versions: version 2.0 declares one more config key.
VERSIONED = """
package test.versioned;

import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

public class VersionedConnector extends SourceConnector {
    public static class IdleTask extends SourceTask {
        public String version() { return "VERSION"; }
        public void start(Map<String, String> props) { }
        public List<SourceRecord> poll() throws InterruptedException { Thread.sleep(100); return null; }
        public void stop() { }
    }
    public String version() { return "VERSION"; }
    public void start(Map<String, String> props) { }
    public Class<? extends Task> taskClass() { return IdleTask.class; }
    public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(Map.of()); }
    public void stop() { }
    public ConfigDef config() {
        return new ConfigDef().define("key.of.VERSION", ConfigDef.Type.STRING, "", ConfigDef.Importance.LOW, "doc");
    }
}
"""
VERSIONED_CLASS = "test.versioned.VersionedConnector"

# A sink whose put() throws on the record "boom": Connect tolerates no put() failure, whatever errors.tolerance.
FAILING_PUT = """
package test.failingput;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;

public class FailingPutConnector extends SinkConnector {
    public static class FailingPutTask extends SinkTask {
        public String version() { return "1.0"; }
        public void start(Map<String, String> props) { }
        public void put(Collection<SinkRecord> records) {
            for (SinkRecord record : records) {
                if ("boom".equals(record.value())) {
                    throw new IllegalStateException("put refused the record at offset " + record.kafkaOffset());
                }
            }
        }
        public void stop() { }
    }
    public String version() { return "1.0"; }
    public void start(Map<String, String> props) { }
    public Class<? extends Task> taskClass() { return FailingPutTask.class; }
    public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(Map.of()); }
    public void stop() { }
    public ConfigDef config() { return new ConfigDef(); }
}
"""


# A source connector that drives its worker: as many tasks as its count file has lines, asking for a task
# reconfiguration when that changes; alterOffsets refuses an offset with a "refuse" field and applies the rest.
RECONFIGURING = """
package test.reconf;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

public class ReconfiguringConnector extends SourceConnector {
    public static class IdleTask extends SourceTask {
        public String version() { return "1.0"; }
        public void start(Map<String, String> props) { }
        public List<SourceRecord> poll() throws InterruptedException { Thread.sleep(100); return null; }
        public void stop() { }
    }
    private volatile boolean running;
    private volatile Path countFile;
    private Thread watcher;

    public String version() { return "1.0"; }
    public void start(Map<String, String> props) {
        countFile = Path.of(props.get("count.file"));
        running = true;
        final int first = count();
        watcher = new Thread(() -> {
            int last = first;
            while (running) {
                int now = count();
                if (now != last) {
                    last = now;
                    context().requestTaskReconfiguration();
                }
                try { Thread.sleep(200); } catch (InterruptedException e) { return; }
            }
        }, "reconfiguring-watcher");
        watcher.setDaemon(true);
        watcher.start();
    }
    private int count() {
        try { return Math.max(1, Files.readAllLines(countFile).size()); } catch (IOException e) { return 1; }
    }
    public Class<? extends Task> taskClass() { return IdleTask.class; }
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        List<Map<String, String>> configs = new ArrayList<>();
        for (int i = 0; i < Math.min(count(), maxTasks); i++) {
            configs.add(Map.of("slot", Integer.toString(i)));
        }
        return configs;
    }
    public void stop() {
        running = false;
        if (watcher != null) watcher.interrupt();
    }
    public ConfigDef config() {
        return new ConfigDef().define("count.file", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "tasks");
    }
    public ExactlyOnceSupport exactlyOnceSupport(Map<String, String> props) { return ExactlyOnceSupport.UNSUPPORTED; }
    public boolean alterOffsets(Map<String, String> config, Map<Map<String, ?>, Map<String, ?>> offsets) {
        for (Map<String, ?> offset : offsets.values()) {
            if (offset != null && offset.containsKey("refuse")) {
                throw new ConnectException("this connector refuses offsets with a 'refuse' field");
            }
        }
        return true;
    }
}
"""
RECONFIGURING_CLASS = "test.reconf.ReconfiguringConnector"

# A source whose task logs a line through SLF4J at INFO as it starts, as Debezium's tasks do: the line must reach
# the log of the JVM that runs the task (here the worker's, local mode), with its logger's name and the task's context.
CHATTY_TASK = """
package test.chatty;

import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public class ChattyTask extends SourceTask {
    private static final Logger log = LoggerFactory.getLogger(ChattyTask.class);
    public String version() { return "1.0"; }
    public void start(Map<String, String> props) { log.info("started with marker {}", props.get("marker")); }
    public List<SourceRecord> poll() throws InterruptedException { Thread.sleep(100); return null; }
    public void stop() { }
}
"""
CHATTY = """
package test.chatty;

import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;

public class ChattyConnector extends SourceConnector {
    private Map<String, String> props;
    public String version() { return "1.0"; }
    public void start(Map<String, String> props) { this.props = props; }
    public Class<? extends Task> taskClass() { return ChattyTask.class; }
    public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(props); }
    public void stop() { }
    public ConfigDef config() { return new ConfigDef(); }
}
"""
CHATTY_CLASS = "test.chatty.ChattyConnector"


@pytest.fixture(scope="module")
def bad_plugins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plugin.path entry with a corrupt jar, a connector whose start() throws, a connector whose class
    needs a class its jar lacks, one connector class in two versions, a sink whose put() throws, a source
    that asks for task reconfigurations and decides on offset changes, and a source whose task logs at INFO."""
    root = tmp_path_factory.mktemp("bad-plugins")
    (root / "corrupt-plugin").mkdir()
    (root / "corrupt-plugin" / "corrupt-plugin.jar").write_bytes(b"this is not a zip archive")
    compile_plugin(
        root / "failing-start",
        {"test/failing/FailingStartConnector.java": FAILING_START},
        {"org.apache.kafka.connect.source.SourceConnector": ["test.failing.FailingStartConnector"]},
    )
    compile_plugin(root / "missing-dependency", MISSING_DEPENDENCY, omit=("test/missing/Helper.class",))
    for version in ("1.0", "2.0"):
        source = VERSIONED.replace("VERSION", version)
        compile_plugin(root / f"versioned-{version}", {"test/versioned/VersionedConnector.java": source})
    compile_plugin(root / "failing-put", {"test/failingput/FailingPutConnector.java": FAILING_PUT})
    compile_plugin(root / "reconfiguring", {"test/reconf/ReconfiguringConnector.java": RECONFIGURING})
    compile_plugin(
        root / "chatty", {"test/chatty/ChattyConnector.java": CHATTY, "test/chatty/ChattyTask.java": CHATTY_TASK}
    )
    return root


@pytest.fixture(scope="module")
def marker(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the directory of the marker module, the file its import writes)."""
    directory = tmp_path_factory.mktemp("marker")
    witness = directory / "imported"
    (directory / f"{MARKER}.py").write_text(
        f"import pathlib\npathlib.Path({str(witness)!r}).write_text('imported')\nclass Anything: pass\n"
    )
    return directory, witness


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The only directory the worker's file connectors may use (its sparklink.file.allowed.paths)."""
    return tmp_path_factory.mktemp("files")


@pytest.fixture(scope="module")
def worker(
    kafka: KafkaCluster,
    tmp_path_factory: pytest.TempPathFactory,
    bad_plugins: Path,
    marker: tuple[Path, Path],
    files: Path,
) -> Iterator[WorkerProcess]:
    plugin_dir("connect-file"), plugin_dir("debezium-connector-postgres")  # fail early, saying what to run
    group = unique("java")
    plugin_path = ",".join(str(p) for p in (TEST_PLUGIN_PATH, plugins_root(), bad_plugins))
    settings = {"plugin.path": plugin_path, "sparklink.file.allowed.paths": str(files)}
    props = worker_props(kafka, group, tmp_path_factory.mktemp(group) / "state", **settings)
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(marker[0]), os.environ.get("PYTHONPATH", "")]))}
    started = WorkerProcess(props, tmp_path_factory.mktemp("java-worker"), log_level="INFO", env=env)
    try:
        yield started.start()
    finally:
        started.stop()


@pytest.fixture(scope="module")
def http(worker: WorkerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=worker.url, timeout=60) as client:
        yield client


def _status(http: httpx.Client, name: str) -> dict[str, Any]:
    response = http.get(f"/connectors/{name}/status")
    return response.json() if response.status_code == 200 else {}


def _running(http: httpx.Client, name: str, tasks: int = 1) -> bool:
    status = _status(http, name)
    states = [status.get("connector", {}).get("state"), *(t["state"] for t in status.get("tasks", []))]
    if "FAILED" in states:
        traces = [status["connector"].get("trace", ""), *(t.get("trace", "") for t in status["tasks"])]
        causes = [line for trace in traces for line in trace.splitlines() if not line.strip().startswith("at ")]
        raise AssertionError(f"{name} failed: {json.dumps(status)[:1000]}\n" + "\n".join(causes)[:4000])
    return states == ["RUNNING"] * (tasks + 1)


# ---------------------------------------------------------------------------------------- issue 28 finding 4
def test_a_module_named_as_a_plugin_is_connects_400_and_is_never_imported(
    worker: WorkerProcess, http: httpx.Client, marker: tuple[Path, Path]
) -> None:
    directory, witness = marker
    # A canary connector runs beside the refused requests, and keeps running.
    canary = unique("canary")
    config = {"connector.class": "datagen", "topic": canary, "total.records": "-1", "records.per.second": "5"}
    assert http.put(f"/connectors/{canary}/config", json=config).status_code == 201
    wait_for(lambda: _running(http, canary), 120, "the canary RUNNING")
    # The marker is importable where the worker runs: importing it would leave the file.
    probe = subprocess.run(
        [sys.executable, "-c", f"import {MARKER}"], env={**os.environ, "PYTHONPATH": str(directory)}, check=False
    )
    assert probe.returncode == 0 and witness.exists()
    witness.unlink()

    for name in ("os.system", "subprocess.Popen", "http.server.HTTPServer", f"{MARKER}.Anything"):
        connector = unique("not-a-plugin")
        created = http.post("/connectors", json={"name": connector, "config": {"connector.class": name}})
        assert created.status_code == 400
        assert created.json()["error_code"] == 400
        assert created.json()["message"].startswith(
            f"Failed to find any class that implements Connector and which name matches {name}, "
        )
        put = http.put(f"/connectors/{connector}/config", json={"connector.class": name})
        assert put.status_code == 400 and "which name matches " + name in put.json()["message"]
        validated = http.put(f"/connector-plugins/{name}/config/validate", json={"connector.class": name})
        assert validated.status_code == 400 and "which name matches " + name in validated.json()["message"]
        described = http.get(f"/connector-plugins/{name}/config")
        assert described.status_code == 404 and described.json()["message"] == f"Unknown plugin {name}."
        for key in ("key.converter", "transforms.t.type"):
            config = {"connector.class": FILE_SOURCE, "topic": "t", "file": "/dev/null", key: name}
            if key.startswith("transforms"):
                config["transforms"] = "t"
            answer = http.put(f"/connector-plugins/{FILE_SOURCE}/config/validate", json=config)
            assert answer.status_code == 200
            errors = {c["value"]["name"]: c["value"]["errors"] for c in answer.json()["configs"]}
            assert any(name in e for e in errors[key]), errors[key]
        assert http.get(f"/connectors/{connector}").status_code == 404
    assert not witness.exists(), "a plugin name imported the marker module"
    assert process.alive(worker.pid) and http.get("/health").status_code == 200
    assert _running(http, canary)
    assert http.delete(f"/connectors/{canary}").status_code == 204


# ---------------------------------------------------------------------------------------- listings
def test_connector_plugins_list_the_java_plugins_of_plugin_path_with_the_built_ins(http: httpx.Client) -> None:
    listed = http.get("/connector-plugins").json()
    entries = {(p["class"], p["type"], p["version"]) for p in listed}
    assert (FILE_SOURCE, "source", "4.3.1") in entries, sorted(entries)
    assert (FILE_SINK, "sink", "4.3.1") in entries
    assert (POSTGRES, "source", "3.6.1.Final") in entries
    assert ("test.failing.FailingStartConnector", "source", "1.0") in entries
    assert any(c == "sparklink.connectors.datagen.DatagenConnector" for c, _, _ in entries)  # a built-in
    assert {p["type"] for p in listed} == {"source", "sink"}

    everything = http.get("/connector-plugins", params={"connectorsOnly": "false"}).json()
    by_class = {(p["class"], p["type"]): p["version"] for p in everything}
    assert by_class[("io.debezium.transforms.ExtractNewRecordState", "transformation")] == "3.6.1.Final"
    assert by_class[("io.debezium.converters.BinaryDataConverter", "converter")] == "3.6.1.Final"
    assert ("org.apache.kafka.connect.json.JsonConverter", "converter") in by_class
    assert ("org.apache.kafka.connect.transforms.InsertField$Value", "transformation") in by_class
    kinds = [p["type"] for p in everything]
    # Connect's order: connectors, then transformations, predicates, converters, header converters.
    order = ["source", "sink", "transformation", "predicate", "converter", "header_converter"]
    assert kinds == sorted(kinds, key=lambda kind: order.index(kind) if kind != "sink" else 0)


# ---------------------------------------------------------------------------------------- Apache's connect-file
def test_apache_file_connectors_from_plugin_path_carry_a_file_through_kafka_to_a_file(
    kafka: KafkaCluster, http: httpx.Client, files: Path
) -> None:
    run = files / unique("run")
    run.mkdir()
    source_file, sink_file, topic = run / "in.txt", run / "out.txt", unique("apache-file")
    expected = [f"line {n} ü" for n in range(200)]
    source_file.write_text("".join(f"{line}\n" for line in expected), "utf-8")
    create_topic(kafka.bootstrap_servers, topic)
    source, sink = unique("apache-src"), unique("apache-sink")
    body = {"connector.class": FILE_SOURCE, "file": str(source_file), "topic": topic, **STRINGS}
    assert http.put(f"/connectors/{source}/config", json=body).status_code == 201
    body = {"connector.class": FILE_SINK, "file": str(sink_file), "topics": topic, **STRINGS}
    assert http.put(f"/connectors/{sink}/config", json=body).status_code == 201
    wait_for(lambda: _running(http, source) and _running(http, sink), 180, "both Apache file connectors RUNNING")

    def lines() -> list[str]:
        return sink_file.read_text("utf-8").splitlines() if sink_file.exists() else []

    # A task that fails on the way raises with its status (its Java trace).
    wait_for(
        lambda: _running(http, source) and _running(http, sink) and len(lines()) >= len(expected),
        180,
        "every line in the sink file",
    )
    assert lines() == expected
    records = read_topic(kafka.bootstrap_servers, topic, len(expected))
    assert [r.value().decode() for r in records] == expected  # StringConverter's bytes, in order
    # Apache's source stores its position in characters read (the built-in one counts bytes): this ran the jar.
    chars = len(source_file.read_text("utf-8"))
    assert chars != source_file.stat().st_size

    def stored() -> list[dict[str, Any]]:
        return list(http.get(f"/connectors/{source}/offsets").json().get("offsets", []))

    wait_for(lambda: stored() and stored()[0]["offset"] == {"position": chars}, 60, "Apache's stored position")
    assert stored() == [{"partition": {"filename": str(source_file)}, "offset": {"position": chars}}]
    for name in (source, sink):
        assert http.delete(f"/connectors/{name}").status_code == 204


def _stored(http: httpx.Client, name: str) -> list[dict[str, Any]]:
    response = http.get(f"/connectors/{name}/offsets")
    return list(response.json().get("offsets", [])) if response.status_code == 200 else []


def test_a_recreated_apache_file_source_resumes_from_its_stored_position(
    kafka: KafkaCluster, http: httpx.Client, files: Path
) -> None:
    """As the built-in's scenario (test_file_connectors): deleted and created again under its name, the
    source goes on from the position Connect stored for its file - no line twice, none lost."""
    run = files / unique("resume")
    run.mkdir()
    source_file, topic, name = run / "log.txt", unique("apache-resume"), unique("apache-tail")
    # ASCII: Apache's task stores its position in characters but skips bytes to resume (FileStreamSourceTask),
    # so in Connect too a file with multi-byte characters resumes mid-line.
    source_file.write_text("".join(f"first {n}\n" for n in range(5)), "utf-8")
    create_topic(kafka.bootstrap_servers, topic)
    # Apache's default batch.size: its task hands out only the lines of its latest read (a batch.size below the
    # lines already read leaves the rest until the file grows), as in Connect.
    body = {"connector.class": FILE_SOURCE, "file": str(source_file), "topic": topic, **STRINGS}

    def position() -> int:
        stored = _stored(http, name)
        return int(stored[0]["offset"]["position"]) if stored else -1

    def chars() -> int:
        return len(source_file.read_text("utf-8"))

    def explain() -> dict[str, Any]:
        return {"status": _status(http, name), "stored": _stored(http, name), "chars": chars()}

    assert http.put(f"/connectors/{name}/config", json=body).status_code == 201
    wait_for(lambda: _running(http, name) and position() == chars(), 180, "the first run's position", explain=explain)
    assert http.delete(f"/connectors/{name}").status_code == 204
    wait_for(lambda: http.get(f"/connectors/{name}").status_code == 404, 60, "the connector deleted")

    with source_file.open("a", encoding="utf-8") as handle:  # written while no task runs
        handle.write("".join(f"second {n}\n" for n in range(3)))
    assert http.put(f"/connectors/{name}/config", json=body).status_code == 201
    wait_for(lambda: _running(http, name), 180, "the recreated source RUNNING")
    with source_file.open("a", encoding="utf-8") as handle:  # written after the re-creation
        handle.write("".join(f"third {n}\n" for n in range(2)))

    expected = [f"first {n}" for n in range(5)] + [f"second {n}" for n in range(3)] + [f"third {n}" for n in range(2)]
    records = read_topic(kafka.bootstrap_servers, topic, len(expected), timeout=180)
    assert [r.value().decode() for r in records] == expected
    wait_for(lambda: _running(http, name) and position() == chars(), 60, "the second run's position", explain=explain)
    assert topic_size(kafka.bootstrap_servers, topic) == len(expected)  # nothing sent twice
    assert http.delete(f"/connectors/{name}").status_code == 204


def test_an_apache_file_sink_started_behind_a_backlog_writes_it_all_in_order_in_bounded_batches(
    kafka: KafkaCluster, worker: WorkerProcess, http: httpx.Client, files: Path
) -> None:
    """As the built-in's scenario: a sink created after its topic filled reads the backlog in micro-batches of
    at most `sparklink.max.records.per.batch` (lowered to keep the topic small) and writes every record, in
    order. The batch sizes are Connect's connector-task-metrics on /metrics."""
    topic, name = unique("apache-backlog"), unique("apache-backlog")
    sink_file = files / f"{name}.txt"
    create_topic(kafka.bootstrap_servers, topic)
    expected = [f"record {n}" for n in range(200)]
    _produce(kafka, topic, [line.encode() for line in expected])
    body = {"connector.class": FILE_SINK, "file": str(sink_file), "topics": topic, **STRINGS}
    body["sparklink.max.records.per.batch"] = "40"
    assert http.put(f"/connectors/{name}/config", json=body).status_code == 201

    def lines() -> list[str]:
        return sink_file.read_text("utf-8").splitlines() if sink_file.exists() else []

    wait_for(lambda: _running(http, name) and len(lines()) >= len(expected), 180, "the whole backlog in the file")
    assert lines() == expected

    def batch_size_max() -> float | None:
        for family in text_string_to_metric_families(http.get("/metrics").text):
            for sample in family.samples:
                if sample.name.endswith("batch_size_max") and sample.labels.get("connector", "").strip('"') == name:
                    return float(sample.value)
        return None

    assert wait_for(batch_size_max, 30, "the task's batch sizes on /metrics") == 40
    assert http.delete(f"/connectors/{name}").status_code == 204


def test_apache_file_connectors_from_plugin_path_keep_the_workers_file_rules(
    http: httpx.Client, files: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("not for connectors\n")
    for cls, key, extra in ((FILE_SOURCE, "file", {"topic": "t"}), (FILE_SINK, "file", {"topics": "t"})):
        name = unique("outside")
        body = {"connector.class": cls, key: str(outside), **extra, **STRINGS}
        response = http.put(f"/connectors/{name}/config", json=body)
        assert response.status_code == 400, response.text
        assert "sparklink.file.allowed.paths" in response.text and str(files) in response.text, response.text
        assert name not in http.get("/connectors").json()


# ---------------------------------------------------------------------------------------- Debezium
def _debezium(postgres: Postgres, prefix: str, table: str) -> dict[str, str]:
    return debezium_postgres_config(postgres, prefix, table, slot=prefix.replace("-", "_"))


def test_debezium_validate_without_database_hostname_answers_with_debeziums_own_error(
    http: httpx.Client, postgres: Postgres
) -> None:
    config = _debezium(postgres, "validate", "nothing")
    del config["database.hostname"]
    answer = http.put(f"/connector-plugins/{POSTGRES}/config/validate", json=config)
    assert answer.status_code == 200, answer.text
    values = {c["value"]["name"]: c["value"] for c in answer.json()["configs"]}
    errors = values["database.hostname"]["errors"]
    assert errors == ["The 'database.hostname' value is invalid: A value is required"], errors
    assert answer.json()["error_count"] >= 1
    assert values["database.password"]["value"] == "[hidden]"  # a secret never appears in the answer
    refused = http.put(f"/connectors/{unique('debezium')}/config", json=config)
    assert refused.status_code == 400
    assert "The 'database.hostname' value is invalid: A value is required" in refused.json()["message"]
    assert postgres.password not in refused.text and postgres.password not in answer.text


def test_debezium_postgres_snapshot_then_inserts_updates_and_deletes_reach_kafka_as_change_events(
    kafka: KafkaCluster, http: httpx.Client, postgres: Postgres
) -> None:
    table, prefix = unique("cdc").replace("-", "_"), unique("dbz")
    postgres.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, name TEXT NOT NULL, qty INT)")
    postgres.execute(f"ALTER TABLE {table} REPLICA IDENTITY FULL")  # whole rows before updates and deletes
    postgres.execute(f"INSERT INTO {table} VALUES (1, 'apple', 3), (2, 'pear', 5)")
    name = unique("debezium")
    assert http.put(f"/connectors/{name}/config", json=_debezium(postgres, prefix, table)).status_code == 201
    topic = f"{prefix}.public.{table}"
    try:
        wait_for(lambda: _running(http, name), 180, "the Debezium connector and its task RUNNING")
        wait_for(lambda: _running(http, name) and topic_size(kafka.bootstrap_servers, topic) >= 2, 180, "the snapshot")
        snapshot = read_topic(kafka.bootstrap_servers, topic, 2)
        events = [json.loads(r.value()) for r in snapshot]
        assert [(e["op"], e["after"]) for e in events] == [
            ("r", {"id": 1, "name": "apple", "qty": 3}),
            ("r", {"id": 2, "name": "pear", "qty": 5}),
        ]
        assert [json.loads(r.key()) for r in snapshot] == [{"id": 1}, {"id": 2}]

        # Streaming starts once the snapshot is done: changes made now reach Kafka from the WAL.
        postgres.execute(f"INSERT INTO {table} VALUES (3, 'plum', 7)")
        postgres.execute(f"UPDATE {table} SET qty = 4 WHERE id = 1")
        postgres.execute(f"DELETE FROM {table} WHERE id = 2")
        records = read_topic(kafka.bootstrap_servers, topic, 6, timeout=120)  # 3 changes and a tombstone
        changes = [(json.loads(r.key()), json.loads(r.value()) if r.value() is not None else None) for r in records[2:]]
        assert [(k, v["op"], v["before"], v["after"]) for k, v in changes if v is not None] == [
            ({"id": 3}, "c", None, {"id": 3, "name": "plum", "qty": 7}),
            ({"id": 1}, "u", {"id": 1, "name": "apple", "qty": 3}, {"id": 1, "name": "apple", "qty": 4}),
            ({"id": 2}, "d", {"id": 2, "name": "pear", "qty": 5}, None),
        ]
        assert changes[-1] == ({"id": 2}, None)  # Debezium's tombstone after a delete
        source = json.loads(records[2].value())["source"]
        assert (source["connector"], source["version"], source["table"]) == ("postgresql", "3.6.1.Final", table)
    finally:
        http.delete(f"/connectors/{name}")
        wait_for(lambda: http.get(f"/connectors/{name}").status_code == 404, 60, "the connector deleted")
        # The slot would otherwise hold WAL for the rest of the session.
        wait_for(lambda: postgres.drop_slot(prefix.replace("-", "_")), 60, "the replication slot dropped")


# ---------------------------------------------------------------------------------------- bad plugins
def test_a_corrupt_jar_is_reported_once_and_left_out_and_a_throwing_start_fails_with_its_java_trace(
    worker: WorkerProcess, http: httpx.Client, bad_plugins: Path
) -> None:
    corrupt = str(bad_plugins / "corrupt-plugin")
    log = worker.log.read_text(errors="replace")
    reports = [line for line in log.splitlines() if corrupt in line and "ERROR" in line]
    assert len(reports) == 1, reports
    assert all(corrupt not in json.dumps(p) for p in http.get("/connector-plugins?connectorsOnly=false").json())

    # A connector already running beside the failing one, which must keep running.
    canary = unique("canary")
    config = {"connector.class": "datagen", "topic": canary, "total.records": "-1", "records.per.second": "5"}
    assert http.put(f"/connectors/{canary}/config", json=config).status_code == 201
    wait_for(lambda: _running(http, canary), 120, "the canary RUNNING")
    name = unique("failing-start")
    assert http.put(f"/connectors/{name}/config", json={"connector.class": "FailingStartConnector"}).status_code == 201

    def failed() -> dict[str, Any] | None:
        connector = _status(http, name).get("connector", {})
        return connector if connector.get("state") == "FAILED" else None

    state = wait_for(failed, 120, "the connector FAILED")
    assert state["trace"].startswith("java.lang.IllegalStateException: start refused by the test connector")
    assert "at test.failing.FailingStartConnector.start(" in state["trace"]
    # The worker and its other plugins go on.
    assert http.get("/health").status_code == 200
    assert any(p["class"] == FILE_SOURCE for p in http.get("/connector-plugins").json())
    assert _running(http, canary) and process.alive(worker.pid)
    assert http.delete(f"/connectors/{name}").status_code == 204
    assert http.delete(f"/connectors/{canary}").status_code == 204


def test_a_plugin_class_that_fails_to_load_is_logged_with_its_jar_left_out_and_answered_with_connects_400(
    worker: WorkerProcess, http: httpx.Client, bad_plugins: Path
) -> None:
    jar = str(bad_plugins / "missing-dependency" / "plugin.jar")
    log = worker.log.read_text(errors="replace")
    reports = [line for line in log.splitlines() if NEEDS_HELPER_CLASS in line and jar in line]
    assert len(reports) == 1, reports  # logged once, as Connect's scanner does ("Failed to discover ...": ERROR)
    assert "ERROR" in reports[0] and "NoClassDefFoundError" in reports[0] and "test/missing/Helper" in reports[0]
    listed = http.get("/connector-plugins?connectorsOnly=false").json()
    assert all(p["class"] != NEEDS_HELPER_CLASS for p in listed)

    name = unique("needs-helper")
    response = http.put(f"/connectors/{name}/config", json={"connector.class": NEEDS_HELPER_CLASS})
    assert response.status_code == 400, response.text
    assert response.json()["message"].startswith(
        f"Failed to find any class that implements Connector and which name matches {NEEDS_HELPER_CLASS}, "
        "available connectors are: "
    )
    assert name not in http.get("/connectors").json()
    # The worker and its other plugins go on.
    assert http.get("/health").status_code == 200
    assert any(p["class"] == FILE_SOURCE for p in http.get("/connector-plugins").json())


def test_one_connector_class_in_two_versions_is_listed_per_version_runs_its_latest_and_refuses_other_versions(
    http: httpx.Client,
) -> None:
    listed = [p for p in http.get("/connector-plugins").json() if p["class"] == VERSIONED_CLASS]
    assert sorted(p["version"] for p in listed) == ["1.0", "2.0"], listed  # Connect 4.x lists every version
    keys = [k["name"] for k in http.get("/connector-plugins/VersionedConnector/config").json()]
    assert "key.of.2.0" in keys and "key.of.1.0" not in keys  # the class loads from its latest version

    name = unique("versioned")
    body = {"connector.class": VERSIONED_CLASS, "connector.plugin.version": "3.0"}
    response = http.put(f"/connectors/{name}/config", json=body)
    assert response.status_code == 400, response.text
    missing = f"Plugin {VERSIONED_CLASS} not found that matches the version range [3.0,3.0], available versions: "
    missing += "[1.0, 2.0]"  # Connect's words: its maven-artifact VersionRange prints the version "3.0" so
    assert response.json()["message"].startswith(
        f"Connector configuration is invalid and contains the following 2 error(s):\n{missing}\n{missing}\n"
    ), response.text
    # An installed version other than the latest: refused too (this worker runs only the latest).
    response = http.put(f"/connectors/{name}/config", json={**body, "connector.plugin.version": "1.0"})
    assert response.status_code == 400 and "runs only the latest installed version" in response.text, response.text
    assert name not in http.get("/connectors").json()

    for version in ("2.0", "[2.0,)", "latest"):  # the latest, as a version, a range and Connect's word for it
        config = {"name": name, "connector.class": VERSIONED_CLASS, "connector.plugin.version": version}
        answer = http.put("/connector-plugins/VersionedConnector/config/validate", json=config).json()
        assert {c["value"]["name"]: c["value"]["errors"] for c in answer["configs"] if c["value"]["errors"]} == {}
    assert http.put(f"/connectors/{name}/config", json={"connector.class": VERSIONED_CLASS}).status_code == 201
    wait_for(lambda: _running(http, name), 120, "the connector RUNNING from its latest version")
    assert http.delete(f"/connectors/{name}").status_code == 204


# ---------------------------------------------------------------------------------------- Java sink errors
def _produce(kafka: KafkaCluster, topic: str, values: list[bytes]) -> None:
    producer = Producer(client_config(kafka.bootstrap_servers))
    for value in values:
        producer.produce(topic, value=value)
    assert producer.flush(30) == 0


def _errors(dlq: str) -> dict[str, str]:
    return {
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true",
    }


def test_a_record_a_java_sinks_converter_cannot_read_goes_to_the_dlq_with_connects_headers_and_the_task_runs_on(
    kafka: KafkaCluster, http: httpx.Client, files: Path
) -> None:
    topic, dlq, name = unique("java-poisoned"), unique("java-dlq"), unique("java-tolerant")
    sink_file = files / f"{name}.txt"
    create_topic(kafka.bootstrap_servers, topic)
    json_values = {
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    }
    body = {"connector.class": FILE_SINK, "file": str(sink_file), "topics": topic, **STRINGS, **json_values}
    assert http.put(f"/connectors/{name}/config", json={**body, **_errors(dlq)}).status_code == 201
    wait_for(lambda: _running(http, name), 180, "the Java sink RUNNING")
    _produce(kafka, topic, [b'"first"', b"{not json", b'"second"'])

    def lines() -> list[str]:
        return sink_file.read_text("utf-8").splitlines() if sink_file.exists() else []

    wait_for(lambda: _running(http, name) and len(lines()) >= 2, 180, "the two good records in the file")
    assert lines() == ["first", "second"]
    (dead,) = read_topic(kafka.bootstrap_servers, dlq, 1)
    assert dead.value() == b"{not json"  # the original record, as it was read
    headers = {k: v.decode() for k, v in dead.headers()}
    assert headers["__connect.errors.topic"] == topic
    assert headers["__connect.errors.partition"] == "0"
    assert headers["__connect.errors.offset"] == "1"
    assert headers["__connect.errors.connector.name"] == name
    assert headers["__connect.errors.task.id"] == "0"
    assert headers["__connect.errors.stage"] == "VALUE_CONVERTER"
    assert headers["__connect.errors.class.name"] == "org.apache.kafka.connect.json.JsonConverter"
    assert headers["__connect.errors.exception.class.name"] == "org.apache.kafka.connect.errors.DataException"
    assert headers["__connect.errors.exception.message"].startswith("Converting byte[] to Kafka Connect data")
    assert headers["__connect.errors.exception.stacktrace"].startswith("org.apache.kafka.connect.errors.DataException")
    assert _running(http, name)
    assert http.delete(f"/connectors/{name}").status_code == 204


def test_a_java_sinks_put_failure_fails_the_task_even_with_errors_tolerance_all_as_in_connect(
    kafka: KafkaCluster, http: httpx.Client
) -> None:
    topic, dlq, name = unique("java-put"), unique("java-put-dlq"), unique("java-put")
    create_topic(kafka.bootstrap_servers, topic)
    body = {"connector.class": "test.failingput.FailingPutConnector", "topics": topic, **STRINGS, **_errors(dlq)}
    assert http.put(f"/connectors/{name}/config", json=body).status_code == 201
    wait_for(lambda: _running(http, name), 180, "the failing-put sink RUNNING")
    _produce(kafka, topic, [b"fine", b"boom"])

    def failed() -> dict[str, Any] | None:
        tasks = _status(http, name).get("tasks", [])
        return tasks[0] if tasks and tasks[0]["state"] == "FAILED" else None

    task = wait_for(failed, 180, "the task FAILED")
    assert "java.lang.IllegalStateException: put refused the record at offset 1" in task["trace"]
    assert topic_size(kafka.bootstrap_servers, dlq) == 0  # Connect's DLQ takes conversion and transform failures only
    assert http.delete(f"/connectors/{name}").status_code == 204


# ---------------------------------------------------------------------------------------- a Java connector's calls
def test_a_java_connectors_request_for_task_reconfiguration_commits_its_new_task_configs(
    http: httpx.Client, tmp_path: Path
) -> None:
    count = tmp_path / "tasks.txt"
    count.write_text("one\n")
    name = unique("reconf")
    body = {"connector.class": RECONFIGURING_CLASS, "count.file": str(count), "tasks.max": "3"}
    assert http.put(f"/connectors/{name}/config", json=body).status_code == 201

    def task_slots() -> list[str]:
        return [t["config"].get("slot", "") for t in http.get(f"/connectors/{name}/tasks").json()]

    wait_for(lambda: task_slots() == ["0"] and _running(http, name), 120, "one task RUNNING")
    count.write_text("one\ntwo\nthree\n")  # the connector notices and calls requestTaskReconfiguration()
    wait_for(lambda: task_slots() == ["0", "1", "2"], 120, "three task configs", explain=task_slots)
    wait_for(lambda: _running(http, name, 3), 120, "three tasks RUNNING")
    assert http.delete(f"/connectors/{name}").status_code == 204


def test_a_java_connectors_alter_offsets_applies_a_change_and_its_refusal_is_a_400_with_its_message(
    http: httpx.Client, tmp_path: Path
) -> None:
    count = tmp_path / "tasks.txt"
    count.write_text("one\n")
    name = unique("offsets")
    body = {"connector.class": RECONFIGURING_CLASS, "count.file": str(count)}
    assert http.put(f"/connectors/{name}/config", json=body).status_code == 201
    wait_for(lambda: _running(http, name), 120, "RUNNING")
    assert http.put(f"/connectors/{name}/stop").status_code == 204
    wait_for(lambda: _status(http, name)["connector"]["state"] == "STOPPED", 60, "STOPPED")

    entry = {"partition": {"shard": "a"}, "offset": {"position": 7}}
    altered = http.patch(f"/connectors/{name}/offsets", json={"offsets": [entry]})
    assert altered.status_code == 200, altered.text
    # The connector said it applied the change (alterOffsets returned true): Connect's words for that.
    assert altered.json() == {"message": "The offsets for this connector have been altered successfully"}
    assert http.get(f"/connectors/{name}/offsets").json() == {"offsets": [entry]}

    refused = http.patch(
        f"/connectors/{name}/offsets", json={"offsets": [{"partition": {"shard": "a"}, "offset": {"refuse": 1}}]}
    )
    assert refused.status_code == 400, refused.text
    assert "this connector refuses offsets with a 'refuse' field" in refused.json()["message"]
    assert http.get(f"/connectors/{name}/offsets").json() == {"offsets": [entry]}  # nothing of it stored
    assert http.delete(f"/connectors/{name}").status_code == 204


# ---------------------------------------------------------------------------------------- a Java task's own log lines
def test_a_java_tasks_info_line_reaches_the_workers_log_with_its_logger_and_task_after_other_spark_work(
    kafka: KafkaCluster, worker: WorkerProcess, http: httpx.Client
) -> None:
    # Spark work of another task first, in the same JVM (local mode: the driver is the executor).
    topic, before = unique("before-chatty"), unique("before")
    config = {"connector.class": "datagen", "topic": topic, "total.records": "5", "records.per.second": "50"}
    assert http.put(f"/connectors/{before}/config", json=config).status_code == 201
    wait_for(lambda: topic_size(kafka.bootstrap_servers, topic) >= 5, 120, "the datagen task's records")
    assert http.delete(f"/connectors/{before}").status_code == 204

    name, marker = unique("chatty"), unique("marker")
    assert (
        http.put(f"/connectors/{name}/config", json={"connector.class": CHATTY_CLASS, "marker": marker}).status_code
        == 201
    )
    try:

        def line() -> str | None:
            said = f"started with marker {marker}"  # the task's words (the worker's own lines name the marker too)
            found = [text for text in worker.log.read_text(errors="replace").splitlines() if said in text]
            return found[0] if found else None

        # At INFO, where the driver's Spark lines go, in its layout: the logger's name, then Connect's task context.
        logged = wait_for(line, 120, "the Java task's INFO line in the worker's log")
        assert f" INFO ChattyTask: [{name}|task-0] started with marker {marker}" in logged, logged
    finally:
        assert http.delete(f"/connectors/{name}").status_code == 204
