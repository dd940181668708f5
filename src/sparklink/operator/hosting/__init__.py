"""Hosts run the Connect workers of a KafkaConnect or KafkaMirrorMaker2 (the operator's `--runtime` picks one).

`local.LocalWorkerHost` starts `sparklink worker` processes on this machine (tests, and users without
kubelets); `kubernetes.KubernetesWorkerHost` creates the Deployment, Service and ConfigMap a cluster
runs them from. The reconcilers see only the `WorkerHost` protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from sparklink.operator.model.resources import Key, Resource
from sparklink.operator.model.workers import WorkerSettings


@dataclass(frozen=True)
class HostState:
    """Where the group's REST API is, and whether it answers yet (`detail` says why not)."""

    url: str | None
    ready: bool
    replicas: int
    detail: str | None = None
    # A local group's credentials directory that its connectors' config may name (the first worker's;
    # every worker may read it); None in pods, whose connectors name Secrets instead.
    credentials: str | None = None
    # The CA of the group's worker certificates (PEM): the operator reaches the group over https, presenting
    # its client certificate and accepting only a worker certificate from this CA (`hosting.rest_tls`).
    ca_pem: bytes | None = field(default=None, repr=False)


class WorkerHost(Protocol):
    def ensure(self, owner: Resource, settings: WorkerSettings) -> HostState:
        """Make the workers match `settings` (start, keep, or restart them after a change); idempotent."""
        ...

    def state(self, key: Key) -> HostState | None:
        """What runs for the resource now, without changing anything (None: nothing known)."""
        ...

    def remove(self, key: Key) -> None:
        """Stop the workers of a deleted resource."""
        ...

    def close(self) -> None:
        """The operator stops: stop what this host runs."""
        ...


def label_selector(owner: Resource) -> str:
    """Strimzi's `status.labelSelector` for the pods of a Connect or MirrorMaker 2 cluster."""
    suffix = "connect" if owner.kind == "KafkaConnect" else "mirrormaker2"
    return f"strimzi.io/cluster={owner.name},strimzi.io/name={owner.name}-{suffix},strimzi.io/kind={owner.kind}"
