"""Fixtures for the operator's end-to-end tests: the CRDs on the real API server, a namespace per
module, and `sparklink operator run` as a real subprocess (so a test can kill -9 it), which itself
starts real `sparklink worker` processes against the shared Kafka cluster.

The operator and its workers live under a `sparklink-test-operator-*` directory, so CI's leftover
check sees them; every fixture stops what it started.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from sparklink.operator import rbac
from sparklink.operator.kube.install import apply_crds, apply_rbac
from sparklink.operator.model.resources import GROUP, PLURALS, VERSION
from sparklink.platform import ports, process
from tests.conftest import TEST_PLUGIN_PATH
from tests.helpers import unique, wait_for

# The auto-restart back-off unit the test operators run with. The schedule test waits out 2 + 6 + 12 + 20 + 1
# of these (41 minutes), so the unit is its cost; timestamps carry milliseconds (see operator/clock.py), so
# one second still tells each step of the schedule apart, and the tests poll every 0.3 s.
MINUTE_SECONDS = 1.0


@pytest.fixture(scope="session")
def crds(kube_api: k8s.ApiClient) -> list[str]:
    return apply_crds(kube_api)


class Kube:
    """Small typed helpers over the official client for one namespace."""

    def __init__(self, api: k8s.ApiClient, namespace: str) -> None:
        self.api = api
        self.ns = namespace
        self.custom = k8s.CustomObjectsApi(api)
        self.core = k8s.CoreV1Api(api)

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        plural = PLURALS[body["kind"]]
        body = {**body, "metadata": {**body["metadata"], "namespace": self.ns}}
        return dict(self.custom.create_namespaced_custom_object(GROUP, VERSION, self.ns, plural, body))

    def get(self, kind: str, name: str) -> dict[str, Any]:
        return dict(self.custom.get_namespaced_custom_object(GROUP, VERSION, self.ns, PLURALS[kind], name))

    def exists(self, kind: str, name: str) -> bool:
        try:
            self.get(kind, name)
            return True
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise

    def patch(self, kind: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self.custom.patch_namespaced_custom_object(GROUP, VERSION, self.ns, PLURALS[kind], name, body))

    def annotate(self, kind: str, name: str, **annotations: str | None) -> dict[str, Any]:
        return self.patch(kind, name, {"metadata": {"annotations": annotations}})

    def spec(self, kind: str, name: str, **spec: Any) -> dict[str, Any]:
        return self.patch(kind, name, {"spec": spec})

    def delete(self, kind: str, name: str) -> None:
        try:
            self.custom.delete_namespaced_custom_object(GROUP, VERSION, self.ns, PLURALS[kind], name)
        except ApiException as exc:
            if exc.status != 404:
                raise

    def wait(
        self,
        kind: str,
        name: str,
        until: Callable[[dict[str, Any]], Any],
        what: str,
        timeout: float = 120,
        explain: Callable[[], Any] | None = None,
    ) -> dict[str, Any]:
        """Poll the resource until `until(obj)`; a time-out names its last status (or what `explain` says)."""

        def check() -> dict[str, Any] | None:
            obj = self.get(kind, name)
            return obj if until(obj) else None

        def last_status() -> Any:
            return self.get(kind, name).get("status")

        result: dict[str, Any] = wait_for(
            check, timeout, f"{kind} {name}: {what}", interval=0.3, explain=explain or last_status
        )
        return result

    def config_map(self, name: str) -> k8s.V1ConfigMap | None:
        try:
            return self.core.read_namespaced_config_map(name, self.ns)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise


def conditions(obj: dict[str, Any], type_: str | None = None) -> list[dict[str, Any]]:
    found = (obj.get("status") or {}).get("conditions") or []
    return [c for c in found if type_ is None or c.get("type") == type_]


def is_ready(obj: dict[str, Any]) -> bool:
    status = obj.get("status") or {}
    generation = obj["metadata"].get("generation")
    return bool(conditions(obj, "Ready")) and status.get("observedGeneration") == generation


def connector_state(obj: dict[str, Any]) -> str | None:
    return ((obj.get("status") or {}).get("connectorStatus") or {}).get("connector", {}).get("state")


def task_states(obj: dict[str, Any]) -> list[str]:
    return [t.get("state") for t in ((obj.get("status") or {}).get("connectorStatus") or {}).get("tasks", [])]


def worker_rest_client(
    state_dir: Path, namespace: str, kind: str, name: str, timeout: float = 30, cert: Path | None = None
) -> httpx.Client:
    """An httpx client with the operator's client certificate (from its `--state-dir`), or `cert` (a PEM file
    with a key and its certificate), that trusts only the CA of the group's REST certificates."""
    group_ca = state_dir / namespace / kind / name / "rest-tls" / "ca.crt"
    context = ssl.create_default_context(cafile=str(group_ca))
    context.load_cert_chain(str(cert or state_dir / "rest-client" / "keystore.pem"))
    return httpx.Client(verify=context, timeout=timeout)


