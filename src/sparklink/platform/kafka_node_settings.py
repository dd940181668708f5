"""The server settings a node of a local cluster starts with: its identity in the KRaft quorum, its
listeners (one PLAINTEXT listener, or the layout's listeners with TLS and SASL), storage defaults sized for a
local cluster, the authorizer, then the layout's `extra_config` and the node's own settings on top.
Caller: `kafka.KafkaCluster`, which writes them to the node's properties file before each start.
"""

from __future__ import annotations

from sparklink.platform import kafka_listeners
from sparklink.platform.kafka_access import ClusterAccess
from sparklink.platform.kafka_layout import ClusterLayout, Node

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# Kafka's own default for the log cleaner's dedupe buffer; a node with less than 16 times this in heap gets
# a sixteenth of its heap instead.
DEDUPE_BUFFER_DEFAULT = 128 * 1024 * 1024
_HEAP_UNITS = {"k": 1024, "m": 1024**2, "g": 1024**3}


def node_settings(layout: ClusterLayout, node: Node) -> dict[str, str]:
    """Everything the node runs with: the platform's settings, then extra_config, then the node's own."""
    return {
        **base_settings(layout, node),
        **layout.extra_config,
        **layout.node_config.get(str(node.node_id), {}),
    }


def base_settings(layout: ClusterLayout, node: Node) -> dict[str, str]:
    """The settings the platform gives a node (ids, listeners, quorum, storage, defaults)."""
    identity = {
        "process.roles": node.roles,
        "node.id": str(node.node_id),
        "controller.quorum.voters": ",".join(f"{c.node_id}@127.0.0.1:{c.controller_port}" for c in layout.controllers),
        "controller.listener.names": "CONTROLLER",
    }
    if layout.listeners:
        return {**identity, **_defaults(layout, node), **_listener_settings(layout, node), **_authorization(layout)}
    # The default cluster: one PLAINTEXT listener, also between brokers (settings kept as they always were).
    listeners = []
    if node.broker_port:
        listeners.append(f"PLAINTEXT://127.0.0.1:{node.broker_port}")
    if node.is_controller:
        listeners.append(f"CONTROLLER://127.0.0.1:{node.controller_port}")
    config = {
        **identity,
        "listeners": ",".join(listeners),
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        **_defaults(layout, node),
    }
    if node.broker_port:
        config["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{node.broker_port}"
        config["inter.broker.listener.name"] = "PLAINTEXT"
    return {**config, **_authorization(layout)}


def _authorization(layout: ClusterLayout) -> dict[str, str]:
    """StandardAuthorizer settings: the nodes and the platform are super users (on a cluster without TLS
    between the nodes they are ANONYMOUS, as Strimzi has it), then the caller's."""
    if layout.super_users is None:
        return {}
    internal = ClusterAccess(layout).internal_principals() if layout.secured else ["User:ANONYMOUS"]
    return {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": ";".join([*internal, *layout.super_users])}


def _defaults(layout: ClusterLayout, node: Node) -> dict[str, str]:
    replication = str(min(3, len(layout.brokers)))
    return {
        "log.dirs": str(layout.data_dir(node)),
        "num.partitions": "1",
        "offsets.topic.replication.factor": replication,
        "offsets.topic.num.partitions": "5",
        "transaction.state.log.replication.factor": replication,
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "5",
        "share.coordinator.state.topic.replication.factor": replication,
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # A broker's controlled shutdown and its catch-up at start advance one heartbeat at a time; on
        # loopback a heartbeat costs nothing, and Kafka's 2 s made every restart wait some 4 s more.
        "broker.heartbeat.interval.ms": "500",
        "auto.create.topics.enable": "true",
        "log.segment.bytes": str(64 * 1024 * 1024),
        "log.cleaner.dedupe.buffer.size": str(dedupe_buffer_size(node.heap or layout.heap)),
    }


def dedupe_buffer_size(heap: str) -> int:
    """The log cleaner's dedupe buffer for a node with this -Xmx. The cleaner allocates the whole buffer as
    one array when the broker starts; Kafka's 128 MiB default in a 256 MiB heap is a humongous allocation
    that G1 cannot always place, and the broker then dies at start-up with OutOfMemoryError."""
    unit = _HEAP_UNITS.get(heap[-1:].lower())
    if unit is None or not heap[:-1].isdigit():
        return DEDUPE_BUFFER_DEFAULT
    return min(DEDUPE_BUFFER_DEFAULT, int(heap[:-1]) * unit // 16)


def _listener_settings(layout: ClusterLayout, node: Node) -> dict[str, str]:
    """Listeners, protocols, TLS and SASL of a cluster laid out with explicit listeners."""
    access = ClusterAccess(layout)
    plain = access.users() if any("PLAIN" in lst.sasl_mechanisms for lst in layout.listeners) else {}
    return kafka_listeners.listener_settings(
        node.roles,
        node.listener_ports,
        node.controller_port,
        node.replication_port,
        layout.listeners,
        access.tls_files(node) if layout.secured else None,
        plain,
        layout.internal_tls,
    )
