"""`read_or_none`: one read of a Kubernetes object that answers None when the object does not exist.

The operator often reads an object it may not have created yet (a Secret, a ConfigMap, a Deployment, a
custom resource): a 404 is an answer there, every other API error is not. Callers: the Kubernetes hosts
(`hosting.kubernetes`, `hosting.kafka_kubernetes`) and the resource store (`kube.store`), which sits above
the hosts and may import them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

from kubernetes.client.exceptions import ApiException

P = ParamSpec("P")
T = TypeVar("T")


def read_or_none(read: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
    """`read(*args, **kwargs)`, or None when the API server answers 404 (no such object)."""
    try:
        return read(*args, **kwargs)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
