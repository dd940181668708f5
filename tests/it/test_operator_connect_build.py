"""KafkaConnect `spec.build.plugins` end to end on the local runtime: a real kube-apiserver + etcd, real Kafka,
`sparklink operator run` and its real workers (the fixtures of test_operator_connect), and the artifacts served
by a local HTTP server: Apache's connect-file jar the bootstrap fetched, less its sink connector, as a `jar`,
inside a `tgz` and a `zip`; and connect-file as published, as `maven`, resolved with its runtime dependencies
by the real `mvn` from Maven Central (the bootstrap's Maven run left them all in ~/.m2, so nothing is
downloaded). The module shares one KafkaConnect with that build; its connector runs the jar's FileStreamSource.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparklink.platform.kafka import KafkaCluster
from tests.helpers import unique, wait_for
from tests.it.operator_fixtures import (
    Kube,
    OperatorProcess,
    conditions,
    connector_state,
    is_ready,
    kafka_connect_body,
    task_states,
)
from tests.support.artifact_server import ArtifactServer, artifact_server, sha512, tgz, zipped
from tests.support.java_plugins import plugin_dir

pytestmark = [pytest.mark.kafka, pytest.mark.kube]

CONNECT = "build-connect"
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"  # in the maven plugin only
MAVEN = ("org.apache.kafka", "connect-file", "4.3.1")
# connect-file's pom: connect-api and slf4j-api at runtime scope; kafka-clients comes with connect-api.
MAVEN_DEPENDENCIES = ("connect-api-4.3.1.jar", "slf4j-api-1.7.36.jar", "kafka-clients-4.3.1.jar")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArtifactServer]:
    with artifact_server(tmp_path_factory.mktemp("artifacts")) as server:
        yield server


@pytest.fixture(scope="module")
def jar() -> bytes:
    """The connect-file jar without its sink connector (nor the sink's service entry), so that Connect can list
    FileStreamSinkConnector only from the maven plugin, which Maven resolves as published."""
    (only,) = plugin_dir("connect-file").glob("connect-file-*.jar")
    out = io.BytesIO()
    with zipfile.ZipFile(only) as full, zipfile.ZipFile(out, "w") as stripped:
        for info in full.infolist():
            if "FileStreamSink" not in info.filename and not info.filename.endswith("sink.SinkConnector"):
                stripped.writestr(info, full.read(info))
    return out.getvalue()


@pytest.fixture(scope="module")
def build(served: ArtifactServer, jar: bytes) -> dict[str, Any]:
    """Four plugins, one per artifact type: the source-only connect-file jar as jar, tgz and zip, and the
    published connect-file with its runtime dependencies from Maven Central as maven."""
    archive = tgz({"connect-file/connect-file.jar": jar})
    return {
        "plugins": [
            {
                "name": "file-jar",
                "artifacts": [{"type": "jar", "url": served.put("connect-file.jar", jar), "sha512sum": sha512(jar)}],
            },
            {
                "name": "file-tgz",
                "artifacts": [{"type": "tgz", "url": served.put("file.tgz", archive), "sha512sum": sha512(archive)}],
            },
            {"name": "file-zip", "artifacts": [{"type": "zip", "url": served.put("file.zip", zipped({"f.jar": jar}))}]},
            {
                "name": "file-maven",
                "artifacts": [
                    {
                        "type": "maven",
                        "group": MAVEN[0],
                        "artifact": MAVEN[1],
                        "version": MAVEN[2],
                        "includeScope": "runtime",
                    }
                ],
            },
        ]
    }


@pytest.fixture(scope="module")
def connect(
    kubeobj: Kube, operator_process: OperatorProcess, kafka: KafkaCluster, build: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    """The module's KafkaConnect with spec.build, Ready (its workers run the built plugins)."""
    body = kafka_connect_body(CONNECT, kafka.bootstrap_servers)
    body["spec"]["build"] = build
    kubeobj.create(body)
    yield kubeobj.wait("KafkaConnect", CONNECT, is_ready, "Ready", timeout=300)
    kubeobj.delete("KafkaConnect", CONNECT)


def plugins_root(operator_process: OperatorProcess, kubeobj: Kube) -> Path:
    return operator_process.state_dir / "workers" / kubeobj.ns / "KafkaConnect" / CONNECT / "plugins"


def test_built_plugins_are_installed_listed_in_the_status_and_run_a_connector(
    kubeobj: Kube, connect: dict[str, Any], operator_process: OperatorProcess, jar: bytes
) -> None:
    # One build directory, holding each plugin in Strimzi's <plugin>/<hash stub>/ layout.
    (installed,) = [p for p in plugins_root(operator_process, kubeobj).iterdir()]
    jars = {
        p.relative_to(installed).parts[0]: p
        for p in installed.rglob("*.jar")
        if p.parent.parent.name != "file-maven" or p.name == "connect-file-4.3.1.jar"  # not its dependencies
    }
    assert sorted(jars) == ["file-jar", "file-maven", "file-tgz", "file-zip"]
    assert all(jars[name].read_bytes() == jar for name in ("file-jar", "file-tgz", "file-zip"))
    # The maven artifact came with its runtime dependencies, next to its jar in Strimzi's <plugin>/<hash> layout.
    maven_dir = jars["file-maven"].parent
    assert jars["file-maven"].name == "connect-file-4.3.1.jar" and maven_dir.parent.name == "file-maven"
    assert set(MAVEN_DEPENDENCIES) <= {p.name for p in maven_dir.iterdir()}
    assert not list(installed.rglob("pom.xml"))
    # The workers run with it on plugin.path (after the operator's own entry): Connect lists the jar's connectors,
    # and so does the status.
    properties = operator_process.worker_log("KafkaConnect", CONNECT).with_name("worker.properties").read_text()
    assert f",{installed}\n" in properties
    listed = {(p["class"], p.get("version")) for p in connect["status"].get("connectorPlugins", [])}
    assert (FILE_SOURCE, "4.3.1") in listed, sorted(listed)
    assert (FILE_SINK, "4.3.1") in listed, sorted(listed)  # loaded from the jars Maven resolved
    assert [
        c for c in conditions(connect, "Warning") if c.get("reason") in ("BuildOptionIgnored", "InvalidBuild")
    ] == []
    with operator_process.rest("KafkaConnect", CONNECT) as rest:
        answer = rest.get(f"{connect['status']['url']}/connector-plugins").json()
    assert {FILE_SOURCE, FILE_SINK} <= {p["class"] for p in answer}
    # A connector of the built plugin runs.
    source = operator_process.files_dir("KafkaConnect", CONNECT) / "in.txt"
    source.write_text("one\ntwo\n")
    name = unique("built-file")
    kubeobj.create(
        {
            "apiVersion": "kafka.strimzi.io/v1",
            "kind": "KafkaConnector",
            "metadata": {"name": name, "labels": {"strimzi.io/cluster": CONNECT}},
            "spec": {"class": FILE_SOURCE, "tasksMax": 1, "config": {"file": str(source), "topic": f"{name}-out"}},
        }
    )

    def running(obj: dict[str, Any]) -> bool:
        return connector_state(obj) == "RUNNING" and task_states(obj) == ["RUNNING"] and is_ready(obj)

    kubeobj.wait("KafkaConnector", name, running, "RUNNING", timeout=180)
    kubeobj.delete("KafkaConnector", name)


def test_a_wrong_sha512sum_is_not_ready_installs_nothing_and_the_workers_keep_their_plugins(
    kubeobj: Kube,
    connect: dict[str, Any],
    operator_process: OperatorProcess,
    served: ArtifactServer,
    build: dict[str, Any],
) -> None:
    root = plugins_root(operator_process, kubeobj)
    before = sorted(p.name for p in root.iterdir())
    url = connect["status"]["url"]
    fetched = sum(served.requests.values())
    wrong = {
        "name": "bad-jar",
        "artifacts": [{"type": "jar", "url": served.url("connect-file.jar"), "sha512sum": "0" * 128}],
    }
    kubeobj.spec("KafkaConnect", CONNECT, build={"plugins": [*build["plugins"], wrong]})

    def mismatch(obj: dict[str, Any]) -> dict[str, Any] | None:
        found = [c for c in conditions(obj, "NotReady") if c.get("reason") == "ChecksumMismatch"]
        return found[0] if found else None

    obj = kubeobj.wait("KafkaConnect", CONNECT, mismatch, "NotReady: ChecksumMismatch", timeout=120)
    message = mismatch(obj)["message"]  # type: ignore[index]
    assert served.url("connect-file.jar") in message and "correct the sha512sum" in message
    # Nothing of the failed build is in the plugin directory, and the workers still serve the last good one.
    assert sorted(p.name for p in root.iterdir()) == before
    with operator_process.rest("KafkaConnect", CONNECT) as rest:
        answer = rest.get(f"{url}/connector-plugins").json()
    assert FILE_SOURCE in {p["class"] for p in answer}
    assert sum(served.requests.values()) > fetched  # the failed build was fetched (into a temporary directory)
    # Back to the good build: Ready again with the same installation (its stamp not written again).
    (stamp,) = root.glob("*/build.json")
    written = stamp.stat().st_mtime_ns
    kubeobj.spec("KafkaConnect", CONNECT, build=build)
    kubeobj.wait("KafkaConnect", CONNECT, is_ready, "Ready again", timeout=120)
    assert sorted(p.name for p in root.iterdir()) == before and stamp.stat().st_mtime_ns == written
    wait_for(lambda: _alive(operator_process, url), 30, "the workers answering")


def test_an_unknown_maven_artifact_is_not_ready_naming_it_and_the_workers_keep_their_plugins(
    kubeobj: Kube, connect: dict[str, Any], operator_process: OperatorProcess, build: dict[str, Any]
) -> None:
    root = plugins_root(operator_process, kubeobj)
    before = sorted(p.name for p in root.iterdir())
    url = connect["status"]["url"]
    unknown = {
        "name": "missing-maven",
        "artifacts": [{"type": "maven", "group": MAVEN[0], "artifact": "connect-file-nonexistent", "version": "4.3.1"}],
    }
    kubeobj.spec("KafkaConnect", CONNECT, build={"plugins": [*build["plugins"], unknown]})

    def failed(obj: dict[str, Any]) -> dict[str, Any] | None:
        found = [c for c in conditions(obj, "NotReady") if c.get("reason") == "BuildFailed"]
        return found[0] if found else None

    obj = kubeobj.wait("KafkaConnect", CONNECT, failed, "NotReady: BuildFailed", timeout=120)
    message = failed(obj)["message"]  # type: ignore[index]
    assert "maven artifact org.apache.kafka:connect-file-nonexistent:4.3.1" in message
    assert "was not found: check its group, artifact, version and repository" in message
    # Nothing of the failed build was installed; the workers still serve the last good one.
    assert sorted(p.name for p in root.iterdir()) == before
    with operator_process.rest("KafkaConnect", CONNECT) as rest:
        assert FILE_SOURCE in {p["class"] for p in rest.get(f"{url}/connector-plugins").json()}
    kubeobj.spec("KafkaConnect", CONNECT, build=build)
    kubeobj.wait("KafkaConnect", CONNECT, is_ready, "Ready again", timeout=120)
    assert sorted(p.name for p in root.iterdir()) == before


def _alive(operator_process: OperatorProcess, url: str) -> bool:
    with operator_process.rest("KafkaConnect", CONNECT) as rest:
        try:
            return rest.get(f"{url}/").status_code == 200
        except httpx.HTTPError:
            return False
