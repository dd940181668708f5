"""The Kubernetes runtime's objects on a real API server: they pass its validation, carry Strimzi's
names, labels and owner references, follow a settings change and a CA renewal, and are garbage-collected with
their KafkaConnect or Kafka. (There are no kubelets here, so the pods stay Pending: this tests the objects.)"""

from __future__ import annotations

import base64
import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import javaproperties
import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from sparklink.operator.clock import SystemClock
from sparklink.operator.hosting.kafka_kubernetes import PODSET_GROUP, PODSET_VERSION, PODSETS, KubernetesKafkaHost
from sparklink.operator.hosting.kubernetes import KubernetesWorkerHost
from sparklink.operator.hosting.rest_tls import OperatorIdentity
from sparklink.operator.kube.store import KubeStore
from sparklink.operator.metrics import OperatorMetrics
from sparklink.operator.model import kafka, workers
from sparklink.operator.model.autorestart import BackOff
from sparklink.operator.model.resources import Resource
from sparklink.operator.reconcile import kafka_connect
from sparklink.operator.reconcile.context import Deps, load_config_model
from sparklink.operator.reconcile.kafka_ca import reconcile_cas
from tests.helpers import wait_for
from tests.it.operator_fixtures import Kube, kafka_connect_body

pytestmark = pytest.mark.kube


def gone(*reads: Any) -> bool:
    for read in reads:
        try:
            read()
            return False
        except ApiException as exc:
            if exc.status != 404:
                raise
    return True


