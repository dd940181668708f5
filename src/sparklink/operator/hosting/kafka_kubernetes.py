"""Runs a Kafka resource in a Kubernetes cluster the way Strimzi lays it out, as objects: the bootstrap Service
(`<cluster>-kafka-bootstrap`, one `tcp-<listener>` port per listener), the headless `<cluster>-kafka-brokers`
Service the nodes resolve each other through, a ConfigMap of settings per node (`<cluster>-<pool>-<id>`),
and a StrimziPodSet per pool (`<cluster>-<pool>`) holding each node's pod, all owned by the Kafka so the
garbage collector removes them with it. Every pod spec is checked by the API server (a dry-run create).
TLS as Strimzi has it (`kafka_kubernetes_tls`): every node's certificate Secret, the trust bundle and the
operator's certificate Secret, mounted into the pods; listener settings in each node's ConfigMap; the CA
certificate generations on each pod, so a renewal rolls the pods.

Nothing here runs pods: a StrimziPodSet controller (Strimzi's, or a kubelet-backed one) creates them from the
sets; a settings change shows as a new `strimzi.io/configuration-hash` on the node's pod, which is what
such a controller rolls on. Until pods report ready, the Kafka stays NotReady saying so.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from collections.abc import Sequence
from typing import Any, cast

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from sparklink.clients.settings import KafkaClientSettings, properties_text
from sparklink.operator.hosting import kafka_kubernetes_tls as tls
from sparklink.operator.hosting.kafka import KafkaState, RollReport
from sparklink.operator.hosting.kube_reads import read_or_none
from sparklink.operator.model import certificate_authority as cas
from sparklink.operator.model.kafka import DesiredCluster, DesiredNode
from sparklink.operator.model.kafka_changes import NodeChange
from sparklink.operator.model.resources import Key, Resource

log = logging.getLogger("sparklink.operator.hosting")

PODSET_GROUP, PODSET_VERSION, PODSETS = "core.strimzi.io", "v1", "strimzipodsets"
CONTROL_PLANE_PORT, REPLICATION_PORT, AGENT_PORT = tls.CONTROL_PLANE_PORT, tls.REPLICATION_PORT, 8443
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CONFIG_DIR = "/opt/kafka/custom-config"
DATA_DIR = "/var/lib/kafka/data"


def labels(kafka: Resource, name: str) -> dict[str, str]:
    return {
        "strimzi.io/cluster": kafka.name,
        "strimzi.io/kind": "Kafka",
        "strimzi.io/name": name,
        "strimzi.io/component-type": "kafka",
        "app.kubernetes.io/name": "kafka",
        "app.kubernetes.io/instance": kafka.name,
        "app.kubernetes.io/part-of": f"strimzi-{kafka.name}"[:63],
        "app.kubernetes.io/managed-by": "sparklink-operator",
    }


def pod_dns(kafka: Resource, node: DesiredNode) -> str:
    return f"{node.name}.{kafka.name}-kafka-brokers.{kafka.namespace}.svc"


def node_settings(kafka: Resource, desired: DesiredCluster, node: DesiredNode) -> dict[str, str]:
    """The node's server.properties: the platform's part (ids, listeners, quorum, storage) and the user's."""
    voters = ",".join(f"{n.node_id}@{pod_dns(kafka, n)}:{CONTROL_PLANE_PORT}" for n in desired.nodes if n.controller)
    listeners, advertised = [], []
    if node.controller:
        listeners.append(f"{tls.CONTROL_PLANE}://0.0.0.0:{CONTROL_PLANE_PORT}")
    if node.broker:
        listeners.append(f"{tls.REPLICATION}://0.0.0.0:{REPLICATION_PORT}")
        advertised.append(f"{tls.REPLICATION}://{pod_dns(kafka, node)}:{REPLICATION_PORT}")
        for lst in desired.served_listeners:
            name = tls.listener_name(lst)
            listeners.append(f"{name}://0.0.0.0:{lst.port}")
            advertised.append(f"{name}://{pod_dns(kafka, node)}:{lst.port}")
    settings = {
        "node.id": str(node.node_id),
        "process.roles": node.roles,
        "controller.quorum.voters": voters,
        "controller.listener.names": tls.CONTROL_PLANE,
        "listeners": ",".join(listeners),
        "log.dirs": f"{DATA_DIR}/kafka-log{node.node_id}",
        **tls.tls_settings(node.name, node, desired.served_listeners),
    }
    if node.broker:
        settings["advertised.listeners"] = ",".join(advertised)
        settings["inter.broker.listener.name"] = tls.REPLICATION
    if desired.authorization is not None:
        settings["authorizer.class.name"] = STANDARD_AUTHORIZER
        settings["super.users"] = ";".join(tls.super_users(kafka.name, desired))
    return {**settings, **node.config}


