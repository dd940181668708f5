"""A Kafka and its KafkaNodePools -> the KRaft nodes that should run, each with its roles and settings. Pure.

As in Strimzi (KRaft, node pools only):
- a KafkaNodePool belongs to the Kafka its `strimzi.io/cluster` label names; it has `replicas` nodes with
  its `roles` (broker and/or controller); the cluster needs a broker and a controller with replicas;
- node ids: a pool keeps the ids it has (its status, or what runs); new nodes take the lowest unused id,
  pools taken in name order (so Strimzi's example gets brokers 0-2 and controllers 3-5); a scale-down
  gives up the highest ids;
- a node runs `spec.kafka.config` less the forbidden options (plus, a sparklink extension, its pool's
  `spec.config` on top); a controller-only node only what matters to controllers. Settings are validated
  against Kafka's configuration model; invalid ones make the Kafka NotReady and change nothing that runs;
- node names are Strimzi's pod names, `<cluster>-<pool>-<id>`, so roller messages read the same;
- `strimzi.io/manual-rolling-update: "true"` asks for a rolling restart. Strimzi reads it on pods and
  StrimziPodSets; without pods, sparklink reads it on a KafkaNodePool (its nodes) and on the Kafka (all).
- listeners: plain or `tls: true`, without authentication or with Strimzi's `tls` (mutual TLS, clients CA) or
  `scram-sha-512`; names and ports unique, `tls` authentication only on a TLS listener (Strimzi's
  ListenersValidator messages). `custom` authentication is not served (Warning);
- `spec.kafka.authorization: {type: simple, superUsers}`: Kafka's StandardAuthorizer, the given principals
  super users besides the cluster's own (hosts add those, as Strimzi adds its brokers' and operator's).
The CAs (`certificate_authority`) come in from the reconcile, which keeps them in Secrets.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparklink.operator.model import config_safety, kafka_config
from sparklink.operator.model.certificate_authority import Authorities
from sparklink.operator.model.conditions import REASON_INVALID_RESOURCE, Condition, ReconcileFailure, warning
from sparklink.operator.model.kafka_config import ConfigModel
from sparklink.operator.model.resources import Resource

MANUAL_ROLLING_UPDATE = "strimzi.io/manual-rolling-update"
ROLES = ("broker", "controller")
UNSUPPORTED_FIELDS = (
    ("cruiseControl", "partitions are not rebalanced"),
    ("kafkaExporter", "no exporter runs"),
)
SERVED_AUTHENTICATION = ("tls", "scram-sha-512")
FORBIDDEN_PORTS = (8443, 9090, 9091, 9404, 9999)  # Strimzi's own (agent, control plane, replication, metrics, JMX)
SIMPLE_AUTHORIZATION = "simple"
_HEAP = re.compile(r"^[0-9]+[mMgG]?$")
_PRINCIPAL = re.compile(r"[^;\x00-\x1f\x7f]+")


@dataclass(frozen=True)
class Listener:
    name: str
    port: int
    type: str
    tls: bool
    authentication: str | None = None

    @property
    def served(self) -> bool:
        """Listeners without authentication, with mutual TLS or with SCRAM-SHA-512 are served; `custom`
        authentication would need a login module sparklink does not run."""
        return self.authentication is None or self.authentication in SERVED_AUTHENTICATION


@dataclass(frozen=True)
class Authorization:
    """`type: simple`: the StandardAuthorizer; `super_users` as the user wrote them (`CN=my-user`, `my-user`)."""

    super_users: tuple[str, ...] = ()

    def principals(self) -> list[str]:
        return [f"User:{u}" for u in self.super_users]


@dataclass(frozen=True)
class Pool:
    name: str
    replicas: int
    roles: tuple[str, ...]
    node_ids: tuple[int, ...]
    heap: str | None
    config: Mapping[str, str]
    warnings: tuple[Condition, ...]
    manual_roll: str | None  # the annotation's value when it asks for a roll
    resource: Resource


@dataclass(frozen=True)
class DesiredNode:
    node_id: int
    pool: str
    name: str
    broker: bool
    controller: bool
    config: Mapping[str, str]
    heap: str | None

    @property
    def roles(self) -> str:
        """As KafkaCluster and Kafka's process.roles write them."""
        return ",".join(r for r, on in (("broker", self.broker), ("controller", self.controller)) if on)


