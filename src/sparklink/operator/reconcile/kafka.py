"""Kafka: run the KRaft cluster its KafkaNodePools describe, roll it safely when a node's settings change or a
manual rolling update is asked for, and write the status of the Kafka and of each of its pools.

Order, as in Strimzi's KafkaReconciler: validate (the pure model; an invalid Kafka or pool is NotReady and
nothing that runs is touched; settings with a line break or control character are refused too, nothing
changes, and a Warning on the Kafka and on each pool that holds them says so) -> the cluster and clients CAs
in their Secrets (`kafka_ca`: created, renewed) -> create or adopt the nodes, start the ones that died, add
brokers -> the per-node changes (dynamic update, restart, or a restart for certificates of an older CA
generation) -> one roll through the runtime (sparklink's KafkaRoller: controllers first, the active
controller last, availability and quorum checks, never a broker in log recovery) -> remove the
manual-rolling-update annotations it acted on -> status.
Status: Ready, or NotReady with the roller's problem (UnforceableProblem, ...) and message; Warnings;
observedGeneration, listeners (the served ones, with their real addresses and, for TLS ones, the cluster CA's
certificate), kafkaNodePools, clusterId, kafkaVersion, kafkaMetadataVersion, operatorLastSuccessfulVersion.
Each pool: nodeIds, roles, replicas, clusterId, labelSelector, observedGeneration and its Warnings. When the
Kafka's status changes its KafkaUsers are looked at again (they need its listeners, CAs and readiness).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence

from sparklink import __version__
from sparklink.operator.hosting.kafka import PLAIN_LISTENERS, KafkaState
from sparklink.operator.model import config_safety
from sparklink.operator.model import kafka as model
from sparklink.operator.model.conditions import Condition, ReconcileFailure, not_ready, ready, warning
from sparklink.operator.model.kafka_changes import node_changes, scaling
from sparklink.operator.model.kafka_config import ConfigModel
from sparklink.operator.model.rendering import render
from sparklink.operator.model.resources import (
    KAFKA_CONNECT,
    KAFKA_MIRROR_MAKER_2,
    KAFKA_NODE_POOL,
    KAFKA_USER,
    Key,
    Resource,
)
from sparklink.operator.model.status import (
    KafkaNodePoolStatus,
    KafkaStatus,
    ListenerAddress,
    ListenerStatus,
    UsedNodePoolStatus,
)
from sparklink.operator.reconcile import kafka_ca
from sparklink.operator.reconcile.context import Deps, ReconcileResult

log = logging.getLogger("sparklink.operator")

CLUSTER_LABEL = "strimzi.io/cluster"
# How soon to look again at nodes still starting (or recovering), and after a roll that failed.
STARTING_RECHECK_SECONDS = 5.0
ROLL_RETRY_SECONDS = 10.0


def reconcile(deps: Deps, key: Key) -> ReconcileResult:
    result = ReconcileResult()
    runtime = deps.kafka
    kafka = deps.store.get(key)
    if kafka is None or kafka.deleting:
        if runtime is not None:
            runtime.remove(key)
        return result
    pools = deps.store.list(KAFKA_NODE_POOL, key.namespace, {CLUSTER_LABEL: key.name})
    if runtime is None:
        return _fail(deps, kafka, result, not_ready("RuntimeException", "this operator runs no Kafka clusters"))
    try:
        config_model = deps.kafka_model()
    except Exception as exc:  # the JVM that reads Kafka's config model failed: say what to do
        return _fail(deps, kafka, result, not_ready("RuntimeException", str(exc)))
    running = runtime.running(kafka)
    try:
        desired = model.desired_cluster(
            kafka, pools, config_model, running.pool_ids() if running else None, config_model.version
        )
        cas, ca_notes = kafka_ca.reconcile_cas(deps.store, kafka, deps.clock.now())
    except config_safety.UnsafeConfig as exc:
        log.warning("%s: %s", key, exc.message)
        return _refused(deps, kafka, pools, running, result, exc)
    except ReconcileFailure as exc:
        log.warning("%s: %s", key, exc.message)
        return _fail(deps, kafka, result, not_ready(exc.reason, exc.message))
    desired = dataclasses.replace(desired, cas=cas)

    notes: list[Condition] = [*desired.warnings, *ca_notes]
    if running is None:
        state = runtime.ensure(kafka, desired, desired.nodes)
    else:
        plan = scaling(desired, running.nodes, running.can_add_brokers)
        notes += plan.warnings
        state = runtime.ensure(kafka, desired, plan.add)
    notes += _metadata_version_warning(desired, state, config_model)

    changes = [c for c in node_changes(desired, state.nodes, config_model, state.default_heap) if c.action != "none"]
    condition: Condition = ready()
    if changes:
        log.info("%s: %s", key, "; ".join(c.describe() for c in changes))
        report = runtime.roll(kafka, desired, changes)
        if report.ok:
            _remove_manual_annotations(deps, kafka, desired)
            state = runtime.running(kafka) or state
        else:
            log.warning("%s: the roll failed: %s", key, report.message)
            condition = not_ready(report.reason or "RuntimeException", report.message or "the roll failed")
            result.failed = True
            result.requeue_after = ROLL_RETRY_SECONDS
    if condition.type == "Ready" and not state.ready:
        condition = not_ready("Creating", f"Kafka nodes are not ready: {state.detail}")
        result.failed = True
        result.requeue_after = STARTING_RECHECK_SECONDS

    for pool in desired.pools:
        _write_pool_status(deps, pool, desired, state)
    status = _status(kafka, [condition, *notes], desired, state, config_model)
    if render(status).get("listeners") != kafka.status.get("listeners"):
        result.also = _clients(deps, key)  # they may reach this cluster by its bootstrap name
    result.status_written = deps.write_status(kafka, status)
    if result.status_written:
        result.also += [u.key for u in deps.store.list(KAFKA_USER, key.namespace, {CLUSTER_LABEL: key.name})]
    return result


def _fail(deps: Deps, kafka: Resource, result: ReconcileResult, condition: Condition) -> ReconcileResult:
    """NotReady, keeping what the status said about what runs (listeners, cluster id, ...)."""
    result.failed = True
    kept = KafkaStatus.from_json(kafka.status)
    status = dataclasses.replace(kept, conditions=[condition], observed_generation=kafka.generation)
    result.status_written = deps.write_status(kafka, status)
    return result


def _refused(
    deps: Deps,
    kafka: Resource,
    pools: Sequence[Resource],
    running: KafkaState | None,
    result: ReconcileResult,
    exc: config_safety.UnsafeConfig,
) -> ReconcileResult:
    """Nothing is written or rolled: the cluster's readiness as it runs, the refusal as a Warning (also on
    each pool whose own config was refused), the rest of the status as it was."""
    if running is not None and running.ready:
        readiness = ready()
    else:
        readiness = not_ready(exc.reason, "No node of this cluster runs as asked: its settings were refused")
        result.failed = True
    kept = KafkaStatus.from_json(kafka.status)
    status = dataclasses.replace(kept, conditions=[readiness, exc.condition()], observed_generation=kafka.generation)
    result.status_written = deps.write_status(kafka, status)
    for pool, problems in model.unsafe_pools(pools):
        refusal = config_safety.UnsafeConfig(
            f"KafkaNodePool {pool.namespace}/{pool.name}",
            problems,
            "its nodes keep running with their previous settings",
        )
        previous = KafkaNodePoolStatus.from_json(pool.status)
        deps.write_status(
            pool, dataclasses.replace(previous, conditions=[refusal.condition()], observed_generation=pool.generation)
        )
    return result


def _status(
    kafka: Resource,
    conditions: list[Condition],
    desired: model.DesiredCluster,
    state: KafkaState,
    config_model: ConfigModel,
) -> KafkaStatus:
    ok = conditions[0].type == "Ready"
    previous = KafkaStatus.from_json(kafka.status)
    return KafkaStatus(
        conditions=conditions,
        observed_generation=kafka.generation,
        listeners=listeners_status(desired, state.addresses),
        kafka_node_pools=[UsedNodePoolStatus(p.name) for p in sorted(desired.pools, key=lambda p: p.name)],
        cluster_id=state.cluster_id,
        kafka_version=config_model.version or None,
        kafka_metadata_version=state.metadata_version or config_model.latest_metadata_version,
        operator_last_successful_version=f"sparklink-{__version__}"
        if ok
        else previous.operator_last_successful_version,
    )


def listeners_status(
    desired: model.DesiredCluster, addresses: Mapping[str, Sequence[tuple[str, int]]]
) -> list[ListenerStatus]:
    """Each served listener with its real addresses (Strimzi: the bootstrap Service's) and, on a TLS listener,
    the certificate clients trust (the cluster CA's), as Strimzi's KafkaListenersReconciler sets them."""
    out = []
    ca_cert = desired.cas.cluster.cert_pem.decode() if desired.cas else None
    for lst in desired.served_listeners:
        plain = not lst.tls and lst.authentication is None
        found = addresses.get(lst.name) or (addresses.get(PLAIN_LISTENERS, ()) if plain else ())
        if not found:
            continue
        servers = ",".join(f"{host}:{port}" for host, port in found)
        certificates = [ca_cert] if lst.tls and ca_cert else None
        out.append(ListenerStatus(lst.name, [ListenerAddress(h, p) for h, p in found], servers, certificates))
    return out


def _write_pool_status(deps: Deps, pool: model.Pool, desired: model.DesiredCluster, state: KafkaState) -> None:
    ids = state.pool_ids().get(pool.name, [])
    status = KafkaNodePoolStatus(
        conditions=list(pool.warnings),
        observed_generation=pool.resource.generation,
        node_ids=ids,
        cluster_id=state.cluster_id,
        roles=list(pool.roles),
        replicas=len(ids),
        label_selector=pool_selector(desired.name, pool.name),
    )
    deps.write_status(pool.resource, status)


def pool_selector(cluster: str, pool: str) -> str:
    return f"strimzi.io/cluster={cluster},strimzi.io/name={cluster}-{pool},strimzi.io/kind=Kafka"


def _metadata_version_warning(
    desired: model.DesiredCluster, state: KafkaState, config_model: ConfigModel
) -> list[Condition]:
    running = state.metadata_version or config_model.latest_metadata_version
    if desired.metadata_version is None or desired.metadata_version == running:
        return []
    return [
        warning(
            "UnsupportedMetadataVersionChange",
            f"spec.kafka.metadataVersion is {desired.metadata_version}, but the cluster was created with "
            f"{running}; sparklink does not change the metadata version of a running cluster yet.",
        )
    ]


def _remove_manual_annotations(deps: Deps, kafka: Resource, desired: model.DesiredCluster) -> None:
    for owner, annotation in desired.manual_annotations():
        target = owner or kafka
        if deps.store.remove_annotations(target, [annotation]):
            log.info("%s: removed %s after the rolling update it asked for", target.key, annotation[0])


def _clients(deps: Deps, key: Key) -> list[Key]:
    """Connect and MirrorMaker 2 clusters of the namespace: their bootstrap address may name this Kafka."""
    return [r.key for kind in (KAFKA_CONNECT, KAFKA_MIRROR_MAKER_2) for r in deps.store.list(kind, key.namespace)]
