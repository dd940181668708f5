"""Runs a resource's Connect workers in a Kubernetes cluster: a ConfigMap with the worker properties, a
Deployment of `sparklink worker` pods, and the REST Service, named and labelled as Strimzi names them
(`<name>-connect`, `<name>-connect-config`, `<name>-connect-api` on port 8083 `rest-api`; MirrorMaker 2:
`<name>-mirrormaker2...`), each owned by the resource (`controller: true`, `blockOwnerDeletion: true`) so
Kubernetes' garbage collector removes them with it. Strimzi runs Connect pods through its own
StrimziPodSets; a Deployment is the plain-Kubernetes equivalent for one worker.

The workers' REST URL is the Service's cluster DNS name, so the operator must run in the cluster (or
reach its Services) to talk to them. With `spec.replicas` above 1 the pods form one distributed group
(`WorkerSettings.properties`); each advertises its pod IP (`rest.advertised.host.name`, appended to a
copy of the mounted properties at start) so the others can forward requests to it.
"""

from __future__ import annotations

import logging
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from sparklink.clients.settings import properties_text
from sparklink.operator.connect_client import ConnectClient
from sparklink.operator.hosting import HostState
from sparklink.operator.model import worker_security
from sparklink.operator.model.resources import KAFKA_CONNECT, Key, Resource
from sparklink.operator.model.workers import WorkerSettings

log = logging.getLogger("sparklink.operator.hosting")

REST_PORT = 8083
CONFIG_FILE = "kafka-connect.properties"
DEFAULT_IMAGE = "sparklink:latest"


def component(key: Key) -> str:
    return f"{key.name}-connect" if key.kind == KAFKA_CONNECT else f"{key.name}-mirrormaker2"


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


def desired_objects(owner: Resource, settings: WorkerSettings, image: str) -> dict[str, dict[str, Any]]:
    """The ConfigMap, Service and Deployment for `owner`, as plain API objects (pure; unit-testable)."""
    name = component(owner.key)
    meta_labels = labels(owner)
    selector = {k: meta_labels[k] for k in ("strimzi.io/cluster", "strimzi.io/name", "strimzi.io/kind")}
    owner_ref = [owner.owner_reference(controller=True)]
    security = worker_security.kubernetes_settings(settings, owner.namespace)
    properties = {**settings.properties(), **security, "rest.host.name": "0.0.0.0", "rest.port": str(REST_PORT)}
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-config", "labels": meta_labels, "ownerReferences": owner_ref},
        "data": {CONFIG_FILE: properties_text(properties)},
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{name}-api", "labels": meta_labels, "ownerReferences": owner_ref},
        "spec": {
            "type": "ClusterIP",
            "selector": selector,
            "ports": [{"name": "rest-api", "port": REST_PORT, "targetPort": REST_PORT, "protocol": "TCP"}],
        },
    }
    image = str(owner.spec.get("image") or image)
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "labels": meta_labels,
            "ownerReferences": owner_ref,
            "annotations": {"sparklink.io/worker-settings": settings.fingerprint()},
        },
        "spec": {
            "replicas": settings.replicas,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {
                    "labels": meta_labels,
                    "annotations": {"sparklink.io/worker-settings": settings.fingerprint()},
                },
                "spec": {
                    "containers": [
                        {
                            "name": name,
                            "image": image,
                            **_container_start(settings.replicas),
                            "ports": [{"name": "rest-api", "containerPort": REST_PORT, "protocol": "TCP"}],
                            "readinessProbe": {"httpGet": {"path": "/", "port": "rest-api"}, "periodSeconds": 10},
                            "livenessProbe": {
                                "httpGet": {"path": "/", "port": "rest-api"},
                                "initialDelaySeconds": 60,
                                "periodSeconds": 10,
                            },
                            "volumeMounts": [{"name": "config", "mountPath": "/opt/sparklink/config"}],
                        }
                    ],
                    "volumes": [{"name": "config", "configMap": {"name": f"{name}-config"}}],
                },
            },
        },
    }
    return {"ConfigMap": config_map, "Service": service, "Deployment": deployment}


def _container_start(replicas: int) -> dict[str, Any]:
    """How a pod starts its worker: as is for one replica; in a group, with its pod IP advertised (the
    Service name would send a forwarded request to any pod, not to the leader)."""
    mounted = f"/opt/sparklink/config/{CONFIG_FILE}"
    if replicas <= 1:
        return {"args": ["worker", mounted]}
    local = f"/tmp/{CONFIG_FILE}"
    script = (
        f'cp {mounted} {local} && echo "rest.advertised.host.name=$POD_IP" >> {local} && exec sparklink worker {local}'
    )
    return {
        "command": ["sh", "-c", script],
        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
    }


class KubernetesWorkerHost:
    def __init__(self, api: k8s.ApiClient, image: str = DEFAULT_IMAGE) -> None:
        self.core = k8s.CoreV1Api(api)
        self.apps = k8s.AppsV1Api(api)
        self.image = image

    def ensure(self, owner: Resource, settings: WorkerSettings) -> HostState:
        objects = desired_objects(owner, settings, self.image)
        ns = owner.namespace
        self._apply(
            objects["ConfigMap"],
            lambda: self.core.read_namespaced_config_map(objects["ConfigMap"]["metadata"]["name"], ns),
            lambda body: self.core.create_namespaced_config_map(ns, body),
            lambda body: self.core.patch_namespaced_config_map(body["metadata"]["name"], ns, body),
        )
        self._apply(
            objects["Service"],
            lambda: self.core.read_namespaced_service(objects["Service"]["metadata"]["name"], ns),
            lambda body: self.core.create_namespaced_service(ns, body),
            lambda body: self.core.patch_namespaced_service(body["metadata"]["name"], ns, body),
        )
        self._apply(
            objects["Deployment"],
            lambda: self.apps.read_namespaced_deployment(objects["Deployment"]["metadata"]["name"], ns),
            lambda body: self.apps.create_namespaced_deployment(ns, body),
            lambda body: self.apps.patch_namespaced_deployment(body["metadata"]["name"], ns, body),
        )
        return self._state(owner.key, settings.replicas)

    def state(self, key: Key) -> HostState | None:
        try:
            deployment = self.apps.read_namespaced_deployment(component(key), key.namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return self._state(key, deployment.spec.replicas if deployment.spec else 1)

    def remove(self, key: Key) -> None:
        """Nothing to do: the garbage collector deletes what the resource owns."""

    def close(self) -> None:
        """Nothing to do: the cluster keeps running the workers."""

    def _state(self, key: Key, replicas: int | None) -> HostState:
        if not replicas:
            return HostState(None, False, 0, "spec.replicas is 0")
        url = f"http://{component(key)}-api.{key.namespace}.svc:{REST_PORT}"
        with ConnectClient(url, timeout=5) as client:
            ready = client.alive()
        return HostState(url, ready, replicas, None if ready else f"no worker answers at {url} yet")

    @staticmethod
    def _apply(body: dict[str, Any], read: Any, create: Any, patch: Any) -> None:
        try:
            read()
        except ApiException as exc:
            if exc.status != 404:
                raise
            create(body)
            log.info("created %s %s", body["kind"], body["metadata"]["name"])
            return
        patch(body)