@dataclass(frozen=True)
class DesiredCluster:
    namespace: str
    name: str
    nodes: tuple[DesiredNode, ...]
    pools: tuple[Pool, ...]
    listeners: tuple[Listener, ...]
    warnings: tuple[Condition, ...] = ()
    manual_roll: str | None = None  # the Kafka's own annotation value when it asks for a roll
    heap: str | None = None
    config: Mapping[str, str] = field(default_factory=dict)
    metadata_version: str | None = None  # set in spec.kafka.metadataVersion (resolved to a full version)
    authorization: Authorization | None = None
    cas: Authorities | None = None  # the CAs, as the reconcile keeps them in Secrets (None: not known yet)

    @property
    def served_listeners(self) -> tuple[Listener, ...]:
        return tuple(lst for lst in self.listeners if lst.served)

    def node(self, node_id: int) -> DesiredNode:
        return next(n for n in self.nodes if n.node_id == node_id)

    def manual_roll_nodes(self) -> set[int]:
        if self.manual_roll is not None:
            return {n.node_id for n in self.nodes}
        pools = {p.name for p in self.pools if p.manual_roll is not None}
        return {n.node_id for n in self.nodes if n.pool in pools}

    def manual_annotations(self) -> list[tuple[Resource | None, tuple[str, str]]]:
        """The annotations to remove once the roll they asked for succeeded (None: the Kafka itself)."""
        out: list[tuple[Resource | None, tuple[str, str]]] = []
        if self.manual_roll is not None:
            out.append((None, (MANUAL_ROLLING_UPDATE, self.manual_roll)))
        out += [(p.resource, (MANUAL_ROLLING_UPDATE, p.manual_roll)) for p in self.pools if p.manual_roll is not None]
        return out


def invalid(message: str) -> ReconcileFailure:
    return ReconcileFailure(message, REASON_INVALID_RESOURCE)


