"""The Kubernetes objects of a KafkaConnect's or KafkaMirrorMaker2's worker group, as Strimzi writes them.

Pure: a resource and its `WorkerSettings` in, plain API objects (dicts) out; `hosting.kubernetes` applies
them and the unit tests read them. Names and labels are Strimzi's (`<name>-connect`, `-connect-config`,
`-connect-api` on port 8083 `rest-api`; MirrorMaker 2: `<name>-mirrormaker2...`), and each object is owned
by the resource (`controller: true`, `blockOwnerDeletion: true`) so the garbage collector removes them with it.
Strimzi runs Connect pods through StrimziPodSets; a Deployment is the plain-Kubernetes equivalent.

What keeps a group to itself (KafkaConnectCluster.generateNetworkPolicy, generateRole, the restricted pod
security provider):
- a NetworkPolicy that lets only the group's own pods and the operator's (`strimzi.io/kind:
  cluster-operator`, in the operator's namespace when known) reach the REST port;
- each pod's own ServiceAccount, and a Role that lets it `get` exactly the Secrets its settings name
  through `${strimzisecrets:...}` placeholders (credentials never sit in the ConfigMap);
- a restricted securityContext (non-root, no privilege escalation, no capabilities, RuntimeDefault
  seccomp, read-only root filesystem with emptyDirs for /tmp and the worker's state), `spec.resources`
  passed through, and the REST listener bound to the pod's own IP rather than every interface;
- the REST listener on https with client certificates required (`model.rest_tls`): the group's worker
  certificate and trust store come from the Secret `<name>-connect-rest-certs` (mounted read-only, mode
  0440: the pods run in its fsGroup), which the host fills; the CA key sits in its sibling `-rest-ca`,
  which no pod mounts. The probes open a TCP connection (an HTTP probe has no client certificate).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from typing import Any

from sparklink.operator.model import rest_tls, worker_security
from sparklink.operator.model.resources import KAFKA_CONNECT, Key, Resource
from sparklink.operator.model.workers import WorkerSettings

REST_PORT = 8083
CONFIG_FILE = "kafka-connect.properties"
CONFIG_DIR = "/opt/sparklink/config"
STATE_DIR = "/var/lib/sparklink"
REST_TLS_DIR = "/opt/sparklink/rest-tls"
TMP_DIR = "/tmp"
OPERATOR_KIND = "cluster-operator"  # Strimzi's `strimzi.io/kind` label on the operator's pods
WORKER_SETTINGS_ANNOTATION = "sparklink.io/worker-settings"
REST_TLS_ANNOTATION = "sparklink.io/rest-certificates"
RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"
# Non-root user and group of the image's `sparklink` account (any non-zero id works: the root filesystem is
# read-only, and what the worker writes goes to the emptyDirs, which the pod's fsGroup may write).
RUN_AS = 1001


def component(key: Key) -> str:
    return f"{key.name}-connect" if key.kind == KAFKA_CONNECT else f"{key.name}-mirrormaker2"


def rest_certs_secret(key: Key) -> str:
    """The Secret the pods mount their REST certificate and trust store from."""
    return f"{component(key)}-rest-certs"


def rest_ca_secret(key: Key) -> str:
    """The Secret with the group's REST CA key (the operator's alone: no pod mounts it)."""
    return f"{component(key)}-rest-ca"


def rest_hosts(key: Key) -> tuple[str, ...]:
    """The names the operator reaches the group's REST Service by (its worker certificate's SANs)."""
    return rest_tls.kubernetes_hosts(f"{component(key)}-api", key.namespace)


def labels(owner: Resource) -> dict[str, str]:
    name = component(owner.key)
    kind_label = "kafka-connect" if owner.kind == KAFKA_CONNECT else "kafka-mirror-maker-2"
    return {
        "strimzi.io/cluster": owner.name,
        "strimzi.io/name": name,
        "strimzi.io/kind": owner.kind,
        "strimzi.io/component-type": kind_label,
        "app.kubernetes.io/name": kind_label,
        "app.kubernetes.io/instance": owner.name,
        "app.kubernetes.io/part-of": f"strimzi-{owner.name}"[:63],
        "app.kubernetes.io/managed-by": "sparklink-operator",
    }


def selector_labels(owner: Resource) -> dict[str, str]:
    """Strimzi's selector labels: what the Service, the Deployment and the NetworkPolicy match pods by."""
    own = labels(owner)
    return {k: own[k] for k in ("strimzi.io/cluster", "strimzi.io/name", "strimzi.io/kind")}


