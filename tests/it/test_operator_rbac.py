"""The operator under its shipped least-privilege RBAC, on a real API server that enforces RBAC: `sparklink operator
install` prints and applies the objects, the operator running with only its ServiceAccount's token drives a
KafkaConnect and a KafkaConnector to Ready without one forbidden call, and the account can do nothing more
(another namespace's Secrets, deleting CRDs, listing Secrets, granting itself roles are all refused).

Every other operator module runs its operator with the same account (`operator_fixtures.operator_kubeconfig`);
this one shows the permissions themselves.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from sparklink.operator import rbac
from sparklink.platform.kafka import KafkaCluster
from tests.helpers import unique
from tests.it.operator_fixtures import (
    Kube,
    OperatorProcess,
    connector_state,
    is_ready,
    kafka_connect_body,
    run_subprocess,
    service_account_kubeconfig,
)

pytestmark = [pytest.mark.kafka, pytest.mark.kube]

CLI = [sys.executable, "-m", "sparklink.cli.main", "operator", "install"]
_REFUSAL = re.compile(r"\(403\)|[Ff]orbidden")


@pytest.fixture(scope="module")
def elsewhere(kube_api: k8s.ApiClient) -> Iterator[str]:
    """A namespace the operator does not watch, holding a Secret."""
    name = unique("elsewhere")
    core = k8s.CoreV1Api(kube_api)
    core.create_namespace({"metadata": {"name": name}})
    core.create_namespaced_secret(name, {"metadata": {"name": "not-yours"}, "stringData": {"password": "x"}})
    yield name
    with contextlib.suppress(ApiException):
        core.delete_namespace(name)


@pytest.fixture(scope="module")
def as_operator(operator_kubeconfig: Path) -> Iterator[k8s.ApiClient]:
    api = k8s_config.new_client_from_config(config_file=str(operator_kubeconfig))
    yield api
    api.close()


def allowed(kube_api: k8s.ApiClient, account_namespace: str, **attributes: Any) -> bool:
    """The API server's own answer (a SubjectAccessReview) to: may the operator's account do this?"""
    review = k8s.V1SubjectAccessReview(
        spec=k8s.V1SubjectAccessReviewSpec(
            user=f"system:serviceaccount:{account_namespace}:{rbac.SERVICE_ACCOUNT}",
            groups=["system:serviceaccounts", f"system:serviceaccounts:{account_namespace}", "system:authenticated"],
            resource_attributes=k8s.V1ResourceAttributes(**attributes),
        )
    )
    answer = k8s.AuthorizationV1Api(kube_api).create_subject_access_review(review)
    return bool(answer.status.allowed)


def test_install_prints_the_crds_and_the_rbac_for_kubectl() -> None:
    result = run_subprocess([*CLI, "--namespace", "ops", "--watch-namespace", "team-a"])
    assert result.returncode == 0, result.stderr
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    kinds = [d["kind"] for d in docs]
    assert kinds.count("CustomResourceDefinition") == 7
    assert kinds[7:] == ["ServiceAccount", "ClusterRole", "ClusterRole", "ClusterRoleBinding", "RoleBinding"]
    assert docs[-1]["metadata"]["namespace"] == "team-a" and docs[-1]["subjects"][0]["namespace"] == "ops"
    help_text = run_subprocess([*CLI, "--help"]).stdout
    assert "--apply" in help_text and "--watch-namespace" in help_text and "kubectl create token" in help_text


def test_install_apply_creates_the_account_roles_and_a_binding_per_watched_namespace(
    kube: Any, kube_api: k8s.ApiClient
) -> None:
    account, watched = unique("ops"), unique("team")
    core = k8s.CoreV1Api(kube_api)
    core.create_namespace({"metadata": {"name": watched}})
    try:
        cmd = [*CLI, "--apply", "--kubeconfig", str(kube.kubeconfig), "-n", account, "-w", watched]
        result = run_subprocess(cmd)
        assert result.returncode == 0, result.stderr
        assert f"serviceaccount/{rbac.SERVICE_ACCOUNT} (namespace {account}) applied" in result.stdout
        assert "customresourcedefinition kafkaconnects.kafka.strimzi.io applied" in result.stdout
        assert core.read_namespaced_service_account(rbac.SERVICE_ACCOUNT, account)
        binding = k8s.RbacAuthorizationV1Api(kube_api).read_namespaced_role_binding(rbac.SERVICE_ACCOUNT, watched)
        assert binding.role_ref.name == rbac.NAMESPACED_ROLE
        assert allowed(kube_api, account, namespace=watched, verb="patch", group="kafka.strimzi.io",
                       resource="kafkaconnects", subresource="status")  # fmt: skip
        # Bound in `watched` only: nothing in a namespace it was not given.
        assert not allowed(kube_api, account, namespace="default", verb="get", resource="configmaps")
        assert run_subprocess(cmd).returncode == 0  # applying again updates in place
    finally:
        for name in (account, watched):
            with contextlib.suppress(ApiException):
                core.delete_namespace(name)


def test_the_operator_with_only_its_service_account_runs_a_connect_and_a_connector_to_ready(
    kubeobj: Kube, operator_process: OperatorProcess, operator_kubeconfig: Path, kafka: KafkaCluster
) -> None:
    assert operator_process.kubeconfig == operator_kubeconfig  # the token kubeconfig, not the admin's
    kubeobj.create(kafka_connect_body("rbac-connect", kafka.bootstrap_servers))
    kubeobj.wait("KafkaConnect", "rbac-connect", is_ready, "Ready", timeout=240)
    name = unique("rbac-source")
    kubeobj.create(
        {
            "apiVersion": "kafka.strimzi.io/v1",
            "kind": "KafkaConnector",
            "metadata": {"name": name, "labels": {"strimzi.io/cluster": "rbac-connect"}},
            "spec": {
                "class": "tests.plugins.CountingConnector",
                "tasksMax": 1,
                "config": {"topic": f"{name}-out", "records.per.second": 1},
            },
        }
    )
    obj = kubeobj.wait(
        "KafkaConnector", name, lambda o: is_ready(o) and connector_state(o) == "RUNNING", "Ready and RUNNING"
    )
    assert obj["status"]["tasksMax"] == 1
    # The restart annotation is removed by a patch of the resource (not of its status): allowed too.
    kubeobj.annotate("KafkaConnector", name, **{"strimzi.io/restart": "true"})
    kubeobj.wait(
        "KafkaConnector", name, lambda o: "strimzi.io/restart" not in o["metadata"].get("annotations", {}), "restarted"
    )
    kubeobj.delete("KafkaConnector", name)
    kubeobj.delete("KafkaConnect", "rbac-connect")
    # The API server's refusal reads "(403)" and "Forbidden" (the client's ApiException, kopf's
    # APIForbiddenError); a port, pid or duration that happens to contain 403 is not one.
    refused = [line for line in operator_process.log_since_start() if _REFUSAL.search(line)]
    assert refused == []


def test_the_account_can_do_nothing_beyond_what_the_operator_does(
    kube: Any,
    kube_api: k8s.ApiClient,
    as_operator: k8s.ApiClient,
    operator_account: str,
    namespace: str,
    elsewhere: str,
    tmp_path: Path,
) -> None:
    core = k8s.CoreV1Api(as_operator)
    # Real calls with the operator's token: another namespace's Secret, and deleting a CRD, are forbidden.
    with pytest.raises(ApiException) as refused:
        core.read_namespaced_secret("not-yours", elsewhere)
    assert refused.value.status == 403
    with pytest.raises(ApiException) as refused:
        k8s.ApiextensionsV1Api(as_operator).delete_custom_resource_definition("kafkaconnects.kafka.strimzi.io")
    assert refused.value.status == 403
    with pytest.raises(ApiException) as refused:
        core.list_namespaced_secret(namespace)  # reads one named Secret at a time, never lists them
    assert refused.value.status == 403
    # What it does do, it may: in its watched namespace.
    assert allowed(kube_api, operator_account, namespace=namespace, verb="get", resource="secrets")
    assert allowed(kube_api, operator_account, namespace=namespace, verb="create", group="apps", resource="deployments")
    # And nothing that would let it grant itself more.
    for attributes in (
        {"verb": "create", "group": "rbac.authorization.k8s.io", "resource": "clusterrolebindings"},
        {"verb": "escalate", "group": "rbac.authorization.k8s.io", "resource": "roles", "namespace": namespace},
        {"verb": "bind", "group": "rbac.authorization.k8s.io", "resource": "clusterroles"},
        {"verb": "impersonate", "resource": "serviceaccounts", "namespace": namespace},
        {"verb": "create", "resource": "pods", "subresource": "exec", "namespace": namespace},
        {"verb": "get", "resource": "secrets", "namespace": elsewhere},
        {"verb": "delete", "group": "apiextensions.k8s.io", "resource": "customresourcedefinitions"},
        {"verb": "update", "group": "kafka.strimzi.io", "resource": "kafkaconnects", "namespace": namespace},
    ):
        assert not allowed(kube_api, operator_account, **attributes), attributes
    # A second token of the same account is no different: the permissions belong to the account.
    again = service_account_kubeconfig(kube, kube_api, operator_account, tmp_path / "kubeconfig")
    with k8s_config.new_client_from_config(config_file=str(again)) as api:
        with pytest.raises(ApiException) as refused:
            k8s.CoreV1Api(api).read_namespaced_secret("not-yours", elsewhere)
        assert refused.value.status == 403
