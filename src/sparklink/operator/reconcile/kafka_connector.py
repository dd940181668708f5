"""KafkaConnector: find its Connect cluster, run the connector pipeline, write Strimzi's status.

The `strimzi.io/cluster` label names the KafkaConnect; that KafkaConnect must carry
`strimzi.io/use-connector-resources: "true"` and have workers that answer. Status: Ready, or NotReady
with Strimzi's reason and message; Warning conditions; observedGeneration; connectorStatus as Connect
reports it; tasksMax; topics; autoRestart. A deleted KafkaConnector's connector is removed from Connect
by its KafkaConnect's reconcile (the watch enqueues it), as Strimzi does.
"""

from __future__ import annotations

import logging

from sparklink.operator.model import annotations as anno
from sparklink.operator.model.autorestart import AutoRestartStatus
from sparklink.operator.model.conditions import (
    REASON_CONNECTOR_FAILED,
    REASON_INVALID_RESOURCE,
    REASON_NO_SUCH_RESOURCE,
    REASON_RUNTIME,
    Condition,
    ReconcileFailure,
    not_ready,
    ready,
    warning,
)
from sparklink.operator.model.connectors import ConnectorJob, from_kafka_connector
from sparklink.operator.model.resources import KAFKA_CONNECT, Key, Resource
from sparklink.operator.model.status import KafkaConnectorStatus
from sparklink.operator.reconcile.connector import ConnectorOutcome, connector_failed, failed_task_ids
from sparklink.operator.reconcile.context import Deps, ReconcileResult

log = logging.getLogger("sparklink.operator")

PAUSE_RECONCILIATION = "strimzi.io/pause-reconciliation"


def reconcile(deps: Deps, key: Key) -> ReconcileResult:
    resource = deps.store.get(key)
    result = ReconcileResult()
    if resource is None or resource.deleting:
        return result
    if resource.annotations.get(PAUSE_RECONCILIATION) == "true":
        previous = resource.status.get("observedGeneration", 0)
        status = KafkaConnectorStatus(
            conditions=[Condition("ReconciliationPaused")],
            observed_generation=previous if isinstance(previous, int) else 0,
        )
        result.status_written = deps.write_status(resource, status)
        return result
    try:
        connect = _connect_cluster(deps, resource)
    except ReconcileFailure as exc:
        log.info("%s: %s", key, exc.message)
        return _fail(deps, resource, result, not_ready(exc.reason, exc.message))
    state = deps.runtime.state(connect.key)
    if state is None or not state.ready or state.url is None:
        message = f"Kafka Connect cluster '{connect.name}' in namespace {key.namespace} is not ready yet"
        return _fail(deps, resource, result, not_ready(REASON_RUNTIME, message))
    desired = from_kafka_connector(resource)
    job = ConnectorJob(
        owner=resource,
        desired=desired,
        requests=anno.kafka_connector_requests(resource.annotations),
        previous_auto_restart=AutoRestartStatus.from_json(resource.status.get("autoRestart")),
    )
    with deps.connect(state.url, state.ca_pem) as client:
        outcome = deps.connectors.reconcile(client, job)
    if outcome.actions:
        log.info("%s: %s", key, ", ".join(outcome.actions))
    conditions = [readiness(outcome), *outcome.conditions, *_ignored(desired.ignored_options)]
    result.failed = conditions[0].type != "Ready"
    status = KafkaConnectorStatus(
        conditions=conditions,
        observed_generation=resource.generation,
        auto_restart=outcome.auto_restart,
        connector_status=outcome.status,
        tasks_max=_tasks_max(resource, outcome),
        topics=outcome.topics if outcome.status is not None else None,
    )
    result.status_written = deps.write_status(resource, status)
    result.requeue_at(outcome.next_check, deps.clock.now())
    return result


def readiness(outcome: ConnectorOutcome) -> Condition:
    """Only the connector's own state makes a KafkaConnector NotReady (Strimzi's messages)."""
    if outcome.failure is not None:
        return not_ready(outcome.failure.reason, outcome.failure.message)
    if connector_failed(outcome.status):
        return not_ready(REASON_CONNECTOR_FAILED, "Connector has failed, see connectorStatus for more details.")
    failed = failed_task_ids(outcome.status)
    if failed:
        return not_ready(
            REASON_CONNECTOR_FAILED,
            f"The following tasks have failed: {', '.join(failed)}, see connectorStatus for more details.",
        )
    return ready()


def _connect_cluster(deps: Deps, resource: Resource) -> Resource:
    """The KafkaConnect the `strimzi.io/cluster` label names, read once per reconcile; ReconcileFailure
    (with Strimzi's reason and message) when there is none or it runs no connectors for resources."""
    cluster = resource.labels.get(anno.CLUSTER_LABEL)
    if not cluster:
        raise ReconcileFailure(
            f"Resource lacks label '{anno.CLUSTER_LABEL}': No connect cluster in which to create this connector.",
            REASON_INVALID_RESOURCE,
        )
    connect = deps.store.get(Key(KAFKA_CONNECT, resource.namespace, cluster))
    if connect is None:
        raise ReconcileFailure(
            f"KafkaConnect resource '{cluster}' identified by label '{anno.CLUSTER_LABEL}' does not exist in "
            f"namespace {resource.namespace}.",
            REASON_NO_SUCH_RESOURCE,
        )
    if connect.annotations.get(anno.USE_CONNECTOR_RESOURCES, "").lower() != "true":
        raise ReconcileFailure(
            f"KafkaConnect {cluster} is not configured with annotation {anno.USE_CONNECTOR_RESOURCES}",
            REASON_NO_SUCH_RESOURCE,
        )
    if connect.spec.get("replicas") == 0:
        raise ReconcileFailure(
            f"Kafka Connect cluster '{cluster}' in namespace {resource.namespace} has 0 replicas.", REASON_RUNTIME
        )
    return connect


def _fail(deps: Deps, resource: Resource, result: ReconcileResult, condition: Condition) -> ReconcileResult:
    """NotReady before Connect was asked anything: the last auto-restart status is kept."""
    result.failed = True
    status = KafkaConnectorStatus(
        conditions=[condition],
        observed_generation=resource.generation,
        auto_restart=AutoRestartStatus.from_json(resource.status.get("autoRestart")),
        tasks_max=_tasks_max(resource, None),
    )
    result.status_written = deps.write_status(resource, status)
    return result


def _tasks_max(resource: Resource, outcome: ConnectorOutcome | None) -> int:
    """spec.tasksMax, else as many as Connect runs (Strimzi's status always has tasksMax)."""
    tasks_max = resource.spec.get("tasksMax")
    if isinstance(tasks_max, int):
        return tasks_max
    status = outcome.status if outcome is not None else None
    return len((status or {}).get("tasks", []))


def _ignored(options: tuple[str, ...]) -> list[Condition]:
    return [
        warning("ForbiddenConfigOption", f'Configuration option "{option}" is forbidden in spec.config and was ignored')
        for option in options
    ]