def desired_cluster(
    kafka: Resource,
    pools: Iterable[Resource],
    model: ConfigModel,
    current_ids: Mapping[str, Sequence[int]] | None = None,
    kafka_version: str | None = None,
) -> DesiredCluster:
    """The cluster `kafka` and `pools` describe; ReconcileFailure (NotReady) when they are invalid.

    `current_ids` are the node ids each pool runs now (from the runtime); pools not in it keep the ids of
    their status. `kafka_version` is the version sparklink runs (its jars), for a Warning on a mismatch.
    """
    ref = f"{kafka.namespace}/{kafka.name}"
    spec = kafka.spec.get("kafka")
    if not isinstance(spec, Mapping):
        raise invalid(f"Kafka {ref} has no spec.kafka")
    resources = sorted(pools, key=lambda p: p.name)
    _refuse_control_characters(kafka, spec, resources)
    _validate_pools(kafka.name, resources)
    ids = assign_node_ids(
        [(p.name, _replicas(p), _current(p, current_ids)) for p in resources],
    )
    config, ignored = kafka_config.user_config(spec.get("config"))
    errors = model.validate(config)
    if errors:
        raise invalid(f"Kafka {ref} has invalid spec.kafka.config: {', '.join(errors)}")
    notes = [_forbidden(o, "spec.kafka.config") for o in ignored]
    built_pools = [_pool(p, ids[p.name], model) for p in resources]
    brokers = sum(p.replicas for p in built_pools if "broker" in p.roles)
    for option in kafka_config.REPLICA_COUNT_OPTIONS:
        _check_replica_count(option, config, brokers)
    heap = _heap(spec.get("jvmOptions"), f"Kafka {ref} spec.kafka.jvmOptions")
    nodes = []
    for pool in built_pools:
        broker, controller = "broker" in pool.roles, "controller" in pool.roles
        node_config = kafka_config.for_roles({**config, **pool.config}, broker, controller)
        for node_id in pool.node_ids:
            name = f"{kafka.name}-{pool.name}-{node_id}"
            nodes.append(DesiredNode(node_id, pool.name, name, broker, controller, node_config, pool.heap or heap))
    listeners = _listeners(spec.get("listeners"), ref)
    if not any(lst.served for lst in listeners):
        raise invalid(
            f"Kafka {ref} has no listener sparklink can serve: add one without authentication or with "
            f"authentication type {' or '.join(SERVED_AUTHENTICATION)}"
        )
    notes += [
        warning(
            "UnsupportedListener",
            f"Listener '{lst.name}' (port {lst.port}) uses {lst.authentication} authentication, which sparklink "
            f"does not serve; it is not served. Use authentication type {' or '.join(SERVED_AUTHENTICATION)}.",
        )
        for lst in listeners
        if not lst.served
    ]
    authorization, authorization_notes = _authorization(spec.get("authorization"), ref)
    notes += authorization_notes
    notes += _unsupported(kafka.spec)
    version = spec.get("version")
    if kafka_version and isinstance(version, str) and version != kafka_version:
        notes.append(
            warning(
                "UnsupportedKafkaVersion",
                f"spec.kafka.version is {version}, but sparklink runs Kafka {kafka_version} (the version of its "
                "jars); the cluster runs that version.",
            )
        )
    metadata_version = None
    if spec.get("metadataVersion") is not None:
        metadata_version = model.metadata_version(str(spec["metadataVersion"]))
        if metadata_version is None:
            known = model.metadata_versions
            hint = f": use one from {known[0]} to {known[-1]}" if known else ""
            raise invalid(f"Metadata version {spec['metadataVersion']} is invalid{hint}")
    manual = kafka.annotations.get(MANUAL_ROLLING_UPDATE)
    return DesiredCluster(
        namespace=kafka.namespace,
        name=kafka.name,
        nodes=tuple(sorted(nodes, key=lambda n: n.node_id)),
        pools=tuple(built_pools),
        listeners=listeners,
        warnings=tuple(notes),
        manual_roll=manual if _asks_for_roll(manual) else None,
        heap=heap,
        config=config,
        metadata_version=metadata_version,
        authorization=authorization,
    )


def unsafe_pools(pools: Iterable[Resource]) -> list[tuple[Resource, list[str]]]:
    """The pools whose `spec.config` holds a line break or control character, with what each holds."""
    found = [(p, config_safety.problems_in(p.spec.get("config"), "spec.config")) for p in pools]
    return [(p, problems) for p, problems in found if problems]


def _refuse_control_characters(kafka: Resource, spec: Mapping[str, Any], pools: Iterable[Resource]) -> None:
    problems = config_safety.problems_in(spec.get("config"), "spec.kafka.config")
    for pool, pool_problems in unsafe_pools(pools):
        problems += [f"KafkaNodePool {pool.name} {problem}" for problem in pool_problems]
    if problems:
        raise config_safety.UnsafeConfig(
            f"Kafka {kafka.namespace}/{kafka.name}", problems, "the nodes keep running with their previous settings"
        )


def assign_node_ids(pools: Sequence[tuple[str, int, Sequence[int] | None]]) -> dict[str, tuple[int, ...]]:
    """Strimzi's NodeIdAssignor without the next/remove-node-ids annotations: (pool, replicas, current ids)
    in the order given -> each pool's ids. Existing ids stay; new nodes take the lowest unused id; a
    scale-down drops the highest ids first."""
    in_use: set[int] = set()
    for name, _, current in pools:
        for node_id in current or ():
            if node_id in in_use:
                raise invalid(f"Found duplicate node ID {node_id} in node pool {name}")
            in_use.add(node_id)
    out: dict[str, tuple[int, ...]] = {}
    for name, replicas, current in pools:
        ids = sorted(current or ())
        while len(ids) > replicas:
            ids.pop()
        while len(ids) < replicas:
            next_id = next(i for i in range(len(in_use) + 1) if i not in in_use)
            in_use.add(next_id)
            ids.append(next_id)
        out[name] = tuple(sorted(ids))
    return out