def desired_objects(kafka: Resource, desired: DesiredCluster, image: str) -> list[dict[str, Any]]:
    """Services, per-node ConfigMaps and per-pool StrimziPodSets for `kafka` (pure; unit-testable)."""
    owner = [kafka.owner_reference(controller=True)]
    served = desired.served_listeners
    client_ports = [{"name": f"tcp-{lst.name}", "port": lst.port, "targetPort": lst.port} for lst in served]
    selector = {"strimzi.io/cluster": kafka.name, "strimzi.io/kind": "Kafka"}
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": f"{kafka.name}-kafka-bootstrap",
                "labels": labels(kafka, f"{kafka.name}-kafka"),
                "ownerReferences": owner,
            },
            "spec": {
                "type": "ClusterIP",
                "selector": {**selector, "strimzi.io/broker-role": "true"},
                "ports": [{**p, "protocol": "TCP"} for p in client_ports],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": f"{kafka.name}-kafka-brokers",
                "labels": labels(kafka, f"{kafka.name}-kafka"),
                "ownerReferences": owner,
            },
            "spec": {
                "clusterIP": "None",
                "publishNotReadyAddresses": True,
                "selector": selector,
                "ports": [
                    {"name": "tcp-ctrlplane", "port": CONTROL_PLANE_PORT, "targetPort": CONTROL_PLANE_PORT},
                    {"name": "tcp-replication", "port": REPLICATION_PORT, "targetPort": REPLICATION_PORT},
                    {"name": "tcp-kafkaagent", "port": AGENT_PORT, "targetPort": AGENT_PORT},
                    *client_ports,
                ],
            },
        },
    ]
    kafka_image = str((kafka.spec.get("kafka") or {}).get("image") or image)
    for pool in desired.pools:
        pool_name = f"{kafka.name}-{pool.name}"
        pods = []
        for node in (n for n in desired.nodes if n.pool == pool.name):
            settings = node_settings(kafka, desired, node)
            text = properties_text(settings)  # escaped: no value can add a setting of its own
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": node.name, "labels": labels(kafka, pool_name), "ownerReferences": owner},
                    "data": {"server.config": text},
                }
            )
            pods.append(_pod(kafka, node, pool_name, kafka_image, text, desired))
        objects.append(
            {
                "apiVersion": f"{PODSET_GROUP}/{PODSET_VERSION}",
                "kind": "StrimziPodSet",
                "metadata": {"name": pool_name, "labels": labels(kafka, pool_name), "ownerReferences": owner},
                "spec": {"selector": {"matchLabels": {**selector, "strimzi.io/name": pool_name}}, "pods": pods},
            }
        )
    return objects


def _pod(
    kafka: Resource, node: DesiredNode, pool_name: str, image: str, settings: str, desired: DesiredCluster
) -> dict[str, Any]:
    digest = hashlib.sha256(settings.encode()).hexdigest()[:8]
    ports = [{"name": "tcp-ctrlplane", "containerPort": CONTROL_PLANE_PORT, "protocol": "TCP"}]
    if node.broker:
        ports += [
            {"name": "tcp-replication", "containerPort": REPLICATION_PORT, "protocol": "TCP"},
            {"name": "tcp-kafkaagent", "containerPort": AGENT_PORT, "protocol": "TCP"},
        ]
        ports += [
            {"name": f"tcp-{lst.name}", "containerPort": lst.port, "protocol": "TCP"}
            for lst in desired.served_listeners
        ]
    heap = node.heap or "512m"
    annotations = {"strimzi.io/configuration-hash": digest}
    if desired.cas is not None:  # a renewal changes them, which is what a StrimziPodSet controller rolls on
        annotations[cas.CLUSTER_CA_CERT_GENERATION] = str(desired.cas.cluster.cert_generation)
        annotations[cas.CLIENTS_CA_CERT_GENERATION] = str(desired.cas.clients.cert_generation)
        annotations[cas.CLUSTER_CA_KEY_GENERATION] = str(desired.cas.cluster.key_generation)
    secret_volumes, secret_mounts = tls.volumes(node.name, kafka.name)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": node.name,
            "labels": {
                **labels(kafka, pool_name),
                "strimzi.io/pool-name": node.pool,
                "strimzi.io/pod-name": node.name,
                "strimzi.io/broker-role": str(node.broker).lower(),
                "strimzi.io/controller-role": str(node.controller).lower(),
                "statefulset.kubernetes.io/pod-name": node.name,
            },
            "annotations": annotations,
        },
        "spec": {
            "hostname": node.name,
            "subdomain": f"{kafka.name}-kafka-brokers",
            "containers": [
                {
                    "name": "kafka",
                    "image": image,
                    "command": ["/opt/kafka/bin/kafka-server-start.sh", f"{CONFIG_DIR}/server.config"],
                    "env": [{"name": "KAFKA_HEAP_OPTS", "value": f"-Xms{heap} -Xmx{heap}"}],
                    "ports": ports,
                    "readinessProbe": {
                        "tcpSocket": {"port": REPLICATION_PORT if node.broker else CONTROL_PLANE_PORT},
                        "periodSeconds": 10,
                    },
                    "volumeMounts": [
                        {"name": "data", "mountPath": DATA_DIR},
                        {"name": "config", "mountPath": CONFIG_DIR},
                        *secret_mounts,
                    ],
                }
            ],
            "volumes": [
                {"name": "data", "emptyDir": {}},
                {"name": "config", "configMap": {"name": node.name}},
                *secret_volumes,
            ],
        },
    }


