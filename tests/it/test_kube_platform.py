"""The local Kubernetes control plane behaves like a real cluster for what the operator relies on.

All against the session's real etcd + kube-apiserver + kube-controller-manager (`kube` fixture), through
the official Python client with the admin kubeconfig, or plain HTTPS with the admin token.
"""

from __future__ import annotations

import re
import socket
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from sparklink.platform import artifacts, process
from sparklink.platform.kube import APISERVER, ETCD, KubeCluster, KubeStartError
from tests.helpers import unique, wait_for

pytestmark = pytest.mark.kube

GROUP, VERSION, PLURAL = "tests.sparklink.io", "v1", "widgets"


def gone(read: Callable[[], Any]) -> bool:
    """True once reading the object answers 404."""
    try:
        read()
    except ApiException as exc:
        if exc.status == 404:
            return True
        raise
    return False


@pytest.fixture
def namespace(kube_api: client.ApiClient) -> str:
    name = unique("ns")
    client.CoreV1Api(kube_api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    return name


@pytest.fixture(scope="module")
def widgets(kube_api: client.ApiClient) -> Iterator[client.CustomObjectsApi]:
    """A namespaced CRD `Widget` with a status subresource, established before the tests use it."""
    extensions = client.ApiextensionsV1Api(kube_api)
    schema = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
        },
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": PLURAL, "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                }
            ],
        },
    }
    extensions.create_custom_resource_definition(crd)

    def established() -> bool:
        conditions = extensions.read_custom_resource_definition(f"{PLURAL}.{GROUP}").status.conditions or []
        return any(c.type == "Established" and c.status == "True" for c in conditions)

    wait_for(established, 60, "the Widget CRD to be established")
    yield client.CustomObjectsApi(kube_api)
    extensions.delete_custom_resource_definition(f"{PLURAL}.{GROUP}")


def new_widget(widgets: client.CustomObjectsApi, namespace: str, size: int = 1) -> dict[str, Any]:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Widget",
        "metadata": {"name": unique("w")},
        "spec": {"size": size},
    }
    created: dict[str, Any] = widgets.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    return created


def test_api_server_is_ready_and_reports_the_built_version(kube: KubeCluster) -> None:
    go_mod = (artifacts.project_root() / "go" / "kube" / "go.mod").read_text()
    built = re.search(r"^\s*k8s\.io/kubernetes (v\S+)", go_mod, re.MULTILINE)
    assert built
    with httpx.Client(base_url=kube.server, verify=ssl.create_default_context(cafile=str(kube.ca_file))) as http:
        headers = {"Authorization": f"Bearer {kube.admin_token}"}
        assert http.get("/readyz", headers=headers).text == "ok"
        version = http.get("/version", headers=headers).json()
        # Anonymous requests may read /version but not the API.
        assert http.get("/api/v1/namespaces").status_code in (401, 403)
    assert version["gitVersion"] == built.group(1)
    assert version["major"] == "1" and version["minor"] == built.group(1).split(".")[1]


def test_custom_resource_status_is_written_only_through_the_status_subresource(
    widgets: client.CustomObjectsApi, namespace: str
) -> None:
    widget = new_widget(widgets, namespace)
    name = widget["metadata"]["name"]
    # A status in a patch of the main resource is dropped, but a spec change bumps the generation.
    widgets.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name, {"spec": {"size": 2}, "status": {"phase": "ignored"}}
    )
    after_spec = widgets.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
    assert "status" not in after_spec and after_spec["metadata"]["generation"] == 2

    widgets.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, name, {"status": {"phase": "Ready"}}
    )
    after_status = widgets.get_namespaced_custom_object_status(GROUP, VERSION, namespace, PLURAL, name)
    assert after_status["status"] == {"phase": "Ready"}
    assert after_status["spec"] == {"size": 2} and after_status["metadata"]["generation"] == 2


def test_deployment_gets_a_replica_set_it_owns(kube_api: client.ApiClient, namespace: str) -> None:
    labels = {"app": "sparklink-test"}
    deployment = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="worker"),
        spec=client.V1DeploymentSpec(
            replicas=1,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(name="worker", image="sparklink:dev")]),
            ),
        ),
    )
    created = client.AppsV1Api(kube_api).create_namespaced_deployment(namespace, deployment)
    apps = client.AppsV1Api(kube_api)
    replica_sets = wait_for(
        lambda: apps.list_namespaced_replica_set(namespace).items, 120, "the deployment controller's ReplicaSet"
    )
    owners = replica_sets[0].metadata.owner_references
    assert [(o.kind, o.name, o.uid) for o in owners] == [("Deployment", "worker", created.metadata.uid)]
    assert replica_sets[0].spec.replicas == 1


def test_a_new_namespace_gets_its_default_service_account(kube_api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(kube_api)
    account = wait_for(
        lambda: core.list_namespaced_service_account(namespace, field_selector="metadata.name=default").items,
        120,
        f"the default ServiceAccount in {namespace}",
    )
    assert account[0].metadata.namespace == namespace


def test_namespace_deletion_completes_and_removes_its_objects(
    widgets: client.CustomObjectsApi, kube_api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(kube_api)
    core.create_namespaced_config_map(namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="settings")))
    widget = new_widget(widgets, namespace)
    core.delete_namespace(namespace)
    wait_for(lambda: gone(lambda: core.read_namespace(namespace)), 180, f"namespace {namespace} to be deleted")
    assert gone(
        lambda: widgets.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget["metadata"]["name"])
    )


def test_garbage_collector_deletes_a_config_map_owned_by_a_deleted_custom_object(
    widgets: client.CustomObjectsApi, kube_api: client.ApiClient, namespace: str
) -> None:
    owner = new_widget(widgets, namespace)
    core = client.CoreV1Api(kube_api)
    reference = client.V1OwnerReference(
        api_version=f"{GROUP}/{VERSION}", kind="Widget", name=owner["metadata"]["name"], uid=owner["metadata"]["uid"]
    )
    dependent = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=unique("cm"), owner_references=[reference]))
    core.create_namespaced_config_map(namespace, dependent)
    kept = core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=unique("cm")))
    )

    widgets.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, owner["metadata"]["name"])
    # The collector learns a new CRD's kind on its discovery resync (every 30 s) and retries the owner
    # lookup with exponential back-off until then: this test runs late in the module to wait less.
    wait_for(
        lambda: gone(lambda: core.read_namespaced_config_map(dependent.metadata.name, namespace)),
        180,
        "the garbage collector to delete the ConfigMap owned by the deleted Widget",
    )
    assert core.read_namespaced_config_map(kept.metadata.name, namespace).metadata.uid == kept.metadata.uid


def test_a_failed_start_shows_the_log_and_stops_what_it_started(tmp_path: Path) -> None:
    cluster = KubeCluster.create(tmp_path / "cluster")
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", cluster.component(APISERVER).port))
        squatter.listen()
        with pytest.raises(KubeStartError) as failure:
            cluster.start(timeout=120)
    assert "kube-apiserver exited during start-up" in str(failure.value)
    assert "address already in use" in str(failure.value)
    assert KubeCluster.load(cluster.state_dir).component(ETCD).pid == 0
    assert processes_mentioning(cluster.state_dir) == []


def processes_mentioning(path: Path) -> list[int]:
    """Pids of live processes whose command line names `path` (the components of one cluster)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if str(path).encode() in cmdline and process.alive(int(proc.name)):
            found.append(int(proc.name))
    return found
