"""A local Kubernetes control plane: etcd, kube-apiserver and kube-controller-manager on loopback.

Run from the binaries that scripts/kube-binaries.sh builds into .cache/kube/bin (`start()` has them built
the first time if they are missing: sparklink.platform.kube_binaries). There is no scheduler
and no kubelet: objects (CRDs, custom resources, Deployments, ReplicaSets, ServiceAccounts, namespaces,
garbage collection through ownerReferences) behave as in a real cluster, Pods stay Pending. Each cluster
lives under its own state directory (PKI, kubeconfig, etcd data, logs, cluster.json), so a later
`sparklink k8s status|stop` finds it. Callers: the CLI (`sparklink k8s`) and the `kube` test fixture.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import ssl
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from sparklink.platform import artifacts, ca, kube_binaries, ports, process
from sparklink.platform.kube_binaries import COMPONENTS, binary
from sparklink.platform.records import RecordedCluster, read_record, write_record

ETCD, APISERVER, CONTROLLER_MANAGER = COMPONENTS

# What the operator and its tests rely on: namespaces are emptied and removed, ownerReferences are
# followed, every namespace gets its `default` ServiceAccount (and the root CA ConfigMap), Deployments
# get ReplicaSets. Nothing else runs: no Pods are scheduled anyway.
CONTROLLERS = (
    "namespace-controller",
    "garbage-collector-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
    "deployment-controller",
    "replicaset-controller",
)
ADMIN_USER = "admin"
LOOPBACK_NAMES = ("127.0.0.1", "localhost")
CONTEXT = "sparklink"


class KubeStartError(RuntimeError):
    """A component did not come up; the message carries the tail of its log."""


@dataclass
class Component:
    """One process of the control plane: the port it serves on and its pid (0 when not running)."""

    name: str
    port: int
    pid: int = 0


@dataclass
class KubeCluster(RecordedCluster):
    """A local control plane. Create with `KubeCluster.create(...)`, then `start()` and `stop()`."""

    state_dir: Path
    components: list[Component]
    etcd_peer_port: int

    # ----------------------------------------------------------------- creation and persistence
    @classmethod
    def create(cls, state_dir: Path) -> KubeCluster:
        """Lay out a new cluster (PKI, kubeconfigs) on free loopback ports. Raises if one exists there."""
        state_dir = Path(state_dir)
        if (state_dir / "cluster.json").exists():
            raise KubeStartError(
                f"a cluster already exists in {state_dir}; start it again with `sparklink k8s start`, "
                "or delete it with `sparklink k8s stop --delete`"
            )
        components = [Component(name, ports.free_port()) for name in COMPONENTS]
        cluster = cls(state_dir, components, ports.free_port())
        for sub in ("pki", "logs", "data"):
            (state_dir / sub).mkdir(parents=True, exist_ok=True)
        cluster._write_pki()
        cluster.save()
        return cluster

    @classmethod
    def load(cls, state_dir: Path) -> KubeCluster:
        raw = read_record(state_dir, "Kubernetes cluster")
        return cls(Path(state_dir), [Component(**c) for c in raw["components"]], raw["etcd_peer_port"])

    def save(self) -> None:
        raw = asdict(self)
        raw["state_dir"] = str(self.state_dir)
        write_record(self.state_dir, raw)

    # ----------------------------------------------------------------- addresses and credentials
    def component(self, name: str) -> Component:
        return next(c for c in self.components if c.name == name)

    @property
    def server(self) -> str:
        """The API server's URL, as clients see it in the kubeconfig."""
        return f"https://127.0.0.1:{self.component(APISERVER).port}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.component(ETCD).port}"

    @property
    def kubeconfig(self) -> Path:
        """A kubeconfig for the admin user (group system:masters), for kubectl and client libraries."""
        return self.state_dir / "kubeconfig"

    @property
    def ca_file(self) -> Path:
        return self.pki / "ca.crt"

    @property
    def admin_token(self) -> str:
        """A bearer token of the same admin user, for plain HTTP clients."""
        return (self.pki / "admin.token").read_text().strip()

    @property
    def pki(self) -> Path:
        return self.state_dir / "pki"

    def log_file(self, name: str) -> Path:
        return self.state_dir / "logs" / f"{name}.log"

    # ----------------------------------------------------------------- lifecycle
    def start(self, timeout: float = 180.0) -> None:
        """Start etcd, the API server and the controller manager in turn, each once the previous is ready.

        Returns when the controllers work (the `default` ServiceAccount exists). On failure, stops what it
        started and raises KubeStartError with the tail of the failing component's log. Missing binaries are
        built first (minutes, once; ArtifactsMissingError when they cannot be), before the timeout starts.
        """
        kube_binaries.ensure()
        deadline = time.monotonic() + timeout
        started: list[Component] = []
        try:
            for component in self.components:
                if not (component.pid and process.alive(component.pid)):
                    component.pid = process.spawn(self._command(component.name), self.log_file(component.name))
                    started.append(component)
                    self.save()
                self._wait(component, deadline)
        except BaseException:
            for component in reversed(started):
                process.stop(component.pid, timeout=30)
                component.pid = 0
            self.save()
            raise

    def stop(self) -> None:
        """Stop the controller manager, the API server, then etcd (SIGTERM, then SIGKILL after a grace)."""
        for component in reversed(self.components):
            if component.pid:
                process.stop(component.pid, timeout=30)
                component.pid = 0
        self.save()

    def is_running(self) -> bool:
        return all(c.pid and process.alive(c.pid) for c in self.components)

    def status(self) -> list[dict[str, object]]:
        """One row per component: what it is, where it listens, its pid, whether it lives, its log."""
        urls = {
            ETCD: self.etcd_url,
            APISERVER: self.server,
            CONTROLLER_MANAGER: f"https://127.0.0.1:{self.component(CONTROLLER_MANAGER).port}",
        }
        return [
            {
                "component": c.name,
                "url": urls[c.name],
                "pid": c.pid,
                "alive": bool(c.pid and process.alive(c.pid)),
                "log": str(self.log_file(c.name)),
            }
            for c in self.components
        ]

    # ----------------------------------------------------------------- readiness
    def _wait(self, component: Component, deadline: float) -> None:
        checks: dict[str, Callable[[], bool]] = {
            ETCD: lambda: self._get(f"{self.etcd_url}/health", tls=False) == 200,
            APISERVER: lambda: self._get(f"{self.server}/readyz") == 200,
            # Healthy, and its controllers at work: the service-account controller filled `default`.
            CONTROLLER_MANAGER: lambda: (
                self._get(f"https://127.0.0.1:{component.port}/healthz") == 200
                and self._get(f"{self.server}/api/v1/namespaces/default/serviceaccounts/default") == 200
            ),
        }
        log = self.log_file(component.name)
        while not checks[component.name]():
            if not process.alive(component.pid):
                raise KubeStartError(
                    f"{component.name} exited during start-up; last lines of {log}:\n{process.tail(log)}"
                )
            if time.monotonic() > deadline:
                raise KubeStartError(
                    f"{component.name} was not ready in time; last lines of {log}:\n{process.tail(log)}\n"
                    "On a busy machine, try again with a longer --timeout."
                )
            time.sleep(0.3)

    def _get(self, url: str, tls: bool = True) -> int:
        headers = {"Authorization": f"Bearer {self.admin_token}"} if tls else {}
        verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=str(self.ca_file)) if tls else False
        try:
            return httpx.get(url, headers=headers, verify=verify, timeout=3).status_code
        except httpx.HTTPError:
            return 0

    # ----------------------------------------------------------------- component command lines
    def _command(self, name: str) -> list[str]:
        pki = self.pki
        port = self.component(name).port
        if name == ETCD:
            peer = f"http://127.0.0.1:{self.etcd_peer_port}"
            return [
                str(binary(ETCD)),
                "--name=sparklink",
                f"--data-dir={self.state_dir / 'data' / 'etcd'}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=sparklink={peer}",
                # A throwaway development store: durability is not worth an fsync per write.
                "--unsafe-no-fsync",
                "--log-level=warn",
            ]
        if name == APISERVER:
            return [
                str(binary(APISERVER)),
                f"--etcd-servers={self.etcd_url}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                # The `kubernetes` Service's endpoints may not be loopback addresses; nothing in this
                # cluster reaches the API server through that Service, so do not publish them at all.
                "--advertise-address=127.0.0.1",
                "--endpoint-reconciler-type=none",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                f"--token-auth-file={pki / 'tokens.csv'}",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--authorization-mode=RBAC",
                "--profiling=false",
            ]
        return [
            str(binary(CONTROLLER_MANAGER)),
            f"--kubeconfig={pki / 'controller-manager.kubeconfig'}",
            # No delegated authentication: its port serves only the health checks, which need none.
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--tls-cert-file={pki / 'controller-manager.crt'}",
            f"--tls-private-key-file={pki / 'controller-manager.key'}",
            f"--controllers={','.join(CONTROLLERS)}",
            # As kubeadm does: each controller acts as its own ServiceAccount, under RBAC's bootstrap roles.
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki / 'sa.key'}",
            f"--root-ca-file={pki / 'ca.crt'}",
            "--leader-elect=false",
            "--profiling=false",
        ]

    # ----------------------------------------------------------------- PKI and kubeconfigs
    def _write_pki(self) -> None:
        # EC P-256 keys (instant to make; kube-apiserver takes them for TLS, client certificates and ES256
        # service-account tokens), and subjects without sparklink's organization: a client certificate's
        # CN is the Kubernetes user and each O one of its groups.
        pki = self.pki
        ec, groupless = ca.KeyType.EC, ()
        authority = ca.new_ca("sparklink-local-kubernetes-ca", key_type=ec, organizations=groupless)
        authority.write(pki / "ca.crt", pki / "ca.key")
        loopback = LOOPBACK_NAMES
        ca.issue(
            authority,
            APISERVER,
            organizations=groupless,
            hosts=(*loopback, "kubernetes", "kubernetes.default"),
            server=True,
        ).write(pki / "apiserver.crt", pki / "apiserver.key")
        controller_manager = ca.issue(
            authority,
            "system:kube-controller-manager",
            organizations=groupless,
            hosts=loopback,
            server=True,
            client=True,
        )
        controller_manager.write(pki / "controller-manager.crt", pki / "controller-manager.key")
        kubeconfig = self._kubeconfig(authority, "system:kube-controller-manager", controller_manager)
        ca.write_private(pki / "controller-manager.kubeconfig", kubeconfig.encode())
        admin = ca.issue(authority, ADMIN_USER, organizations=("system:masters",), client=True)
        ca.write_private(self.kubeconfig, self._kubeconfig(authority, ADMIN_USER, admin).encode())
        token = secrets.token_urlsafe(32)
        ca.write_private(pki / "admin.token", f"{token}\n".encode())
        tokens = f'{token},{ADMIN_USER},{ADMIN_USER}-uid,"system:masters"\n'
        ca.write_private(pki / "tokens.csv", tokens.encode())
        sa_key = ca.new_key(ec)
        (pki / "sa.pub").write_bytes(ca.public_pem(sa_key))
        ca.write_private(pki / "sa.key", ca.key_pem(sa_key))

    def _kubeconfig(self, authority: ca.Issued, user: str, credential: ca.Issued) -> str:
        # JSON is YAML: kubectl, client-go and the Python client all read it. Certificates are embedded
        # so that the file can be copied elsewhere on this machine and still work.
        def b64(data: bytes) -> str:
            return base64.b64encode(data).decode()

        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": CONTEXT,
                    "cluster": {"server": self.server, "certificate-authority-data": b64(authority.cert_pem)},
                }
            ],
            "users": [
                {
                    "name": user,
                    "user": {
                        "client-certificate-data": b64(credential.cert_pem),
                        "client-key-data": b64(credential.key_pem),
                    },
                }
            ],
            "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": user, "namespace": "default"}}],
            "current-context": CONTEXT,
            "preferences": {},
        }
        return json.dumps(config, indent=2) + "\n"


def default_state_dir() -> Path:
    return Path(os.environ.get("SPARKLINK_STATE_DIR", artifacts.project_root() / ".state")) / "kube"