class KubernetesKafkaHost:
    """`spec.kafka.image` runs the nodes, or Apache Kafka's image of `spec.kafka.version`."""

    def __init__(self, api: k8s.ApiClient) -> None:
        self.core = k8s.CoreV1Api(api)
        self.custom = k8s.CustomObjectsApi(api)

    def running(self, owner: Resource) -> KafkaState | None:
        sets: dict[str, Any] = self.custom.list_namespaced_custom_object(  # type: ignore[assignment]
            PODSET_GROUP, PODSET_VERSION, owner.namespace, PODSETS, label_selector=f"strimzi.io/cluster={owner.name}"
        )
        items = [s for s in sets.get("items", []) if _owned_by(s, owner)]
        if not items:
            return None
        return self._state(owner, items)

    def ensure(self, owner: Resource, desired: DesiredCluster, add: Sequence[DesiredNode]) -> KafkaState:
        image = f"apache/kafka:{(owner.spec.get('kafka') or {}).get('version') or 'latest'}"
        objects = desired_objects(owner, desired, image)
        for obj in objects:
            if obj["kind"] == "StrimziPodSet":
                for pod in obj["spec"]["pods"]:  # the API server validates each pod spec, storing nothing
                    self.core.create_namespaced_pod(owner.namespace, pod, dry_run="All")
        if desired.cas is not None:
            self._secrets(owner, desired)
        for obj in objects:
            self._apply(owner.namespace, obj)
        return self.running(owner) or KafkaState(None, {}, {}, ready=False, detail="no StrimziPodSet yet")

    def admin(self, owner: Resource) -> KafkaClientSettings | None:
        """The operator's certificate on the replication port of the bootstrap Service, once the pods run."""
        state = self.running(owner)
        secret = self._read_secret(owner.namespace, tls.operator_secret_name(owner.name))
        bundle = self._read_secret(owner.namespace, tls.trust_bundle_name(owner.name))
        if state is None or not state.ready or secret is None or bundle is None:
            return None
        return KafkaClientSettings.from_properties(
            {
                "bootstrap.servers": f"{owner.name}-kafka-bootstrap.{owner.namespace}.svc:{REPLICATION_PORT}",
                "security.protocol": "SSL",
                "ssl.truststore.type": "PEM",
                "ssl.truststore.certificates": bundle["cluster-ca.crt"].decode(),
                "ssl.keystore.type": "PEM",
                "ssl.keystore.certificate.chain": secret[f"{tls.OPERATOR_NAME}.crt"].decode(),
                "ssl.keystore.key": secret[f"{tls.OPERATOR_NAME}.key"].decode(),
            }
        )

    def _secrets(self, owner: Resource, desired: DesiredCluster) -> None:
        """The trust bundle, each node's certificate and the operator's, as Strimzi keeps them."""
        assert desired.cas is not None
        authorities = desired.cas
        generation = {cas.CLUSTER_CA_CERT_GENERATION: str(authorities.cluster.cert_generation)}
        ref = [owner.owner_reference(controller=False)]
        bundle = {"cluster-ca.crt": authorities.cluster.cert_pem, "clients-ca.crt": authorities.clients.cert_pem}
        self._write_secret(owner, tls.trust_bundle_name(owner.name), bundle, {}, "trust-bundle", ref)
        for node in desired.nodes:
            current = self._read_secret_with_annotations(owner.namespace, node.name)
            data = tls.node_secret_data(owner.name, owner.namespace, node.name, authorities, *current)
            self._write_secret(owner, node.name, data, generation, f"{owner.name}-{node.pool}", ref)
        name = tls.operator_secret_name(owner.name)
        data = tls.operator_secret_data(authorities, *self._read_secret_with_annotations(owner.namespace, name))
        self._write_secret(owner, name, data, generation, "strimzi", ref)

    def _read_secret(self, namespace: str, name: str) -> dict[str, bytes] | None:
        return self._read_secret_with_annotations(namespace, name)[0]

    def _read_secret_with_annotations(
        self, namespace: str, name: str
    ) -> tuple[dict[str, bytes] | None, dict[str, str]]:
        found = read_or_none(self.core.read_namespaced_secret, name, namespace)
        if found is None:
            return None, {}
        annotations = dict((found.metadata.annotations if found.metadata else None) or {})
        return {k: base64.b64decode(v) for k, v in (found.data or {}).items()}, annotations

    def _write_secret(
        self,
        owner: Resource,
        name: str,
        data: dict[str, bytes],
        annotations: dict[str, str],
        component: str,
        refs: list[dict[str, Any]],
    ) -> None:
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {
                "name": name,
                "labels": labels(owner, component),
                "annotations": annotations,
                "ownerReferences": refs,
            },
            "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
        }
        current, current_annotations = self._read_secret_with_annotations(owner.namespace, name)
        if current is None:
            self.core.create_namespaced_secret(owner.namespace, cast(Any, body))
            log.info("created Secret %s/%s", owner.namespace, name)
        elif current != data or current_annotations != annotations:
            self.core.replace_namespaced_secret(name, owner.namespace, cast(Any, body))

    def roll(self, owner: Resource, desired: DesiredCluster, changes: Sequence[NodeChange]) -> RollReport:
        return RollReport(False, reason="RuntimeException", message="pods are rolled by their StrimziPodSet controller")

    def remove(self, key: Key) -> None:
        """Nothing to do: the garbage collector deletes what the Kafka owns."""

    def close(self) -> None:
        """Nothing to do: the cluster keeps its objects."""

    def _state(self, owner: Resource, podsets: list[dict[str, Any]]) -> KafkaState:
        ids: dict[str, tuple[int, ...]] = {}
        for podset in podsets:
            for pod in podset["spec"].get("pods", []):
                pool = pod["metadata"]["labels"].get("strimzi.io/pool-name", "")
                node_id = int(pod["metadata"]["name"].rsplit("-", 1)[1])
                ids[pool] = tuple(sorted((*ids.get(pool, ()), node_id)))
        ready = sum(int((s.get("status") or {}).get("readyPods") or 0) for s in podsets)
        total = sum(len(s["spec"].get("pods", [])) for s in podsets)
        detail = f"{ready} of {total} pods ready; their StrimziPodSets wait for a controller and kubelets to run them"
        listeners = owner.spec.get("kafka", {}).get("listeners") or []
        service = f"{owner.name}-kafka-bootstrap.{owner.namespace}.svc"
        addresses = {
            str(lst["name"]): ((service, int(lst["port"])),)
            for lst in listeners
            if isinstance(lst, dict) and isinstance(lst.get("port"), int) and lst.get("name")
        }
        return KafkaState(
            None,
            {},
            addresses,
            ready=total > 0 and ready == total,
            detail=detail,
            node_ids=ids,
            can_add_brokers=False,
        )

    def _apply(self, namespace: str, obj: dict[str, Any]) -> None:
        """Create the object, or update it where it exists (merge patch: what others added stays)."""
        name, kind = obj["metadata"]["name"], obj["kind"]
        try:
            if kind == "StrimziPodSet":
                self.custom.create_namespaced_custom_object(PODSET_GROUP, PODSET_VERSION, namespace, PODSETS, obj)
            elif kind == "Service":
                self.core.create_namespaced_service(namespace, cast(Any, obj))
            else:
                self.core.create_namespaced_config_map(namespace, cast(Any, obj))
            log.info("created %s %s/%s", kind, namespace, name)
            return
        except ApiException as exc:
            if exc.status != 409:
                raise
        if kind == "StrimziPodSet":
            self.custom.patch_namespaced_custom_object(
                PODSET_GROUP,
                PODSET_VERSION,
                namespace,
                PODSETS,
                name,
                obj,
                _content_type="application/merge-patch+json",
            )
        elif kind == "Service":
            self.core.patch_namespaced_service(name, namespace, obj)
        else:
            self.core.patch_namespaced_config_map(name, namespace, obj)


def _owned_by(obj: dict[str, Any], owner: Resource) -> bool:
    refs = obj.get("metadata", {}).get("ownerReferences") or []
    return any(r.get("uid") == owner.uid for r in refs)
