"""`<cluster>-kafka-bootstrap:<port>` -> the real address of a Kafka the operator runs on this machine. Pure.

Strimzi's examples point Kafka Connect and MirrorMaker 2 at a Kafka through its bootstrap Service
(`my-cluster-kafka-bootstrap:9092`, optionally `.<namespace>.svc[.cluster.local]`). In a Kubernetes cluster
that name resolves by DNS; a local runtime has no such Service, so each such address that names a Kafka
resource is replaced by the addresses of that Kafka's listener on that port, as its status lists them.
Addresses that name no Kafka resource are left as written (they may be real host names).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from sparklink.operator.model.conditions import REASON_NO_SUCH_RESOURCE, ReconcileFailure
from sparklink.operator.model.kafka import listener_for_port
from sparklink.operator.model.resources import KAFKA_CONNECT, Resource

_SERVICE = re.compile(
    r"^(?P<cluster>[a-z0-9]([-a-z0-9.]*[a-z0-9])?)-kafka-bootstrap"
    r"(\.(?P<namespace>[a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.svc(\.cluster\.local)?)?)?:(?P<port>\d+)$"
)

# (namespace, name) -> the Kafka resource, or None when there is none.
FindKafka = Callable[[str, str], Resource | None]


def service_ref(address: str, namespace: str) -> tuple[str, str, int] | None:
    """(namespace, cluster, port) when `address` is a Kafka bootstrap Service's name and port."""
    match = _SERVICE.match(address.strip())
    if match is None:
        return None
    return match["namespace"] or namespace, match["cluster"], int(match["port"])


def resolve(servers: str, namespace: str, find: FindKafka) -> str:
    """`servers` with each bootstrap-Service address of a known Kafka replaced by its listener's addresses.

    ReconcileFailure (retriable) when the Kafka exists but has no ready listener on that port yet."""
    out: list[str] = []
    for address in servers.split(","):
        ref = service_ref(address, namespace)
        kafka = find(ref[0], ref[1]) if ref else None
        if ref is None or kafka is None:
            out.append(address.strip())
            continue
        ns, cluster, port = ref
        listener = listener_for_port(kafka, port)
        if listener is None:
            raise ReconcileFailure(
                f"Kafka cluster '{cluster}' in namespace {ns} has no listener on port {port} (named by "
                f"bootstrap address {address.strip()})",
                REASON_NO_SUCH_RESOURCE,
            )
        served = {
            str(s.get("name")): s.get("bootstrapServers")
            for s in kafka.status.get("listeners") or []
            if isinstance(s, Mapping)
        }
        if not served.get(listener):
            raise ReconcileFailure(
                f"Kafka cluster '{cluster}' in namespace {ns} has no ready address for listener '{listener}' "
                f"(port {port}) yet; see the Kafka's status",
                REASON_NO_SUCH_RESOURCE,
                retriable=True,
            )
        out.append(str(served[listener]))
    return ",".join(out)


def resolve_resource(resource: Resource, find: FindKafka) -> Resource:
    """A KafkaConnect or KafkaMirrorMaker2 with its clusters' bootstrap addresses resolved."""
    spec: dict[str, Any] = dict(resource.spec)
    if resource.kind == KAFKA_CONNECT:
        if isinstance(spec.get("bootstrapServers"), str):
            spec["bootstrapServers"] = resolve(spec["bootstrapServers"], resource.namespace, find)
        return replace(resource, spec=spec)
    target = spec.get("target")
    if isinstance(target, Mapping) and isinstance(target.get("bootstrapServers"), str):
        spec["target"] = {**target, "bootstrapServers": resolve(target["bootstrapServers"], resource.namespace, find)}
    mirrors = []
    for mirror in spec.get("mirrors") or []:
        source = mirror.get("source") if isinstance(mirror, Mapping) else None
        if isinstance(source, Mapping) and isinstance(source.get("bootstrapServers"), str):
            resolved = resolve(source["bootstrapServers"], resource.namespace, find)
            mirror = {**mirror, "source": {**source, "bootstrapServers": resolved}}
        mirrors.append(mirror)
    if mirrors:
        spec["mirrors"] = mirrors
    return replace(resource, spec=spec)
