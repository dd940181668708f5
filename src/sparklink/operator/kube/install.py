"""Installs the operator on an API server: its CRDs, and its ServiceAccount and least-privilege roles (for users
without kubectl, `sparklink operator crds|install --apply`, and for the tests)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from sparklink.operator import crds, rbac


def apply_crds(api: k8s.ApiClient, timeout: float = 60.0) -> list[str]:
    """Create or update the CRDs and wait until the API server serves them; returns their names."""
    ext = k8s.ApiextensionsV1Api(api)
    names = []
    docs: list[Any] = crds.documents()
    for doc in docs:
        name = doc["metadata"]["name"]
        names.append(name)
        try:
            current = ext.read_custom_resource_definition(name)
        except ApiException as exc:
            if exc.status != 404:
                raise
            ext.create_custom_resource_definition(doc)
            continue
        assert current.metadata is not None
        doc["metadata"]["resourceVersion"] = current.metadata.resource_version
        ext.replace_custom_resource_definition(name, doc)
    deadline = time.monotonic() + timeout
    for name in names:
        while not _established(ext.read_custom_resource_definition(name)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the API server did not establish CRD {name} within {timeout:.0f}s")
            time.sleep(0.2)
    return names


def _established(crd: Any) -> bool:
    return any(c.type == "Established" and c.status == "True" for c in (crd.status.conditions or []))


def apply_rbac(api: k8s.ApiClient, namespace: str, watch_namespaces: Sequence[str] = ()) -> list[str]:
    """Create or replace the operator's ServiceAccount, ClusterRoles and bindings (`rbac.documents`), creating
    `namespace` when it does not exist; returns `kind/name` of each object applied."""
    core, roles = k8s.CoreV1Api(api), k8s.RbacAuthorizationV1Api(api)
    try:
        core.read_namespace(namespace)
    except ApiException as exc:
        if exc.status != 404:
            raise
        core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=namespace)))
    # kind -> (create, replace); namespaced calls take the namespace first.
    calls: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
        "ServiceAccount": (core.create_namespaced_service_account, core.replace_namespaced_service_account),
        "ClusterRole": (roles.create_cluster_role, roles.replace_cluster_role),
        "ClusterRoleBinding": (roles.create_cluster_role_binding, roles.replace_cluster_role_binding),
        "RoleBinding": (roles.create_namespaced_role_binding, roles.replace_namespaced_role_binding),
    }
    applied = []
    for doc in rbac.documents(namespace, watch_namespaces):
        create, replace = calls[doc["kind"]]
        name, ns = doc["metadata"]["name"], doc["metadata"].get("namespace")
        where = (ns,) if ns else ()
        try:
            create(*where, doc)
        except ApiException as exc:
            if exc.status != 409:
                raise
            replace(name, *where, doc)
        applied.append(f"{doc['kind'].lower()}/{name}" + (f" (namespace {ns})" if ns else ""))
    return applied
