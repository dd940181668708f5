"""The KafkaConnect `spec.build` step through the reconciler: an in-memory store, a host that reports what
the test tells it, and the real fetcher against a local HTTP server of artifacts (no internet), Maven being
its twin (fake_mvn.py). What is installed where, what the workers are given, and the conditions each case
writes."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sparklink.operator.hosting import HostState
from sparklink.operator.hosting.maven import MavenResolver
from sparklink.operator.hosting.plugin_build import STAMP, LocalPluginBuilder
from sparklink.operator.metrics import OperatorMetrics
from sparklink.operator.model.autorestart import BackOff
from sparklink.operator.model.resources import Resource
from sparklink.operator.reconcile import kafka_connect
from sparklink.operator.reconcile.context import Deps
from tests.support.artifact_server import ArtifactServer, artifact_server, sha512, tgz, zipped
from tests.unit.operator.memory_store import MemoryStore
from tests.unit.operator.test_connect_workers import FixedClock, ScriptedHost, connect_body

JAR = b"PK-not-really-a-jar"
FAKE_MVN = (sys.executable, str(Path(__file__).with_name("fake_mvn.py")))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ArtifactServer]:
    with artifact_server(tmp_path / "served") as served:
        yield served


def setup(tmp_path: Path, builder: bool = True) -> tuple[MemoryStore, ScriptedHost, Deps]:
    store = MemoryStore()
    host = ScriptedHost(HostState("https://127.0.0.1:8083", True, 1))
    deps = Deps(
        store,
        host,
        FixedClock(),
        BackOff(timedelta(seconds=1)),
        OperatorMetrics(),
        plugin_builder=LocalPluginBuilder(tmp_path / "state", MavenResolver(FAKE_MVN)) if builder else None,
    )
    return store, host, deps


def reconcile(store: MemoryStore, deps: Deps, build: dict[str, Any]) -> dict[str, Any]:
    key = store.put(connect_body(build=build)).key
    kafka_connect.reconcile(deps, key)
    return dict(store.resources[key].status)


def kinds(status: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(c["type"], c.get("reason")) for c in status["conditions"]]


def test_every_artifact_type_is_installed_in_strimzis_layout_once(tmp_path: Path, server: ArtifactServer) -> None:
    jar_url = server.put("a.jar", JAR)
    tgz_url = server.put("b.tgz", tgz({"lib/b.jar": b"b"}))
    zip_url = server.put("c.zip", zipped({"c.jar": b"c"}))
    other_url = server.put("NOTICE", b"notice")
    repo = server.put_maven("org.example", "conn", "1.0", b"maven-jar")
    build = {
        "plugins": [
            {
                "name": "my-plugin",
                "artifacts": [
                    {"type": "jar", "url": jar_url, "sha512sum": sha512(JAR)},
                    {"type": "tgz", "url": tgz_url},
                    {"type": "zip", "url": zip_url},
                    {"type": "other", "url": other_url, "fileName": "NOTICE.txt"},
                    {"type": "maven", "group": "org.example", "artifact": "conn", "version": "1.0", "repository": repo},
                ],
            }
        ]
    }
    store, host, deps = setup(tmp_path)
    status = reconcile(store, deps, build)
    ready = [("Ready", None)]
    assert kinds(status) == ready
    path = Path(host.ensured[-1].plugin_path)
    assert path.parent == tmp_path / "state" / "ns" / "KafkaConnect" / "my-connect" / "plugins"

    def stub(text: str) -> str:
        return hashlib.sha1(text.encode()).hexdigest()[:8]

    plugin = path / "my-plugin"
    assert (plugin / stub(jar_url) / f"{stub(jar_url)}.jar").read_bytes() == JAR
    assert (plugin / stub(tgz_url) / "lib" / "b.jar").read_bytes() == b"b"
    assert (plugin / stub(zip_url) / "c.jar").read_bytes() == b"c"
    assert (plugin / stub(other_url) / "NOTICE.txt").read_bytes() == b"notice"
    maven = plugin / stub("org.example/conn/1.0")
    assert (maven / "conn-1.0.jar").read_bytes() == b"maven-jar"
    assert sorted(p.name for p in maven.iterdir()) == ["a-dependency-1.0.jar", "conn-1.0.jar"]  # no pom left
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temporary directory left
    fetched = sum(server.requests.values())
    assert fetched == 5  # five artifacts (the maven one by Maven's twin)
    # Unchanged: nothing is fetched again, and the workers get the same directory (so they are not restarted).
    assert kinds(reconcile(store, deps, build)) == ready
    assert sum(server.requests.values()) == fetched and host.ensured[-1].plugin_path == str(path)
    assert host.ensured[-1].fingerprint() == host.ensured[0].fingerprint()


def test_a_changed_build_gets_a_new_directory_and_the_old_one_goes(tmp_path: Path, server: ArtifactServer) -> None:
    store, host, deps = setup(tmp_path)
    first = {"plugins": [{"name": "p1", "artifacts": [{"type": "jar", "url": server.put("a.jar", JAR)}]}]}
    second = {"plugins": [{"name": "p2", "artifacts": [{"type": "jar", "url": server.put("b.jar", JAR)}]}]}
    reconcile(store, deps, first)
    old = Path(host.ensured[-1].plugin_path)
    reconcile(store, deps, second)
    new = Path(host.ensured[-1].plugin_path)
    assert new != old and (new / "p2").is_dir() and not old.exists()
    assert host.ensured[-1].fingerprint() != host.ensured[0].fingerprint()  # the workers restart with it


def test_a_wrong_sha512sum_installs_nothing_and_says_which_artifact(tmp_path: Path, server: ArtifactServer) -> None:
    store, host, deps = setup(tmp_path)
    url = server.put("a.jar", JAR)
    good = {"type": "jar", "url": server.put("good.jar", JAR)}
    bad = {"type": "jar", "url": url, "sha512sum": "0" * 128}
    status = reconcile(store, deps, {"plugins": [{"name": "pp", "artifacts": [good, bad]}]})
    assert kinds(status) == [("NotReady", "ChecksumMismatch")]
    message = status["conditions"][0]["message"]
    assert f"jar artifact {url} does not match its sha512sum" in message and "correct the sha512sum" in message
    assert host.ensured[-1].plugin_path == ""  # no earlier build: the workers run without one
    root = tmp_path / "state" / "ns" / "KafkaConnect" / "my-connect" / "plugins"
    assert list(root.rglob("*.jar")) == [] and list(root.iterdir()) == []


def test_a_failed_or_invalid_build_keeps_the_workers_on_the_last_good_one(
    tmp_path: Path, server: ArtifactServer
) -> None:
    store, host, deps = setup(tmp_path)
    good = {"plugins": [{"name": "pp", "artifacts": [{"type": "jar", "url": server.put("a.jar", JAR)}]}]}
    reconcile(store, deps, good)
    kept = host.ensured[-1].plugin_path
    missing = {"plugins": [{"name": "pp", "artifacts": [{"type": "jar", "url": server.url("gone.jar")}]}]}
    status = reconcile(store, deps, missing)
    assert (
        kinds(status) == [("NotReady", "DownloadFailed")] and "answered HTTP 404" in status["conditions"][0]["message"]
    )
    assert host.ensured[-1].plugin_path == kept and (Path(kept) / STAMP).is_file()
    invalid = {"plugins": [{"name": "pp", "artifacts": [{"type": "jar", "url": "file:///etc/passwd"}]}]}
    status = reconcile(store, deps, invalid)
    assert kinds(status) == [("Ready", None), ("Warning", "InvalidBuild")]
    assert host.ensured[-1].plugin_path == kept


def test_no_secret_of_a_url_reaches_a_condition(tmp_path: Path, server: ArtifactServer) -> None:
    store, _host, deps = setup(tmp_path)
    url = server.url("gone.jar").replace("http://", "http://user:s3cret@") + "?token=t0ken"
    status = reconcile(store, deps, {"plugins": [{"name": "pp", "artifacts": [{"type": "jar", "url": url}]}]})
    text = str(status)
    assert "DownloadFailed" in text and "s3cret" not in text and "t0ken" not in text


def test_the_kubernetes_runtime_builds_nothing_and_says_so_while_the_rest_reconciles(tmp_path: Path) -> None:
    store, host, deps = setup(tmp_path, builder=False)
    status = reconcile(store, deps, {"plugins": [{"name": "pp", "artifacts": [{"type": "jar", "url": "https://e/x"}]}]})
    assert kinds(status) == [("Ready", None), ("Warning", "BuildNotSupported")]
    assert "no container image is built" in status["conditions"][1]["message"]
    assert host.ensured[-1].plugin_path == "" and status["url"] == "https://127.0.0.1:8083"


def test_a_failed_build_is_not_fetched_again_on_every_reconcile(tmp_path: Path, server: ArtifactServer) -> None:
    store, _host, deps = setup(tmp_path)
    bad = {"type": "jar", "url": server.put("a.jar", JAR), "sha512sum": "0" * 128}
    build = {"plugins": [{"name": "pp", "artifacts": [bad]}]}
    assert kinds(reconcile(store, deps, build)) == [("NotReady", "ChecksumMismatch")]
    assert kinds(reconcile(store, deps, build)) == [("NotReady", "ChecksumMismatch")]
    assert server.requests["/a.jar"] == 1
    fixed = {"plugins": [{"name": "pp", "artifacts": [{**bad, "sha512sum": sha512(JAR)}]}]}
    assert kinds(reconcile(store, deps, fixed)) == [("Ready", None)] and server.requests["/a.jar"] == 2


def test_an_unknown_maven_artifact_fails_the_build_naming_it(tmp_path: Path, server: ArtifactServer) -> None:
    store, _host, deps = setup(tmp_path)
    repo = server.put_maven("org.example", "conn", "1.0", b"maven-jar")
    art = {"type": "maven", "group": "org.example", "artifact": "gone", "version": "1.0", "repository": repo}
    status = reconcile(store, deps, {"plugins": [{"name": "pp", "artifacts": [art]}]})
    assert kinds(status) == [("NotReady", "BuildFailed")]
    message = status["conditions"][0]["message"]
    assert message.startswith("maven artifact org.example:gone:1.0 (or one of its dependencies) was not found")
    assert "check its group, artifact, version and repository" in message
    assert "the workers keep their last build" in message
    assert list((tmp_path / "state").rglob("*.jar")) == [] and list((tmp_path / "state").rglob("pom.xml")) == []


class RecordingStore(MemoryStore):
    """Keeps every status written, to see what the resource said while its build was fetched."""

    def __init__(self) -> None:
        super().__init__()
        self.statuses: list[dict[str, Any]] = []

    def write_status(self, resource: Resource, status: Mapping[str, Any]) -> None:
        self.statuses.append(dict(status))
        super().write_status(resource, status)


def test_while_a_build_is_fetched_the_status_says_so(tmp_path: Path, server: ArtifactServer) -> None:
    _store, _host, deps = setup(tmp_path)
    store = RecordingStore()
    deps.store = store
    build = {"plugins": [{"name": "pp", "artifacts": [{"type": "jar", "url": server.put("a.jar", JAR)}]}]}
    reconcile(store, deps, build)
    fetching, done = store.statuses
    assert kinds(fetching) == [("NotReady", "BuildInProgress")]
    assert fetching["conditions"][0]["message"] == "Fetching spec.build: 1 plugins (pp), 1 artifacts"
    assert kinds(done) == [("Ready", None)]
    reconcile(store, deps, build)  # installed: nothing to fetch, nothing said about fetching
    assert [kinds(s) for s in store.statuses[2:]] == [[("Ready", None)]]
