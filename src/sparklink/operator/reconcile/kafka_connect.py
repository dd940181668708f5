"""KafkaConnect: run the worker group through the runtime, and keep Connect's connectors in line with
the KafkaConnectors that name this cluster.

With `strimzi.io/use-connector-resources: "true"` the KafkaConnectors are the truth: a connector that
runs in Connect without one is deleted (after listing Connect first, so a connector created meanwhile
always has its resource listed), and every KafkaConnector of the cluster is reconciled after this one.
Status: Ready / NotReady, url, replicas, labelSelector, connectorPlugins, observedGeneration.
"""

from __future__ import annotations

import logging
from typing import Any

from sparklink.operator.connect_client import ConnectClient, ConnectRestError
from sparklink.operator.hosting import label_selector
from sparklink.operator.model import annotations as anno
from sparklink.operator.model import workers
from sparklink.operator.model.conditions import Condition, ReconcileFailure, not_ready, ready, warning
from sparklink.operator.model.resources import KAFKA_CONNECTOR, Key, Resource
from sparklink.operator.reconcile.context import (
    STARTING_RECHECK_SECONDS,
    Deps,
    ReconcileResult,
    local_addresses,
    prune,
)

log = logging.getLogger("sparklink.operator")


def reconcile(deps: Deps, key: Key) -> ReconcileResult:
    result = ReconcileResult()
    resource = deps.store.get(key)
    if resource is None or resource.deleting:
        log.info("%s: deleted, stopping its workers", key)
        deps.runtime.remove(key)
        return result
    managed = resource.annotations.get(anno.USE_CONNECTOR_RESOURCES, "").lower() == "true"
    connectors = deps.store.list(KAFKA_CONNECTOR, key.namespace, {anno.CLUSTER_LABEL: key.name})
    result.also = [c.key for c in connectors]
    try:
        resource = local_addresses(deps, resource)
        settings = workers.from_resource(resource)
    except ReconcileFailure as exc:
        result.failed = True
        result.requeue_after = STARTING_RECHECK_SECONDS if exc.retriable else None
        result.status_written = deps.write_status(resource, _status(resource, [not_ready(exc.reason, exc.message)]))
        return result
    notes = ignored_warnings(settings.ignored_options)
    state = deps.runtime.ensure(resource, settings)
    plugins: list[dict[str, Any]] | None = None
    if settings.replicas == 0:
        conditions: list[Condition] = [ready(), *notes]
    elif not state.ready or state.url is None:
        result.failed = True
        result.requeue_after = STARTING_RECHECK_SECONDS
        conditions = [not_ready("Creating", f"Kafka Connect workers are starting: {state.detail}"), *notes]
    else:
        conditions = [ready(), *notes]
        try:
            with deps.connect(state.url) as client:
                if managed:
                    plugins = [{k: p[k] for k in ("class", "type", "version") if k in p} for p in client.plugins()]
                    _delete_orphans(client, deps, key)
        except ConnectRestError as exc:
            result.failed = True
            result.requeue_after = STARTING_RECHECK_SECONDS
            conditions = [not_ready("ConnectRestException", str(exc)), *notes]
    status = _status(resource, conditions, state.url if settings.replicas else None, state.replicas, plugins)
    result.status_written = deps.write_status(resource, status)
    return result


def _delete_orphans(client: ConnectClient, deps: Deps, key: Key) -> None:
    running = client.connectors()  # Connect first: see the module docstring
    wanted = {c.name for c in deps.store.list(KAFKA_CONNECTOR, key.namespace, {anno.CLUSTER_LABEL: key.name})}
    for name in sorted(set(running) - wanted):
        log.info("%s: deleting connector %s, which no KafkaConnector describes", key, name)
        client.delete(name)


def ignored_warnings(options: tuple[str, ...]) -> list[Condition]:
    return [
        warning("ForbiddenConfigOption", f'Configuration option "{option}" is forbidden and was ignored')
        for option in options
    ]


def _status(
    resource: Resource,
    conditions: list[Condition],
    url: str | None = None,
    replicas: int | None = None,
    plugins: list[dict[str, Any]] | None = None,
) -> dict[str, object]:
    return prune(
        {
            "conditions": conditions,
            "observedGeneration": resource.generation,
            "url": url,
            "connectorPlugins": plugins,
            "replicas": replicas,
            "labelSelector": label_selector(resource),
        }
    )
