"""Shared fixtures: one real Kafka cluster (KRaft, from the Maven jars) and one SparkSession per test
process, two secured clusters (started only when asked for), and a factory for in-process workers, each on
its own internal topics."""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.assembly import RunningWorker, start_worker
from sparklink.worker.config import WorkerConfig
from tests.helpers import unique
from tests.support import python_plugins
from tests.support.kafka import kafka_cluster
from tests.support.secured_kafka import SecuredKafka, mtls_cluster, secured_cluster

logging.getLogger("py4j").setLevel(logging.WARNING)

TEST_PLUGIN_PATH = python_plugins.install(Path(tempfile.mkdtemp(prefix="sparklink-test-plugins-")))
"""The plugin.path of test workers: the test-only Python plugins, installed as a distribution."""


@pytest.fixture(scope="session", autouse=True)
def _test_plugin_path() -> Iterator[Path]:
    yield TEST_PLUGIN_PATH
    shutil.rmtree(TEST_PLUGIN_PATH, ignore_errors=True)


@pytest.fixture(scope="session")
def kafka() -> Iterator[KafkaCluster]:
    with kafka_cluster("sparklink-test-kafka-") as cluster:
        yield cluster


@pytest.fixture(scope="session")
def secured_kafka() -> Iterator[SecuredKafka]:
    """A cluster with SSL, mutual TLS, SASL_SSL (SCRAM-SHA-512, PLAIN) and SASL_PLAINTEXT (PLAIN) listeners and no
    PLAINTEXT one; started at the first test that asks for it."""
    with secured_cluster() as secured:
        yield secured


@pytest.fixture(scope="session")
def secured_kafka_target() -> Iterator[SecuredKafka]:
    """A second secured cluster, one mutual-TLS listener (its own cluster and clients CAs): a MirrorMaker target."""
    with mtls_cluster() as secured:
        yield secured


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from sparklink.worker.execution.spark import build_session, stop_session

    session = build_session("local[2]", "sparklink-tests")
    yield session
    stop_session(session)


WorkerFactory = Callable[..., RunningWorker]


def worker_props(kafka: KafkaCluster, group: str, state_dir: Path, **overrides: Any) -> dict[str, Any]:
    """Worker properties on the shared broker with the group's own internal topics and short triggers."""
    return {
        "bootstrap.servers": kafka.bootstrap_servers,
        "group.id": group,
        "config.storage.topic": f"{group}-configs",
        "offset.storage.topic": f"{group}-offsets",
        "status.storage.topic": f"{group}-status",
        "offset.storage.partitions": 1,
        "status.storage.partitions": 1,
        "rest.port": 0,
        "task.trigger.interval.ms": 300,
        "sparklink.state.dir": str(state_dir),
        "plugin.path": str(TEST_PLUGIN_PATH),
        # The warm-up trades seconds of a worker's start for its first tasks' speed: tests, which time
        # nothing, skip it (test_warm_up.py and test_shutdown.py run it).
        "sparklink.warm.up.enable": "false",
        **overrides,
    }


@pytest.fixture
def worker_factory(kafka: KafkaCluster, spark: Any, tmp_path: Path) -> Iterator[WorkerFactory]:
    """Start in-process workers on the shared broker and SparkSession; all are stopped at teardown.

    Each call without `group` gets fresh internal topics; pass the same `group` to restart a worker
    against the same topics.
    """
    started: list[RunningWorker] = []

    def start(group: str | None = None, **overrides: Any) -> RunningWorker:
        group = group or unique("group")
        props = worker_props(kafka, group, tmp_path / group, **overrides)
        runtime = start_worker(WorkerConfig.model_validate(props), spark=spark)
        started.append(runtime)
        return runtime

    yield start
    for runtime in reversed(started):
        runtime.stop()


@pytest.fixture
def worker(worker_factory: WorkerFactory) -> RunningWorker:
    return worker_factory()


@pytest.fixture(scope="module")
def module_worker(kafka: KafkaCluster, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningWorker]:
    """One worker shared by a module's tests (each test uses its own connector names)."""
    group = unique("module")
    props = worker_props(kafka, group, tmp_path_factory.mktemp(group))
    runtime = start_worker(WorkerConfig.model_validate(props), spark=spark)
    yield runtime
    runtime.stop()


# MirrorMaker 2 tests: a second (target) cluster, shared by their modules.
pytest_plugins = ["tests.it.mirror_fixtures"]

# Tests on a real Kubernetes API server (etcd + kube-apiserver + kube-controller-manager).
pytest_plugins.append("tests.kube_fixtures")

# The operator's end-to-end tests: CRDs, a namespace per module, `sparklink operator run` as a subprocess.
pytest_plugins.append("tests.it.operator_fixtures")

# A real browser (Debian's Chromium through Playwright), one per session: the console and CSRF tests.
pytest_plugins.append("tests.browser")