def pool_cluster(pool: Resource) -> str | None:
    return pool.labels.get("strimzi.io/cluster") or None


def listener_for_port(kafka: Resource, port: int) -> str | None:
    """The name of the listener of `kafka` on `port` (what `<name>-kafka-bootstrap:<port>` reaches)."""
    for raw in (kafka.spec.get("kafka") or {}).get("listeners") or []:
        if isinstance(raw, Mapping) and raw.get("port") == port:
            return str(raw.get("name"))
    return None


# -- validation and parsing -----------------------------------------------------------------------------


def _validate_pools(cluster: str, pools: Sequence[Resource]) -> None:
    """Strimzi's NodePoolUtils.validateNodePools (the CRD rejects most of this before it gets here)."""
    for pool in pools:
        replicas = pool.spec.get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise invalid(
                f"KafkaNodePool {pool.namespace}/{pool.name} has spec.replicas {replicas!r}: it must be 0 or more"
            )
        unknown = [r for r in pool.spec.get("roles") or [] if r not in ROLES]
        if unknown:
            raise invalid(
                f"KafkaNodePool {pool.namespace}/{pool.name} has unknown roles {unknown} in .spec.roles: "
                "use broker and/or controller"
            )
    if not pools or not any(_replicas(p) > 0 for p in pools):
        raise invalid(
            f"KafkaNodePools are enabled, but KafkaNodePools for Kafka cluster {cluster} either don't exist or "
            "have 0 replicas. Please make sure at least one KafkaNodePool resource exists, is in the same namespace "
            "as the Kafka resource, has at least one replica, and has the strimzi.io/cluster label set to the "
            "name of the Kafka resource."
        )
    errors = [f"KafkaNodePool {p.name} has no role defined in .spec.roles" for p in pools if not p.spec.get("roles")]
    active = [set(p.spec.get("roles") or ()) for p in pools if _replicas(p) > 0]
    for role in ROLES:
        if not any(role in roles for roles in active):
            errors.append(
                f"At least one KafkaNodePool with the {role} role and at least one replica is required when "
                "KRaft mode is enabled"
            )
    if errors:
        raise invalid(f"The Kafka cluster {cluster} is invalid: [{', '.join(errors)}]")


def _replicas(pool: Resource) -> int:
    replicas = pool.spec.get("replicas")
    return replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 0


def _current(pool: Resource, current_ids: Mapping[str, Sequence[int]] | None) -> Sequence[int] | None:
    if current_ids is not None and pool.name in current_ids:
        return current_ids[pool.name]
    ids = pool.status.get("nodeIds")
    if isinstance(ids, list) and all(isinstance(i, int) for i in ids):
        return ids
    return None


def _pool(pool: Resource, ids: tuple[int, ...], model: ConfigModel) -> Pool:
    ref = f"{pool.namespace}/{pool.name}"
    config, ignored = kafka_config.user_config(pool.spec.get("config"))
    errors = model.validate(config)
    if errors:
        raise invalid(f"KafkaNodePool {ref} has invalid spec.config: {', '.join(errors)}")
    manual = pool.annotations.get(MANUAL_ROLLING_UPDATE)
    return Pool(
        name=pool.name,
        replicas=_replicas(pool),
        roles=tuple(sorted(set(pool.spec.get("roles") or ()))),
        node_ids=ids,
        heap=_heap(pool.spec.get("jvmOptions"), f"KafkaNodePool {ref} spec.jvmOptions"),
        config=config,
        warnings=tuple(_forbidden(o, "spec.config") for o in ignored),
        manual_roll=manual if _asks_for_roll(manual) else None,
        resource=pool,
    )


def _asks_for_roll(value: str | None) -> bool:
    return value is not None and value.strip().lower() == "true"


def _heap(jvm_options: Any, where: str) -> str | None:
    if not isinstance(jvm_options, Mapping) or jvm_options.get("-Xmx") is None:
        return None
    heap = str(jvm_options["-Xmx"])
    if not _HEAP.match(heap):
        raise invalid(f"{where} has -Xmx '{heap}': use a size like 512m or 2g")
    return heap


