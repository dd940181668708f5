"""The Kubernetes runtime's objects on a real API server: they pass its validation, carry Strimzi's
names, labels and owner references, follow a settings change, and are garbage-collected with their
KafkaConnect. (There are no kubelets here, so the pods stay Pending: this tests the objects.)"""

from __future__ import annotations

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from sparklink.operator.model import workers
from sparklink.operator.model.resources import Resource
from sparklink.operator.runtime.kubernetes import KubernetesWorkerRuntime
from tests.helpers import wait_for
from tests.it.operator_fixtures import Kube, kafka_connect_body

pytestmark = pytest.mark.kube


def test_deployment_service_and_config_map_validate_and_are_owned(kube_api: k8s.ApiClient, kubeobj: Kube) -> None:
    created = kubeobj.create(kafka_connect_body("objects", "my-cluster-kafka-bootstrap:9092"))
    owner = Resource.from_json(created)
    runtime = KubernetesWorkerRuntime(kube_api, image="example.org/sparklink:test")
    state = runtime.ensure(owner, workers.from_resource(owner))
    assert state.url == f"http://objects-connect-api.{kubeobj.ns}.svc:8083" and not state.ready

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
        for read in (
            lambda: apps.read_namespaced_deployment("objects-connect", kubeobj.ns),
            lambda: core.read_namespaced_service("objects-connect-api", kubeobj.ns),
            lambda: core.read_namespaced_config_map("objects-connect-config", kubeobj.ns),
        ):
            try:
                read()
                return False
            except ApiException as exc:
                if exc.status != 404:
                    raise
        return True

    wait_for(collected, 120, "the garbage collector to delete what the KafkaConnect owned")
