"""Runs a resource's Connect workers in a Kubernetes cluster: applies the objects `model.connect_objects`
renders (the pods' ServiceAccount and Secret-reading Role, the ConfigMap with the worker properties, the REST
Service, the NetworkPolicy that keeps the REST port to the group and the operator, and the Deployment of
`sparklink worker` pods). Each is created, or merge-patched where it exists, so what others added stays.

The workers' REST URL is the Service's cluster DNS name over https, so the operator must run in the cluster
(or reach its Services) to talk to them; running in a pod, it names its own namespace in the NetworkPolicy.
The group's REST certificates (`model.rest_tls`) are kept in two Secrets owned by the resource: `-rest-ca`
(the group's CA, cert and key: the operator's alone) and `-rest-certs` (the worker's key store, trust store
and the CA certificate, mounted by the pods); they are read back at each reconcile and kept while they
serve, and a renewal changes the Deployment's annotation, which rolls the pods.
The pods form one distributed group, a single pod too (`WorkerSettings.properties`); each listens on
and advertises its pod IP so the others can forward requests to it.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from sparklink.clients.settings import properties_text
from sparklink.operator.hosting import HostState, rest_tls
from sparklink.operator.hosting.kube_reads import read_or_none
from sparklink.operator.model import connect_objects
from sparklink.operator.model import rest_tls as rest_listener
from sparklink.operator.model.connect_objects import CONFIG_FILE, REST_PORT, component, labels
from sparklink.operator.model.resources import Key, Resource
from sparklink.operator.model.workers import WorkerSettings

__all__ = ["CONFIG_FILE", "REST_PORT", "KubernetesWorkerHost", "component", "desired_objects", "labels"]

log = logging.getLogger("sparklink.operator.hosting")

DEFAULT_IMAGE = "sparklink:latest"
DEFAULT_STATE_DIR = ".state/operator"  # `sparklink operator run --state-dir`'s default
# Where a pod's ServiceAccount namespace is mounted: the operator's own namespace when it runs in the cluster.
IN_CLUSTER_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def desired_objects(
    owner: Resource,
    settings: WorkerSettings,
    image: str,
    operator_namespace: str | None = None,
    rest_tls_digest: str = "",
) -> dict[str, dict[str, Any]]:
    """`model.connect_objects.desired_objects` with the ConfigMap written as Java writes properties."""
    return connect_objects.desired_objects(owner, settings, image, properties_text, operator_namespace, rest_tls_digest)


def own_namespace() -> str | None:
    try:
        return IN_CLUSTER_NAMESPACE.read_text().strip() or None
    except OSError:
        return None


class KubernetesWorkerHost:
    def __init__(
        self,
        api: k8s.ApiClient,
        image: str = DEFAULT_IMAGE,
        operator_namespace: str | None = None,
        identity: rest_tls.OperatorIdentity | None = None,
        state_dir: Path | None = None,
    ) -> None:
        # The operator's client certificate: in its state directory (a pod's should be a persistent volume,
        # so that a restarted operator is still trusted by the running workers).
        self.identity = identity or rest_tls.OperatorIdentity(
            Path(state_dir or DEFAULT_STATE_DIR) / rest_tls.CLIENT_DIR
        )
        self.core = k8s.CoreV1Api(api)
        self.apps = k8s.AppsV1Api(api)
        self.rbac = k8s.RbacAuthorizationV1Api(api)
        self.networking = k8s.NetworkingV1Api(api)
        self.image = image
        self.operator_namespace = operator_namespace or own_namespace()

    def ensure(self, owner: Resource, settings: WorkerSettings) -> HostState:
        material = self._rest_tls(owner)
        digest = rest_tls.digest(material)
        objects = desired_objects(owner, settings, self.image, self.operator_namespace, digest)
        for body in objects.values():
            self._apply(owner.namespace, body)
        if "Role" not in objects:  # the settings no longer name a Secret: the pods may read none
            self._delete_role(owner)
        return self._state(owner.key, settings.replicas, material[rest_listener.CA_CERT])

    def state(self, key: Key) -> HostState | None:
        deployment = read_or_none(self.apps.read_namespaced_deployment, component(key), key.namespace)
        if deployment is None:
            return None
        ca_pem = (self._read_secret(connect_objects.rest_ca_secret(key), key.namespace) or {}).get(
            rest_listener.CA_CERT
        )
        return self._state(key, deployment.spec.replicas if deployment.spec else 1, ca_pem)

    def remove(self, key: Key) -> None:
        """Nothing to do: the garbage collector deletes what the resource owns."""

    def close(self) -> None:
        """Nothing to do: the cluster keeps running the workers."""

    def _state(self, key: Key, replicas: int | None, ca_pem: bytes | None) -> HostState:
        if not replicas:
            return HostState(None, False, 0, "spec.replicas is 0")
        url = f"https://{component(key)}-api.{key.namespace}.svc:{REST_PORT}"
        if ca_pem is None:
            return HostState(url, False, replicas, f"the REST certificates of {component(key)} are not made yet")
        with self.identity.connect(url, ca_pem, timeout=5) as client:
            ready = client.alive()
        return HostState(url, ready, replicas, None if ready else f"no worker answers at {url} yet", ca_pem=ca_pem)

    def _rest_tls(self, owner: Resource) -> dict[str, bytes]:
        """The group's REST CA and worker certificate, read from its Secrets and kept while they serve
        (made the first time); the Secrets are written only when something changed."""
        key = owner.key
        ca_name, certs_name = connect_objects.rest_ca_secret(key), connect_objects.rest_certs_secret(key)
        current = {
            **(self._read_secret(certs_name, key.namespace) or {}),
            **(self._read_secret(ca_name, key.namespace) or {}),
        }
        material = rest_tls.group_material(key, connect_objects.rest_hosts(key), self.identity.ca_pem, current or None)
        ca_part = {n: material[n] for n in (rest_listener.CA_CERT, rest_listener.CA_KEY)}
        certs_part = {**rest_listener.secret_files(material), rest_listener.CERT: material[rest_listener.CERT]}
        for name, data in ((ca_name, ca_part), (certs_name, certs_part)):
            if any(current.get(k) != v for k, v in data.items()):
                self._write_secret(owner, name, data)
        return material

    def _read_secret(self, name: str, namespace: str) -> dict[str, bytes] | None:
        secret = read_or_none(self.core.read_namespaced_secret, name, namespace)
        if secret is None:
            return None
        return {k: base64.b64decode(v) for k, v in (secret.data or {}).items()}

    def _write_secret(self, owner: Resource, name: str, data: Mapping[str, bytes]) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {
                "name": name,
                "labels": labels(owner),
                "ownerReferences": [owner.owner_reference(controller=True)],
            },
            "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
        }
        try:
            self.core.create_namespaced_secret(owner.namespace, cast(Any, body))
            log.info("created Secret %s/%s", owner.namespace, name)
        except ApiException as exc:
            if exc.status != 409:
                raise
            # The operator's RBAC lets it update Secrets, not patch them: replaced whole (no one else writes these).
            self.core.replace_namespaced_secret(name, owner.namespace, cast(Any, body))

    def _calls(self, kind: str) -> tuple[Any, Any]:
        """The create and update calls of a kind (`(namespace, body)` and `(name, namespace, body)`)."""
        calls = {
            "ServiceAccount": (self.core.create_namespaced_service_account, self.core.patch_namespaced_service_account),
            "ConfigMap": (self.core.create_namespaced_config_map, self.core.patch_namespaced_config_map),
            "Service": (self.core.create_namespaced_service, self.core.patch_namespaced_service),
            # A Role's rules are a list a merge patch would keep a Secret no longer named in: replaced whole.
            "Role": (self.rbac.create_namespaced_role, self.rbac.replace_namespaced_role),
            "RoleBinding": (self.rbac.create_namespaced_role_binding, self.rbac.patch_namespaced_role_binding),
            "NetworkPolicy": (
                self.networking.create_namespaced_network_policy,
                self.networking.patch_namespaced_network_policy,
            ),
            "Deployment": (self.apps.create_namespaced_deployment, self.apps.patch_namespaced_deployment),
        }
        return calls[kind]

    def _apply(self, namespace: str, body: dict[str, Any]) -> None:
        """Create the object, or patch it where it exists (create first: one call in the steady state's
        place of a read, and no read permission needed beyond what the operator uses)."""
        create, patch = self._calls(body["kind"])
        name = body["metadata"]["name"]
        try:
            create(namespace, cast(Any, body))
            log.info("created %s %s/%s", body["kind"], namespace, name)
            return
        except ApiException as exc:
            if exc.status != 409:
                raise
        patch(name, namespace, cast(Any, body))

    def _delete_role(self, owner: Resource) -> None:
        name = component(owner.key)
        for delete, role_name in (
            (self.rbac.delete_namespaced_role_binding, f"{name}-role"),
            (self.rbac.delete_namespaced_role, name),
        ):
            try:
                delete(role_name, owner.namespace)
            except ApiException as exc:
                if exc.status != 404:
                    raise
