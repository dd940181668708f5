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
    not_ready,
    ready,
    warning,
)
from sparklink.operator.model.connectors import ConnectorJob, from_kafka_connector
from sparklink.operator.model.resources import KAFKA_CONNECT, Key, Resource
from sparklink.operator.reconcile.connector import ConnectorOutcome, connector_failed, failed_task_ids
from sparklink.operator.reconcile.context import Deps, ReconcileResult, prune

log = logging.getLogger("sparklink.operator")

PAUSE_RECONCILIATION = "strimzi.io/pause-reconciliation"


def reconcile(deps: Deps, key: Key) -> ReconcileResult:
    resource = deps.store.get(key)
    result = ReconcileResult()
    if resource is None or resource.deleting:
        return result
    if resource.annotations.get(PAUSE_RECONCILIATION) == "true":
        status = {
            "conditions": [Condition("ReconciliationPaused")],
            "observedGeneration": resource.status.get("observedGeneration", 0),
        }
        result.status_written = deps.write_status(resource, status)
        return result
    blocked = _cluster_problem(deps, resource)
    if blocked is not None:
        reason, message = blocked
        log.info("%s: %s", key, message)
        result.failed = True
        result.status_written = deps.write_status(resource, _status(resource, None, [not_ready(reason, message)]))
        return result
    connect = deps.store.get(Key(KAFKA_CONNECT, key.namespace, resource.labels[anno.CLUSTER_LABEL]))
    assert connect is not None
    state = deps.runtime.state(connect.key)
    if state is None or not state.ready or state.url is None:
        message = f"Kafka Connect cluster '{connect.name}' in namespace {key.namespace} is not ready yet"
        result.failed = True
        result.status_written = deps.write_status(
            resource, _status(resource, None, [not_ready(REASON_RUNTIME, message)])
        )
        return result
    desired = from_kafka_connector(resource)
    job = ConnectorJob(
        owner=resource,
        desired=desired,
        requests=anno.kafka_connector_requests(resource.annotations),
        previous_auto_restart=AutoRestartStatus.from_json(resource.status.get("autoRestart")),
    )
    with deps.connect(state.url) as client:
        outcome = deps.connectors.reconcile(client, job)
    if outcome.actions:
        log.info("%s: %s", key, ", ".join(outcome.actions))
    conditions = [readiness(outcome), *outcome.conditions, *_ignored(desired.ignored_options)]
    result.failed = conditions[0].type != "Ready"
    result.status_written = deps.write_status(resource, _status(resource, outcome, conditions))
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


def _cluster_problem(deps: Deps, resource: Resource) -> tuple[str, str] | None:
    cluster = resource.labels.get(anno.CLUSTER_LABEL)
    if not cluster:
        return (
            REASON_INVALID_RESOURCE,
            f"Resource lacks label '{anno.CLUSTER_LABEL}': No connect cluster in which to create this connector.",
        )
    connect = deps.store.get(Key(KAFKA_CONNECT, resource.namespace, cluster))
    if connect is None:
        return (
            REASON_NO_SUCH_RESOURCE,
            f"KafkaConnect resource '{cluster}' identified by label '{anno.CLUSTER_LABEL}' does not exist in "
            f"namespace {resource.namespace}.",
        )
    if connect.annotations.get(anno.USE_CONNECTOR_RESOURCES, "").lower() != "true":
        return (
            REASON_NO_SUCH_RESOURCE,
            f"KafkaConnect {cluster} is not configured with annotation {anno.USE_CONNECTOR_RESOURCES}",
        )
    if connect.spec.get("replicas") == 0:
        return (REASON_RUNTIME, f"Kafka Connect cluster '{cluster}' in namespace {resource.namespace} has 0 replicas.")
    return None


def _status(resource: Resource, outcome: ConnectorOutcome | None, conditions: list[Condition]) -> dict[str, object]:
    status = outcome.status if outcome is not None else None
    tasks_max = resource.spec.get("tasksMax")
    if not isinstance(tasks_max, int):
        tasks_max = len((status or {}).get("tasks", []))
    auto = (
        outcome.auto_restart if outcome is not None else AutoRestartStatus.from_json(resource.status.get("autoRestart"))
    )
    return prune(
        {
            "conditions": conditions,
            "observedGeneration": resource.generation,
            "autoRestart": auto.to_json() if auto is not None else None,
            "connectorStatus": dict(status) if status is not None else None,
            "tasksMax": tasks_max,
            "topics": outcome.topics if outcome is not None and status is not None else None,
        }
    )


def _ignored(options: tuple[str, ...]) -> list[Condition]:
    return [
        warning("ForbiddenConfigOption", f'Configuration option "{option}" is forbidden in spec.config and was ignored')
        for option in options
    ]