def test_deployment_service_and_config_map_validate_and_are_owned(
    kube_api: k8s.ApiClient, kubeobj: Kube, tmp_path: Path
) -> None:
    body = kafka_connect_body("objects", "my-cluster-kafka-bootstrap:9092")
    body["spec"]["resources"] = {"requests": {"cpu": "250m"}, "limits": {"memory": "2Gi"}}
    created = kubeobj.create(body)
    owner = Resource.from_json(created)
    identity = OperatorIdentity(tmp_path / "rest-client")
    runtime = KubernetesWorkerHost(
        kube_api, image="example.org/sparklink:test", operator_namespace=kubeobj.ns, identity=identity
    )
    state = runtime.ensure(owner, workers.from_resource(owner))
    assert state.url == f"https://objects-connect-api.{kubeobj.ns}.svc:8083" and not state.ready
    # The group's REST certificates: the pods' Secret (key store, trust store of the operator's CA and the group's)
    # and the CA's, which holds the CA key and which no pod mounts; both owned, read back as they were.
    certs = k8s.CoreV1Api(kube_api).read_namespaced_secret("objects-connect-rest-certs", kubeobj.ns)
    ca_secret = k8s.CoreV1Api(kube_api).read_namespaced_secret("objects-connect-rest-ca", kubeobj.ns)
    assert set(certs.data) == {"ca.crt", "tls.crt", "keystore.pem", "trusted.crt"}
    assert set(ca_secret.data) == {"ca.crt", "ca.key"} and state.ca_pem == base64.b64decode(certs.data["ca.crt"])
    assert identity.ca_pem in base64.b64decode(certs.data["trusted.crt"])
    assert certs.metadata.owner_references[0].uid == ca_secret.metadata.owner_references[0].uid == owner.uid
    assert runtime.ensure(owner, workers.from_resource(owner)).ca_pem == state.ca_pem  # kept, not made again

    apps, core = k8s.AppsV1Api(kube_api), k8s.CoreV1Api(kube_api)
    deployment = apps.read_namespaced_deployment("objects-connect", kubeobj.ns)
    service = core.read_namespaced_service("objects-connect-api", kubeobj.ns)
    config_map = core.read_namespaced_config_map("objects-connect-config", kubeobj.ns)
    for obj in (deployment, service, config_map):
        (ref,) = obj.metadata.owner_references
        assert (ref.kind, ref.name, ref.uid, ref.controller, ref.block_owner_deletion) == (
            "KafkaConnect",
            "objects",
            owner.uid,
            True,
            True,
        )
        assert obj.metadata.labels["strimzi.io/cluster"] == "objects"
        assert obj.metadata.labels["strimzi.io/kind"] == "KafkaConnect"
    assert service.spec.ports[0].name == "rest-api" and service.spec.ports[0].port == 8083
    assert deployment.spec.template.spec.containers[0].image == "example.org/sparklink:test"
    assert "group.id=" + owner.spec["groupId"] in config_map.data["kafka-connect.properties"]
    # Strimzi's hardening, as the API server stored it: the pods restricted and on their own account, the REST
    # port open to the group and the operator only (the operator's namespace is given here: same namespace).
    pod = deployment.spec.template.spec
    (container,) = pod.containers
    assert pod.service_account_name == "objects-connect" and pod.automount_service_account_token is False
    assert pod.security_context.run_as_non_root and pod.security_context.seccomp_profile.type == "RuntimeDefault"
    restricted = container.security_context
    assert restricted.read_only_root_filesystem and restricted.allow_privilege_escalation is False
    assert restricted.capabilities.drop == ["ALL"]
    assert container.resources.limits == {"memory": "2Gi"} and container.resources.requests == {"cpu": "250m"}
    assert core.read_namespaced_service_account("objects-connect", kubeobj.ns).metadata.owner_references[0].uid == (
        owner.uid
    )
    policy = k8s.NetworkingV1Api(kube_api).read_namespaced_network_policy("objects-connect-network-policy", kubeobj.ns)
    assert policy.spec.pod_selector.match_labels == service.spec.selector
    (rule,) = policy.spec.ingress
    assert [(p.port, p.protocol) for p in rule.ports] == [(8083, "TCP")]
    group, operator = rule._from
    assert group.pod_selector.match_labels == service.spec.selector and group.namespace_selector is None
    assert operator.pod_selector.match_labels == {"strimzi.io/kind": "cluster-operator"}
    assert operator.namespace_selector is None
    # The controller manager acts on the Deployment: it gets a ReplicaSet.
    wait_for(
        lambda: apps.list_namespaced_replica_set(kubeobj.ns, label_selector="strimzi.io/cluster=objects").items,
        60,
        "a ReplicaSet",
    )

    # A settings change reaches the ConfigMap and rolls the pod template.
    changed = Resource.from_json(kubeobj.spec("KafkaConnect", "objects", config={"task.trigger.interval.ms": 750}))
    runtime.ensure(changed, workers.from_resource(changed))
    assert (
        "task.trigger.interval.ms=750"
        in core.read_namespaced_config_map("objects-connect-config", kubeobj.ns).data["kafka-connect.properties"]
    )
    rolled = apps.read_namespaced_deployment("objects-connect", kubeobj.ns).spec.template.metadata.annotations
    assert rolled != deployment.spec.template.metadata.annotations

    kubeobj.delete("KafkaConnect", "objects")

    def collected() -> bool:
        return gone(
            lambda: apps.read_namespaced_deployment("objects-connect", kubeobj.ns),
            lambda: core.read_namespaced_service("objects-connect-api", kubeobj.ns),
            lambda: core.read_namespaced_config_map("objects-connect-config", kubeobj.ns),
        )

    wait_for(collected, 120, "the garbage collector to delete what the KafkaConnect owned")


