"""The operator's least-privilege RBAC, shipped as YAML users can read and `kubectl apply -f` (after setting the
namespace), and rendered for a namespace by `sparklink operator install`.

A ServiceAccount `sparklink-operator`, a ClusterRole of what it does in the namespaces it watches
(`sparklink-operator-namespaced`: exactly the verbs and resources of the operator's API calls) and one of what
it reads cluster-wide (`sparklink-operator-global`: the CRDs and namespaces kopf watches). Like Strimzi's
install files, the namespaced role is bound cluster-wide, or by a RoleBinding in each watched namespace only.
Callers: `cli.operator install` and `operator.kube.install.apply_rbac`.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from importlib import resources
from typing import Any

import yaml

FILES = (
    "010-ServiceAccount-sparklink-operator.yaml",
    "020-ClusterRole-sparklink-operator-namespaced.yaml",
    "021-ClusterRole-sparklink-operator-global.yaml",
    "030-ClusterRoleBinding-sparklink-operator-global.yaml",
    "031-Binding-sparklink-operator-namespaced.yaml",
)
SERVICE_ACCOUNT = "sparklink-operator"
NAMESPACED_ROLE = "sparklink-operator-namespaced"
GLOBAL_ROLE = "sparklink-operator-global"
DEFAULT_NAMESPACE = "sparklink"


def texts() -> dict[str, str]:
    return {name: resources.files(__package__).joinpath(name).read_text() for name in FILES}


def documents(namespace: str = DEFAULT_NAMESPACE, watch_namespaces: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The objects for an operator running as `namespace`'s ServiceAccount, watching `watch_namespaces`
    (empty: every namespace, through a ClusterRoleBinding)."""
    docs: list[dict[str, Any]] = [yaml.safe_load(text) for text in texts().values()]
    out: list[dict[str, Any]] = []
    for doc in docs:
        if doc["kind"] == "ServiceAccount":
            doc["metadata"]["namespace"] = namespace
        for subject in doc.get("subjects", []):
            subject["namespace"] = namespace
        if doc["metadata"]["name"] == NAMESPACED_ROLE and doc["kind"] == "ClusterRoleBinding" and watch_namespaces:
            out += [_role_binding(doc, watched) for watched in dict.fromkeys(watch_namespaces)]
            continue
        out.append(doc)
    return out


def _role_binding(cluster_binding: dict[str, Any], namespace: str) -> dict[str, Any]:
    binding = copy.deepcopy(cluster_binding)
    binding["kind"] = "RoleBinding"
    binding["metadata"] = {**binding["metadata"], "name": SERVICE_ACCOUNT, "namespace": namespace}
    return binding


def text(namespace: str = DEFAULT_NAMESPACE, watch_namespaces: Sequence[str] = ()) -> str:
    """One YAML stream of `documents`, for `kubectl apply -f -`."""
    return str(yaml.safe_dump_all(documents(namespace, watch_namespaces), sort_keys=False))
