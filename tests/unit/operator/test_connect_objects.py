"""The Kubernetes runtime's objects of a worker group, as Strimzi writes them: a NetworkPolicy that opens the REST
port to the group and the operator only, a restricted securityContext, `spec.resources` passed through, the pods'
own ServiceAccount with a Role for exactly the Secrets their settings name, and a REST listener on the pod's IP."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import javaproperties
import pytest

from sparklink.operator.hosting.kubernetes import CONFIG_FILE, desired_objects
from sparklink.operator.model import workers
from sparklink.operator.model.resources import Resource
from tests.unit.operator.test_client_auth import SCRAM, SECRETS
from tests.unit.operator.test_connect_workers import connect_body

SELECTOR = {
    "strimzi.io/cluster": "my-connect",
    "strimzi.io/name": "my-connect-connect",
    "strimzi.io/kind": "KafkaConnect",
}


def objects(operator_namespace: str | None = None, spec: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    owner = Resource.from_json(connect_body(**dict(spec or {})))
    settings = workers.from_resource(owner)
    if settings.client_auth is not None:
        material = settings.client_auth.resolve(SECRETS.get, owner.namespace)
        settings = workers.WorkerSettings(**{**settings.__dict__, "material": material})
    return desired_objects(owner, settings, "img", operator_namespace)


def pod_spec(rendered: dict[str, dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = rendered["Deployment"]["spec"]["template"]["spec"]
    return spec


def test_the_network_policy_opens_the_rest_port_to_the_group_and_the_operator_in_its_namespace_only() -> None:
    policy = objects("operators")["NetworkPolicy"]
    assert policy["metadata"]["name"] == "my-connect-connect-network-policy"
    assert policy["spec"]["podSelector"] == {"matchLabels": SELECTOR}
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = policy["spec"]["ingress"]
    assert rule["ports"] == [{"port": 8083, "protocol": "TCP"}]
    assert rule["from"] == [
        {"podSelector": {"matchLabels": SELECTOR}},
        {
            "podSelector": {"matchLabels": {"strimzi.io/kind": "cluster-operator"}},
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "operators"}},
        },
    ]


@pytest.mark.parametrize(
    ("operator_namespace", "namespace_selector"),
    [("ns", None), (None, {})],  # same namespace: no selector (this namespace only); unknown: any namespace
)
def test_the_operator_peer_follows_strimzis_namespace_rule(
    operator_namespace: str | None, namespace_selector: dict[str, Any] | None
) -> None:
    peer = objects(operator_namespace)["NetworkPolicy"]["spec"]["ingress"][0]["from"][1]
    assert peer.get("namespaceSelector") == namespace_selector


def test_the_pods_run_restricted_non_root_on_a_read_only_root_filesystem() -> None:
    pod = pod_spec(objects())
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    assert container["securityContext"] == {
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    # What the worker writes goes to emptyDirs: the copy of its properties and Spark's files, and its state.
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert set(mounts) == {"/opt/sparklink/config", "/var/lib/sparklink", "/tmp", "/opt/sparklink/rest-tls"}
    assert mounts["/opt/sparklink/config"]["readOnly"] is True and mounts["/opt/sparklink/rest-tls"]["readOnly"] is True
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["state"] == {"name": "state", "emptyDir": {}} and volumes["tmp"] == {"name": "tmp", "emptyDir": {}}
    assert "sparklink.state.dir=/var/lib/sparklink" in objects()["ConfigMap"]["data"][CONFIG_FILE].splitlines()


def test_spec_resources_reach_the_container_as_written() -> None:
    resources = {"requests": {"cpu": "500m", "memory": "2Gi"}, "limits": {"memory": "2Gi"}}
    (container,) = pod_spec(objects(spec={"resources": resources}))["containers"]
    assert container["resources"] == resources
    (plain,) = pod_spec(objects())["containers"]
    assert "resources" not in plain


def test_the_rest_listener_binds_the_pods_own_address_not_every_interface() -> None:
    rendered = objects()
    properties = javaproperties.loads(rendered["ConfigMap"]["data"][CONFIG_FILE])
    assert "rest.host.name" not in properties and "listeners" not in properties  # the pod's IP is added at start
    (container,) = pod_spec(rendered)["containers"]
    script = container["command"][-1]
    assert 'echo "listeners=https://$POD_IP:8083"' in script and "0.0.0.0" not in script
    assert {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}} in container["env"]


def test_a_group_without_credentials_gets_its_own_account_and_no_token_or_secret_access() -> None:
    rendered = objects()
    assert "Role" not in rendered and "RoleBinding" not in rendered
    assert rendered["ServiceAccount"]["metadata"]["name"] == "my-connect-connect"
    pod = pod_spec(rendered)
    assert pod["serviceAccountName"] == "my-connect-connect" and pod["automountServiceAccountToken"] is False


def test_credentials_come_from_a_role_that_may_get_exactly_the_named_secrets() -> None:
    rendered = objects(spec=SCRAM)
    # The password is a placeholder the Kubernetes config provider resolves in the pod; the public CA is inline.
    assert "s3cret" not in rendered["ConfigMap"]["data"][CONFIG_FILE]
    assert rendered["Role"]["rules"] == [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["my-user"]}
    ]
    binding = rendered["RoleBinding"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "my-connect-connect", "namespace": "ns"}]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "my-connect-connect"}
    assert pod_spec(rendered)["automountServiceAccountToken"] is True


def test_every_object_is_owned_by_the_resource_and_applied_account_first() -> None:
    rendered = objects(spec=SCRAM)
    kinds = list(rendered)
    assert kinds[0] == "ServiceAccount" and kinds[-1] == "Deployment"
    for obj in rendered.values():
        (ref,) = obj["metadata"]["ownerReferences"]
        assert ref["kind"] == "KafkaConnect" and ref["controller"] is True and ref["blockOwnerDeletion"] is True
        assert obj["metadata"]["labels"]["strimzi.io/cluster"] == "my-connect"