def secret_names(settings: WorkerSettings) -> list[str]:
    """The Secrets the pods read through the Kubernetes config provider (keys and passwords of the target
    and of each MirrorMaker 2 source cluster)."""
    auths = [settings.client_auth] if settings.client_auth is not None else []
    auths += [source.auth for source in settings.sources]  # MirrorMaker 2's source clusters read theirs too
    refs = [ref for auth in auths for ref in (auth.certificate, auth.private_key, auth.password)]
    return sorted({ref.secret for ref in refs if ref is not None})


PropertiesText = Callable[[Mapping[str, str]], str]


def desired_objects(
    owner: Resource,
    settings: WorkerSettings,
    image: str,
    properties_text: PropertiesText,
    operator_namespace: str | None = None,
    rest_tls_digest: str = "",
) -> dict[str, dict[str, Any]]:
    """Every object of the group by kind, in the order they are applied (the pods' account before them).

    `properties_text` writes the ConfigMap's properties file (`clients.settings.properties_text`, Java's escaping,
    passed in by the host: the model imports no client code)."""
    name = component(owner.key)
    meta = {"labels": labels(owner), "ownerReferences": [owner.owner_reference(controller=True)]}
    security = worker_security.kubernetes_settings(settings, owner.namespace)
    # The listener's host is the pod's IP, added at start (`_start`): not in the shared ConfigMap; its TLS
    # settings name the mounted files (`listeners` itself is written at start, with the IP).
    listener = rest_tls.listener_settings("$POD_IP", REST_PORT, REST_TLS_DIR, check_peer_hostname=False)
    listener.pop("listeners")
    properties = {**settings.properties(), **security, **listener, "sparklink.state.dir": STATE_DIR}
    objects: dict[str, dict[str, Any]] = {
        "ServiceAccount": {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": name, **meta},
        },
    }
    secrets = secret_names(settings)
    if secrets:
        objects["Role"] = {
            "apiVersion": RBAC_API_VERSION,
            "kind": "Role",
            "metadata": {"name": name, **meta},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": secrets}],
        }
        objects["RoleBinding"] = {
            "apiVersion": RBAC_API_VERSION,
            "kind": "RoleBinding",
            "metadata": {"name": f"{name}-role", **meta},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": owner.namespace}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        }
    objects["ConfigMap"] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-config", **meta},
        "data": {CONFIG_FILE: properties_text(properties)},
    }
    objects["Service"] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{name}-api", **meta},
        "spec": {
            "type": "ClusterIP",
            "selector": selector_labels(owner),
            "ports": [{"name": "rest-api", "port": REST_PORT, "targetPort": REST_PORT, "protocol": "TCP"}],
        },
    }
    objects["NetworkPolicy"] = network_policy(owner, operator_namespace)
    objects["Deployment"] = deployment(
        owner, settings, str(owner.spec.get("image") or image), bool(secrets), rest_tls_digest
    )
    return objects


def network_policy(owner: Resource, operator_namespace: str | None) -> dict[str, Any]:
    """The REST port open to the group's own pods (forwarded requests) and the operator's, nothing else.

    As Strimzi's NetworkPolicyUtils: an operator in the same namespace is matched without a namespace
    selector; in another known namespace, by that namespace's name label; unknown, in any namespace."""
    operator_peer: dict[str, Any] = {"podSelector": {"matchLabels": {"strimzi.io/kind": OPERATOR_KIND}}}
    if operator_namespace is None:
        operator_peer["namespaceSelector"] = {}
    elif operator_namespace != owner.namespace:
        operator_peer["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": operator_namespace}}
    group_peer = {"podSelector": {"matchLabels": selector_labels(owner)}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": f"{component(owner.key)}-network-policy",
            "labels": labels(owner),
            "ownerReferences": [owner.owner_reference(controller=True)],
        },
        "spec": {
            "podSelector": {"matchLabels": selector_labels(owner)},
            "policyTypes": ["Ingress"],
            "ingress": [
                {"ports": [{"port": REST_PORT, "protocol": "TCP"}], "from": [group_peer, operator_peer]},
            ],
        },
    }


