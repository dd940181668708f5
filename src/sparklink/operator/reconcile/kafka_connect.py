"""KafkaConnect: run the worker group through the host, and keep Connect's connectors in line with
the KafkaConnectors that name this cluster.

With `strimzi.io/use-connector-resources: "true"` the KafkaConnectors are the truth: a connector that
runs in Connect without one is deleted (after listing Connect first, so a connector created meanwhile
always has its resource listed), and every KafkaConnector of the cluster is reconciled after this one.
Status: Ready / NotReady, url, replicas, labelSelector, connectorPlugins, observedGeneration.
"""

from __future__ import annotations

import logging

from sparklink.operator.connect_client import ConnectClient, ConnectRestError
from sparklink.operator.model import annotations as anno
from sparklink.operator.model.conditions import REASON_REST, not_ready, ready
from sparklink.operator.model.resources import KAFKA_CONNECTOR, Key
from sparklink.operator.model.status import ConnectorPlugin, KafkaConnectStatus
from sparklink.operator.reconcile import connect_workers
from sparklink.operator.reconcile.context import Deps, ReconcileResult

log = logging.getLogger("sparklink.operator")


def reconcile(deps: Deps, key: Key) -> ReconcileResult:
    result = ReconcileResult()
    resource = connect_workers.live(deps, key)
    if resource is None:
        return result
    managed = resource.annotations.get(anno.USE_CONNECTOR_RESOURCES, "").lower() == "true"
    result.also = [c.key for c in deps.store.list(KAFKA_CONNECTOR, key.namespace, {anno.CLUSTER_LABEL: key.name})]
    group = connect_workers.ensure(deps, resource, "Kafka Connect")
    readiness = group.problem or ready()
    result.requeue_after = group.retry_after
    plugins: list[ConnectorPlugin] | None = None
    if group.rest_url is not None:
        try:
            with deps.connect(group.rest_url, group.ca_pem) as client:
                if managed:
                    plugins = [ConnectorPlugin.from_json(p) for p in client.plugins()]
                    _delete_orphans(client, deps, key)
        except ConnectRestError as exc:
            readiness = not_ready(REASON_REST, str(exc))
            result.requeue_after = connect_workers.STARTING_RECHECK_SECONDS
    result.failed = readiness.type != "Ready"
    status = KafkaConnectStatus(
        conditions=[readiness, *group.warnings], observed_generation=resource.generation, connector_plugins=plugins
    )
    result.status_written = deps.write_status(resource, group.status(status))
    return result


def _delete_orphans(client: ConnectClient, deps: Deps, key: Key) -> None:
    running = client.connectors()  # Connect first: see the module docstring
    wanted = {c.name for c in deps.store.list(KAFKA_CONNECTOR, key.namespace, {anno.CLUSTER_LABEL: key.name})}
    for name in sorted(set(running) - wanted):
        log.info("%s: deleting connector %s, which no KafkaConnector describes", key, name)
        client.delete(name)