class OperatorProcess:
    """`sparklink operator run` in its own process group, logging to a file."""

    def __init__(self, kubeconfig: Path, namespace: str, state_dir: Path, extra: Sequence[str] = ()) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.state_dir = state_dir
        self.extra = list(extra)  # more `operator run` options
        self.metrics_port = ports.free_port()
        self.pid = 0
        self.starts = 0

    @property
    def log(self) -> Path:
        return self.state_dir / "operator.log"

    def start(self) -> OperatorProcess:
        self.starts += 1
        cmd = [
            sys.executable, "-m", "sparklink.cli.main", "operator", "run",
            "--kubeconfig", str(self.kubeconfig),
            "--namespace", self.namespace,
            "--minute-seconds", str(MINUTE_SECONDS),
            "--full-reconcile-interval", "20",
            "--metrics-port", str(self.metrics_port),
            "--state-dir", str(self.state_dir / "workers"),
            "--plugin-path", str(TEST_PLUGIN_PATH),
            "--log-level", "INFO",
            *self.extra,
        ]  # fmt: skip
        with open(self.log, "a") as out:
            out.write(f"\n===== operator start {self.starts} =====\n")
        self.pid = process.spawn(cmd, self.log, env={**os.environ, "PYTHONUNBUFFERED": "1"})

        def up() -> bool:
            if not process.alive(self.pid):
                raise AssertionError(f"the operator exited during start-up:\n{process.tail(self.log)}")
            try:
                return httpx.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(up, 60, "the operator's /metrics endpoint", interval=0.3)
        return self

    def log_since_start(self) -> list[str]:
        """The lines the operator logged since its last start."""
        marker = f"===== operator start {self.starts} ====="
        return self.log.read_text().split(marker, 1)[-1].splitlines()

    def stacks(self) -> list[str]:
        """What each of the operator's threads is doing now (`kill -USR1`: faulthandler's dump), as the frames
        in sparklink's own code, innermost first, one line per thread: for a time-out's message."""
        before = self.log.read_text(errors="replace").count("most recent call first")
        os.kill(self.pid, signal.SIGUSR1)
        text = wait_for(
            lambda: (t := self.log.read_text(errors="replace")).count("most recent call first") > before and t,
            10,
            "the operator's stack dump",
        )
        found = []
        for thread in text.split("most recent call first")[before + 1 :]:
            files = [ln.strip() for ln in thread.splitlines() if ln.strip().startswith("File ")]
            ours = [f for f in files[1:] if "/sparklink/" in f]
            if ours or (files and "/sparklink/" in files[0]):
                # The innermost frame (what the thread waits in), then each frame of sparklink's own code.
                found.append(" <- ".join(f.split("/")[-1].replace('", line ', ":") for f in [files[0], *ours]))
        return found

    def metrics(self) -> str:
        return httpx.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5).text

    def kill9(self) -> None:
        """SIGKILL only the operator (not its process group's children: workers live in their own sessions)."""
        os.kill(self.pid, signal.SIGKILL)
        wait_for(lambda: not process.alive(self.pid), 30, "the killed operator to disappear")

    def stop(self) -> None:
        if self.pid and process.alive(self.pid):
            os.kill(self.pid, signal.SIGTERM)
            deadline = time.monotonic() + 90
            while process.alive(self.pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if process.alive(self.pid):
                process.kill(self.pid)

    def rest(self, kind: str, name: str, timeout: float = 30) -> httpx.Client:
        """An httpx client for a group's REST API (its https `status.url`): it presents the operator's client
        certificate and trusts only the group's CA, as the operator does. The caller closes it."""
        return worker_rest_client(self.state_dir / "workers", self.namespace, kind, name, timeout)

    def worker_log(self, kind: str, name: str) -> Path:
        return self.state_dir / "workers" / self.namespace / kind / name / "worker.log"

    def worker_pid(self, kind: str, name: str) -> int:
        """The pid of a group's first worker, as its host recorded it (0 when none runs)."""
        record = self.state_dir / "workers" / self.namespace / kind / name / "worker.json"
        return int(json.loads(record.read_text()).get("pid", 0)) if record.is_file() else 0

    def files_dir(self, kind: str, name: str) -> Path:
        """The only directory the file connectors of a group's workers may read and write."""
        return self.state_dir / "workers" / self.namespace / kind / name / "files"

    def cleanup_workers(self) -> None:
        """Kill any worker a killed operator left behind (the normal stop already stopped them)."""
        workers = self.state_dir / "workers"
        for record in [*workers.glob("*/*/*/worker.json"), *workers.glob("*/*/*/replica-*/worker.json")]:
            pid = json.loads(record.read_text()).get("pid", 0)
            if pid and process.alive(pid):
                process.kill(pid)

    def cleanup_kafka(self) -> None:
        """Kill the Kafka nodes and agents a killed operator left behind (the normal stop stopped them)."""

        for record in (self.state_dir / "workers").glob("*/Kafka/*/cluster/cluster.json"):
            for node in json.loads(record.read_text()).get("nodes", []):
                for pid in (node.get("pid", 0), node.get("agent_pid", 0)):
                    if pid and process.alive(pid):
                        process.kill(pid)


@pytest.fixture(scope="module")
def namespace(kube_api: k8s.ApiClient, crds: list[str]) -> Iterator[str]:
    name = unique("op")
    core = k8s.CoreV1Api(kube_api)
    core.create_namespace({"metadata": {"name": name}})
    yield name
    with contextlib.suppress(ApiException):
        core.delete_namespace(name)


@pytest.fixture(scope="session")
def operator_account(kube_api: k8s.ApiClient, crds: list[str]) -> Iterator[str]:
    """The namespace of the shipped `sparklink-operator` ServiceAccount every test operator runs as."""
    name = unique("sparklink-operator")
    apply_rbac(kube_api, name, [name])
    yield name
    with contextlib.suppress(ApiException):
        k8s.CoreV1Api(kube_api).delete_namespace(name)


def service_account_kubeconfig(kube: Any, kube_api: k8s.ApiClient, account_namespace: str, path: Path) -> Path:
    """A kubeconfig holding a fresh token of the operator's ServiceAccount (a TokenRequest, as `kubectl create
    token` makes), so the process using it has exactly the shipped RBAC."""
    request = k8s.AuthenticationV1TokenRequest(spec=k8s.V1TokenRequestSpec(audiences=[], expiration_seconds=4 * 3600))
    token = k8s.CoreV1Api(kube_api).create_namespaced_service_account_token(
        rbac.SERVICE_ACCOUNT, account_namespace, request
    )
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": {"server": kube.server, "certificate-authority": str(kube.ca_file)}}],
        "users": [{"name": rbac.SERVICE_ACCOUNT, "user": {"token": token.status.token}}],
        "contexts": [{"name": "operator", "context": {"cluster": "local", "user": rbac.SERVICE_ACCOUNT}}],
        "current-context": "operator",
    }
    path.write_text(json.dumps(config))
    path.chmod(0o600)
    return path


