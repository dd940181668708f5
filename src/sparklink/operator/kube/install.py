"""Installs the operator's CRDs on an API server (for users without kubectl, and for the tests)."""

from __future__ import annotations

import time
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from sparklink.operator import crds


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
