"""The shipped RBAC is derived from the operator's API calls: every typed call in its source is allowed by a
shipped rule, every rule is used by some call (nothing granted "just in case"), and `--watch-namespace` turns the
cluster-wide binding into one RoleBinding per namespace."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparklink.operator import rbac
from sparklink.operator.model.resources import PLURALS

SOURCE = Path(__file__).parents[3] / "src" / "sparklink" / "operator"
# The install code runs as the administrator who installs the operator, not as the operator.
NOT_THE_OPERATOR = {SOURCE / "kube" / "install.py"}
GROUPS = {
    "core": "",
    "CoreV1Api": "",
    "apps": "apps",
    "AppsV1Api": "apps",
    "rbac": "rbac.authorization.k8s.io",
    "RbacAuthorizationV1Api": "rbac.authorization.k8s.io",
    "networking": "networking.k8s.io",
    "NetworkingV1Api": "networking.k8s.io",
    "ApiextensionsV1Api": "apiextensions.k8s.io",
}
VERBS = {"read": "get", "list": "list", "create": "create", "patch": "patch", "replace": "update", "delete": "delete"}
TYPED_CALL = re.compile(
    r"(?:\bself\.(core|apps|rbac|networking)|\b(CoreV1Api|AppsV1Api|RbacAuthorizationV1Api|NetworkingV1Api|"
    r"ApiextensionsV1Api)\(\w+\))\.(read|list|create|patch|replace|delete)_(?:namespaced_)?(\w+)"
)
PLURAL_OF = {"policy": "policies"}


def plural(snake: str) -> str:
    words = snake.split("_")
    last = PLURAL_OF.get(words[-1], words[-1] + "s")
    return "".join(words[:-1]) + last


def typed_calls() -> set[tuple[str, str, str]]:
    """(api group, resource, verb) of every typed client call in the operator's source."""
    found = set()
    for path in SOURCE.rglob("*.py"):
        if path in NOT_THE_OPERATOR:
            continue
        for match in TYPED_CALL.finditer(path.read_text()):
            api, api_class, verb, resource = match.groups()
            found.add((GROUPS[api or api_class], plural(resource), VERBS[verb]))
    return found


def custom_calls() -> set[tuple[str, str, str]]:
    """The custom-object calls (their plural is an argument): the Strimzi kinds are watched, read, patched (an
    annotation removed) and their status patched; the Kubernetes runtime's StrimziPodSets listed, created, patched."""
    calls = {("kafka.strimzi.io", p, v) for p in PLURALS.values() for v in ("get", "list", "watch", "patch")}
    calls |= {("kafka.strimzi.io", f"{p}/status", "patch") for p in PLURALS.values()}
    calls |= {("core.strimzi.io", "strimzipodsets", v) for v in ("list", "create", "patch")}
    # kopf watches what it lists: the CRDs, and the namespaces it follows.
    calls |= {("apiextensions.k8s.io", "customresourcedefinitions", "watch"), ("", "namespaces", "watch")}
    return calls


def granted(namespace: str = "ops") -> set[tuple[str, str, str]]:
    rules = [rule for doc in rbac.documents(namespace) if doc["kind"] == "ClusterRole" for rule in doc["rules"]]
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_the_scan_finds_the_calls_it_is_meant_to_find() -> None:
    calls = typed_calls()
    assert ("", "secrets", "delete") in calls and ("apps", "deployments", "get") in calls
    assert ("networking.k8s.io", "networkpolicies", "create") in calls
    assert ("", "namespaces", "list") in calls
    assert ("apiextensions.k8s.io", "customresourcedefinitions", "list") in calls


def test_every_api_call_of_the_operator_is_granted() -> None:
    missing = (typed_calls() | custom_calls()) - granted()
    assert not missing, f"the operator calls these, but the shipped roles do not allow them: {sorted(missing)}"


def test_nothing_is_granted_that_the_operator_does_not_use() -> None:
    unused = granted() - typed_calls() - custom_calls()
    assert not unused, f"granted but never called: {sorted(unused)}"


def test_no_wildcards_no_secret_listing_and_no_escalation_verbs() -> None:
    rules = granted()
    assert not any("*" in part for rule in rules for part in rule)
    assert ("", "secrets", "list") not in rules and ("", "secrets", "watch") not in rules
    assert not any(verb in ("escalate", "bind", "impersonate") for _, _, verb in rules)
    assert not any(resource in ("clusterroles", "clusterrolebindings") for _, resource, _ in rules)


def test_the_service_account_and_bindings_follow_the_namespace() -> None:
    docs = rbac.documents("kafka-operator")
    (account,) = [d for d in docs if d["kind"] == "ServiceAccount"]
    assert account["metadata"] == {**account["metadata"], "name": "sparklink-operator", "namespace": "kafka-operator"}
    bindings = [d for d in docs if d["kind"] == "ClusterRoleBinding"]
    assert {b["roleRef"]["name"] for b in bindings} == {"sparklink-operator-global", "sparklink-operator-namespaced"}
    for binding in bindings:
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "sparklink-operator", "namespace": "kafka-operator"}
        ]


@pytest.mark.parametrize("watched", [("team-a",), ("team-a", "team-b")])
def test_watched_namespaces_get_a_role_binding_each_and_no_cluster_wide_one(watched: tuple[str, ...]) -> None:
    docs = rbac.documents("ops", watched)
    cluster_bindings = [d["roleRef"]["name"] for d in docs if d["kind"] == "ClusterRoleBinding"]
    assert cluster_bindings == ["sparklink-operator-global"]
    role_bindings = [d for d in docs if d["kind"] == "RoleBinding"]
    assert [b["metadata"]["namespace"] for b in role_bindings] == list(watched)
    for binding in role_bindings:
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "sparklink-operator-namespaced",
        }
        assert binding["subjects"][0]["namespace"] == "ops"


def test_the_print_form_is_one_yaml_stream_of_the_same_objects() -> None:
    import yaml

    assert list(yaml.safe_load_all(rbac.text("ops", ["a"]))) == rbac.documents("ops", ["a"])