@pytest.fixture(scope="module")
def operator_kubeconfig(
    kube: Any, kube_api: k8s.ApiClient, namespace: str, operator_account: str, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The operator's own kubeconfig for a module: the shipped RBAC bound in the module's namespace only (what
    `sparklink operator install --apply -n <account> -w <namespace>` creates), so every operator test runs with
    exactly the permissions users install."""
    apply_rbac(kube_api, operator_account, [namespace])
    return service_account_kubeconfig(kube, kube_api, operator_account, tmp_path_factory.mktemp("sa") / "kubeconfig")


@pytest.fixture(scope="module")
def operator_process(operator_kubeconfig: Path, namespace: str) -> Iterator[OperatorProcess]:
    state = Path(tempfile.mkdtemp(prefix="sparklink-test-operator-"))
    proc = OperatorProcess(operator_kubeconfig, namespace, state).start()
    try:
        yield proc
    finally:
        proc.stop()
        proc.cleanup_workers()
        if os.environ.get("SPARKLINK_KEEP_OPERATOR_LOGS"):
            print(f"operator state kept in {state}")
        else:
            shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="module")
def kubeobj(kube_api: k8s.ApiClient, namespace: str) -> Kube:
    return Kube(kube_api, namespace)


TEST_WORKER_CONFIG: dict[str, Any] = {
    "task.trigger.interval.ms": 500,
    # The warm-up trades seconds of a worker's start (7 s on this 2-core machine with the suite running) for
    # its first tasks' speed; the operator's tests time nothing, so their workers skip it, as conftest's do.
    "sparklink.warm.up.enable": "false",
}
"""What the tests add to a KafkaConnect's `spec.config` (a KafkaMirrorMaker2's `spec.target.config`)."""


def kafka_connect_body(name: str, bootstrap: str, **config: Any) -> dict[str, Any]:
    """A KafkaConnect on the test Kafka: one worker, short triggers, single-partition internal topics."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "KafkaConnect",
        "metadata": {"name": name, "annotations": {"strimzi.io/use-connector-resources": "true"}},
        "spec": {
            "replicas": 1,
            "bootstrapServers": bootstrap,
            "groupId": f"{name}-{unique('g')}",
            "configStorageTopic": f"{name}-{unique('configs')}",
            "offsetStorageTopic": f"{name}-{unique('offsets')}",
            "statusStorageTopic": f"{name}-{unique('status')}",
            "config": {
                "config.storage.replication.factor": 1,
                "offset.storage.replication.factor": 1,
                "status.storage.replication.factor": 1,
                "offset.storage.partitions": 1,
                "status.storage.partitions": 1,
                **TEST_WORKER_CONFIG,
                **config,
            },
        },
    }


def run_subprocess(cmd: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