def test_spec_build_builds_no_image_and_says_so_while_the_workers_objects_are_made(
    kube_api: k8s.ApiClient, kubeobj: Kube, tmp_path: Path
) -> None:
    body = kafka_connect_body("built", "my-cluster-kafka-bootstrap:9092")
    jar = {"type": "jar", "url": "https://example.org/plugin.jar"}
    body["spec"]["build"] = {
        "output": {"type": "docker", "image": "x/y:z"},
        "plugins": [{"name": "pp", "artifacts": [jar]}],
    }
    key = Resource.from_json(kubeobj.create(body)).key
    identity = OperatorIdentity(tmp_path / "rest-client")
    runtime = KubernetesWorkerHost(
        kube_api, image="example.org/sparklink:test", operator_namespace=kubeobj.ns, identity=identity
    )
    store = KubeStore(kube_api)
    deps = Deps(
        store, runtime, SystemClock(), BackOff(timedelta(minutes=1)), OperatorMetrics(), connect=identity.connect
    )
    kafka_connect.reconcile(deps, key)  # the Kubernetes runtime's Deps have no plugin builder
    status = kubeobj.get("KafkaConnect", "built")["status"]
    reasons = [(c["type"], c.get("reason")) for c in status["conditions"]]
    assert reasons == [("NotReady", "Creating"), ("Warning", "BuildNotSupported")]  # no kubelets: pods stay Pending
    assert "no container image is built" in status["conditions"][1]["message"]
    deployment = k8s.AppsV1Api(kube_api).read_namespaced_deployment("built-connect", kubeobj.ns)
    assert deployment.spec.template.spec.containers[0].image == "example.org/sparklink:test"
    kubeobj.delete("KafkaConnect", "built")


def test_a_group_with_credentials_gets_a_role_for_exactly_its_secrets_and_loses_it_without(
    kube_api: k8s.ApiClient, kubeobj: Kube, tmp_path: Path
) -> None:
    core, rbac = k8s.CoreV1Api(kube_api), k8s.RbacAuthorizationV1Api(kube_api)
    core.create_namespaced_secret(
        kubeobj.ns, {"metadata": {"name": "creds-user"}, "stringData": {"password": "pw-not-in-any-object"}}
    )
    body = kafka_connect_body("creds", "my-cluster-kafka-bootstrap:9092")
    body["spec"]["authentication"] = {
        "type": "scram-sha-512",
        "username": "creds-user",
        "passwordSecret": {"secretName": "creds-user", "password": "password"},
    }
    owner = Resource.from_json(kubeobj.create(body))
    settings = workers.from_resource(owner)
    assert settings.client_auth is not None
    store = KubeStore(kube_api)
    material = settings.client_auth.resolve(lambda name: store.secret_data(kubeobj.ns, name), kubeobj.ns)
    runtime = KubernetesWorkerHost(
        kube_api, operator_namespace="operators", identity=OperatorIdentity(tmp_path / "rest-client")
    )
    runtime.ensure(owner, dataclasses.replace(settings, material=material))

    role = rbac.read_namespaced_role("creds-connect", kubeobj.ns)
    assert [(r.resources, r.verbs, r.resource_names) for r in role.rules] == [(["secrets"], ["get"], ["creds-user"])]
    binding = rbac.read_namespaced_role_binding("creds-connect-role", kubeobj.ns)
    assert [(s.kind, s.name) for s in binding.subjects] == [("ServiceAccount", "creds-connect")]
    config = core.read_namespaced_config_map("creds-connect-config", kubeobj.ns).data["kafka-connect.properties"]
    assert "pw-not-in-any-object" not in config
    pod = k8s.AppsV1Api(kube_api).read_namespaced_deployment("creds-connect", kubeobj.ns).spec.template.spec
    assert pod.automount_service_account_token is True  # the config provider reads the Secret with it
    policy = k8s.NetworkingV1Api(kube_api).read_namespaced_network_policy("creds-connect-network-policy", kubeobj.ns)
    operator = policy.spec.ingress[0]._from[1]
    assert operator.namespace_selector.match_labels == {"kubernetes.io/metadata.name": "operators"}

    # The authentication removed: the pods may read no Secret any more.
    plain = Resource.from_json(kubeobj.patch("KafkaConnect", "creds", {"spec": {"authentication": None}}))
    runtime.ensure(plain, workers.from_resource(plain))
    assert gone(
        lambda: rbac.read_namespaced_role("creds-connect", kubeobj.ns),
        lambda: rbac.read_namespaced_role_binding("creds-connect-role", kubeobj.ns),
    )
    kubeobj.delete("KafkaConnect", "creds")