def _check_replica_count(option: str, config: Mapping[str, str], brokers: int) -> None:
    value = config.get(option)
    if value is None:
        return
    if not re.fullmatch(r"[+-]?\d+", value):
        raise invalid(f"Property {option} should be an integer")
    if int(value) > brokers:
        or_less = " or less" if brokers > 1 else ""
        raise invalid(
            f"Kafka configuration option '{option}' should be set to {brokers}{or_less} because this cluster has "
            f"only {brokers} Kafka broker(s)."
        )


def _listeners(raw: Any, ref: str) -> tuple[Listener, ...]:
    if not isinstance(raw, list) or not raw:
        raise invalid(f"Kafka {ref}: The required field .spec.kafka.listeners is missing")
    out = []
    for item in raw:
        if not isinstance(item, Mapping) or not isinstance(item.get("port"), int) or not item.get("name"):
            raise invalid(f"Kafka {ref}: Listener configuration is not valid: each listener needs a name and a port")
        auth = item.get("authentication")
        out.append(
            Listener(
                name=str(item["name"]),
                port=int(item["port"]),
                type=str(item.get("type", "internal")),
                tls=item.get("tls") is True,
                authentication=str(auth.get("type")) if isinstance(auth, Mapping) else None,
            )
        )
    errors = _listener_errors(out)
    if errors:
        raise invalid(f"Listener configuration is not valid: [{', '.join(errors)}]")
    return tuple(out)


def _listener_errors(listeners: Sequence[Listener]) -> list[str]:
    """Strimzi's ListenersValidator, for what applies to listeners sparklink serves."""
    errors = []
    if len({lst.name for lst in listeners}) != len(listeners):
        errors.append("every listener needs to have a unique name")
    if len({lst.port for lst in listeners}) != len(listeners):
        errors.append("every listener needs to have a unique port number")
    errors += [f"port {lst.port} is forbidden and cannot be used" for lst in listeners if lst.port in FORBIDDEN_PORTS]
    errors += [
        f"listener {lst.name} cannot use tls type authentication with disabled TLS encryption"
        for lst in listeners
        if lst.authentication == "tls" and not lst.tls
    ]
    return errors


def _authorization(raw: Any, ref: str) -> tuple[Authorization | None, list[Condition]]:
    if raw is None:
        return None, []
    kind = raw.get("type") if isinstance(raw, Mapping) else None
    if kind != SIMPLE_AUTHORIZATION:
        return None, [
            warning(
                "UnsupportedField",
                f"spec.kafka.authorization of type {kind} is not supported by sparklink and was ignored: no "
                "authorizer runs. Use type simple (Kafka's StandardAuthorizer with ACLs).",
            )
        ]
    users = raw.get("superUsers") or []
    if not isinstance(users, list) or not all(isinstance(u, str) and _PRINCIPAL.fullmatch(u) for u in users):
        raise invalid(
            f"Kafka {ref} has invalid spec.kafka.authorization.superUsers: each must be a user name or a "
            "certificate subject (CN=...), without ';' or control characters"
        )
    return Authorization(tuple(users)), []


def _forbidden(option: str, where: str) -> Condition:
    return warning("ForbiddenConfigOption", f'Configuration option "{option}" is forbidden in {where} and was ignored')


def _unsupported(spec: Mapping[str, Any]) -> list[Condition]:
    notes = [
        warning("UnsupportedField", f"spec.{name} is not supported by sparklink yet and was ignored: {effect}.")
        for name, effect in UNSUPPORTED_FIELDS
        if spec.get(name) is not None
    ]
    entity = spec.get("entityOperator")
    if isinstance(entity, Mapping) and entity.get("topicOperator") is not None:
        notes.append(
            warning(
                "UnsupportedField",
                "spec.entityOperator.topicOperator is not supported by sparklink yet and was ignored: KafkaTopics "
                "are not managed. (KafkaUsers are: the operator itself runs Strimzi's User Operator.)",
            )
        )
    return notes