def pod_security_context() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS,
        "runAsGroup": RUN_AS,
        "fsGroup": RUN_AS,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def container_security_context() -> dict[str, Any]:
    """Kubernetes' `restricted` Pod Security Standard, and a read-only root filesystem."""
    return {
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def deployment(
    owner: Resource, settings: WorkerSettings, image: str, reads_secrets: bool, rest_tls_digest: str = ""
) -> dict[str, Any]:
    name = component(owner.key)
    fingerprint = {WORKER_SETTINGS_ANNOTATION: settings.fingerprint()}
    if rest_tls_digest:  # a renewed REST certificate rolls the pods, which read it at start
        fingerprint[REST_TLS_ANNOTATION] = rest_tls_digest
    container: dict[str, Any] = {
        "name": name,
        "image": image,
        **_start(),
        "ports": [{"name": "rest-api", "containerPort": REST_PORT, "protocol": "TCP"}],
        # TCP probes: the listener asks every caller for a client certificate, which the kubelet has not.
        "readinessProbe": {"tcpSocket": {"port": "rest-api"}, "periodSeconds": 10},
        "livenessProbe": {"tcpSocket": {"port": "rest-api"}, "initialDelaySeconds": 60, "periodSeconds": 10},
        "securityContext": container_security_context(),
        "volumeMounts": [
            {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
            {"name": "state", "mountPath": STATE_DIR},
            {"name": "tmp", "mountPath": TMP_DIR},
            {"name": "rest-tls", "mountPath": REST_TLS_DIR, "readOnly": True},
        ],
    }
    resources = owner.spec.get("resources")
    if isinstance(resources, dict) and resources:
        container["resources"] = resources
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "labels": labels(owner),
            "ownerReferences": [owner.owner_reference(controller=True)],
            "annotations": fingerprint,
        },
        "spec": {
            "replicas": settings.replicas,
            "selector": {"matchLabels": selector_labels(owner)},
            "template": {
                "metadata": {"labels": labels(owner), "annotations": fingerprint},
                "spec": {
                    "serviceAccountName": name,
                    # The token is only needed by the Kubernetes config provider, to read the group's Secrets.
                    "automountServiceAccountToken": reads_secrets,
                    "securityContext": pod_security_context(),
                    "containers": [container],
                    "volumes": [
                        {"name": "config", "configMap": {"name": f"{name}-config"}},
                        {"name": "state", "emptyDir": {}},
                        {"name": "tmp", "emptyDir": {}},
                        {
                            "name": "rest-tls",
                            "secret": {"secretName": rest_certs_secret(owner.key), "defaultMode": 0o440},
                        },
                    ],
                },
            },
        },
    }


def _start() -> dict[str, Any]:
    """How a pod starts its worker: its REST listener on the pod's IP only (what the Service, the probes and
    the group's other workers reach), advertised as that IP so forwarded requests reach this pod."""
    mounted = f"{CONFIG_DIR}/{CONFIG_FILE}"
    local = f"{TMP_DIR}/{CONFIG_FILE}"
    script = (
        f"cp {shlex.quote(mounted)} {local}"
        f' && echo "listeners=https://$POD_IP:{REST_PORT}" >> {local}'
        f' && echo "rest.advertised.host.name=$POD_IP" >> {local}'
        f" && exec sparklink worker {local}"
    )
    return {
        "command": ["sh", "-c", script],
        "env": [
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            # Where Spark and Ivy keep their caches: the root filesystem is read-only.
            {"name": "HOME", "value": TMP_DIR},
        ],
    }