def test_a_kafka_becomes_services_config_maps_and_pod_sets_the_api_server_accepts(
    kube_api: k8s.ApiClient, kubeobj: Kube
) -> None:
    example = Path(__file__).parent.parent / "data" / "strimzi" / "kafka-ephemeral.yaml"
    created = [kubeobj.create(doc) for doc in yaml.safe_load_all(example.read_text())]
    owner = Resource.from_json(next(d for d in created if d["kind"] == "Kafka"))
    pools = [Resource.from_json(d) for d in created if d["kind"] == "KafkaNodePool"]
    config_model = load_config_model()
    runtime = KubernetesKafkaHost(kube_api)

    def desired(resource: Resource) -> kafka.DesiredCluster:
        cas, _ = reconcile_cas(KubeStore(kube_api), resource, datetime.now(UTC))
        return dataclasses.replace(kafka.desired_cluster(resource, pools, config_model), cas=cas)

    state = runtime.ensure(owner, desired(owner), ())
    service = f"my-cluster-kafka-bootstrap.{kubeobj.ns}.svc"
    assert state.addresses == {"plain": ((service, 9092),), "tls": ((service, 9093),)}
    assert state.node_ids == {"broker": (0, 1, 2), "controller": (3, 4, 5)} and not state.ready
    assert runtime.running(owner) is not None  # what it created is found again (an operator restarted adopts it)

    core, custom = k8s.CoreV1Api(kube_api), k8s.CustomObjectsApi(kube_api)
    bootstrap = core.read_namespaced_service("my-cluster-kafka-bootstrap", kubeobj.ns)
    assert [(p.name, p.port) for p in bootstrap.spec.ports] == [("tcp-plain", 9092), ("tcp-tls", 9093)]
    assert bootstrap.spec.selector["strimzi.io/broker-role"] == "true"
    headless = core.read_namespaced_service("my-cluster-kafka-brokers", kubeobj.ns)
    assert headless.spec.cluster_ip == "None"
    # Read as Java reads them: the files are written with Java's escapes (`host\\:9090`).
    config = javaproperties.loads(
        core.read_namespaced_config_map("my-cluster-controller-3", kubeobj.ns).data["server.config"]
    )
    assert config["node.id"] == "3" and config["process.roles"] == "controller"
    voters = ",".join(
        f"{i}@my-cluster-controller-{i}.my-cluster-kafka-brokers.{kubeobj.ns}.svc:9090" for i in (3, 4, 5)
    )
    assert config["controller.quorum.voters"] == voters
    sets = {}
    for pool in ("broker", "controller"):
        sets[pool] = custom.get_namespaced_custom_object(
            PODSET_GROUP, PODSET_VERSION, kubeobj.ns, PODSETS, f"my-cluster-{pool}"
        )
        (ref,) = sets[pool]["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == ("Kafka", "my-cluster", owner.uid, True)
    assert [p["metadata"]["name"] for p in sets["broker"]["spec"]["pods"]] == [
        f"my-cluster-broker-{i}" for i in (0, 1, 2)
    ]

    def hashes(podset: dict[str, Any]) -> dict[str, str]:
        return {
            p["metadata"]["name"]: p["metadata"]["annotations"]["strimzi.io/configuration-hash"]
            for p in podset["spec"]["pods"]
        }

    # A settings change reaches each node's ConfigMap and the configuration hash a StrimziPodSet controller rolls on.
    spec = {**owner.spec["kafka"], "config": {**owner.spec["kafka"]["config"], "queued.max.requests": 600}}
    changed = Resource.from_json(kubeobj.spec("Kafka", "my-cluster", kafka=spec))
    runtime.ensure(changed, desired(changed), ())
    assert (
        "queued.max.requests=600\n"
        in core.read_namespaced_config_map("my-cluster-broker-1", kubeobj.ns).data["server.config"]
    )
    rolled = custom.get_namespaced_custom_object(PODSET_GROUP, PODSET_VERSION, kubeobj.ns, PODSETS, "my-cluster-broker")
    assert all(hashes(rolled)[name] != before for name, before in hashes(sets["broker"]).items())

    # TLS as Strimzi lays it out: listener settings read from Secret volumes, the node's certificate and the
    # trust bundle; a forced renewal of the cluster CA gives the nodes new certificates and the pods a new
    # generation annotation, which is what a StrimziPodSet controller rolls on.
    broker = javaproperties.loads(
        core.read_namespaced_config_map("my-cluster-broker-1", kubeobj.ns).data["server.config"]
    )
    assert (
        broker["listener.security.protocol.map"]
        == "CONTROLLER:SSL,REPLICATION-9091:SSL,PLAIN-9092:PLAINTEXT,TLS-9093:SSL"
    )
    chain = "${strimzidir:/opt/kafka/broker-certs:my-cluster-broker-1.crt}"
    assert broker["listener.name.tls-9093.ssl.keystore.certificate.chain"] == chain
    assert broker["listener.name.replication-9091.ssl.client.auth"] == "required"
    pod = next(p for p in rolled["spec"]["pods"] if p["metadata"]["name"] == "my-cluster-broker-1")
    assert {v["name"]: v["secret"]["secretName"] for v in pod["spec"]["volumes"] if "secret" in v} == {
        "broker-certs": "my-cluster-broker-1",
        "trust-bundle": "my-cluster-trust-bundle",
    }
    assert pod["metadata"]["annotations"]["strimzi.io/cluster-ca-cert-generation"] == "0"

    def secret(name: str) -> dict[str, bytes]:
        found = core.read_namespaced_secret(name, kubeobj.ns)
        return {k: base64.b64decode(v) for k, v in found.data.items()}

    node_cert = secret("my-cluster-broker-1")["my-cluster-broker-1.crt"]
    assert set(secret("my-cluster-trust-bundle")) == {"cluster-ca.crt", "clients-ca.crt"}
    assert set(secret("my-cluster-cluster-operator-certs")) == {"cluster-operator.crt", "cluster-operator.key"}
    core.patch_namespaced_secret(
        "my-cluster-cluster-ca-cert", kubeobj.ns, {"metadata": {"annotations": {"strimzi.io/force-renew": "true"}}}
    )
    runtime.ensure(changed, desired(changed), ())
    renewed = custom.get_namespaced_custom_object(
        PODSET_GROUP, PODSET_VERSION, kubeobj.ns, PODSETS, "my-cluster-broker"
    )
    assert {p["metadata"]["annotations"]["strimzi.io/cluster-ca-cert-generation"] for p in renewed["spec"]["pods"]} == {
        "1"
    }
    assert secret("my-cluster-broker-1")["my-cluster-broker-1.crt"] != node_cert
    assert secret("my-cluster-trust-bundle")["cluster-ca.crt"] == secret("my-cluster-cluster-ca-cert")["ca.crt"]

    kubeobj.delete("Kafka", "my-cluster")

    def collected() -> bool:
        return gone(
            lambda: core.read_namespaced_service("my-cluster-kafka-bootstrap", kubeobj.ns),
            lambda: core.read_namespaced_config_map("my-cluster-broker-0", kubeobj.ns),
            lambda: custom.get_namespaced_custom_object(
                PODSET_GROUP, PODSET_VERSION, kubeobj.ns, PODSETS, "my-cluster-controller"
            ),
        )

    wait_for(collected, 120, "the garbage collector to delete what the Kafka owned")
    for pool in pools:
        kubeobj.delete("KafkaNodePool", pool.name)
