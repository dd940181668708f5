"""KafkaConnect: run the worker group through the host, and keep Connect's connectors in line with
the KafkaConnectors that name this cluster.

With `strimzi.io/use-connector-resources: "true"` the KafkaConnectors are the truth: a connector that
runs in Connect without one is deleted (after listing Connect first, so a connector created meanwhile
always has its resource listed), and every KafkaConnector of the cluster is reconciled after this one.
`spec.build` plugins are fetched first (`reconcile.connect_build`) and run by the workers it ensures.
Status: Ready / NotReady, url, replicas, labelSelector, connectorPlugins, observedGeneration.
"""

from __future__ import annotations

import logging

from sparklink.operator.connect_client import ConnectClient, ConnectRestError
from sparklink.operator.model import annotations as anno
from sparklink.operator.model.conditions import REASON_REST, not_ready, ready
from sparklink.operator.model.resources import KAFKA_CONNECTOR, Key
from sparklink.operator.model.status import ConnectorPlugin, KafkaConnectStatus
from sparklink.operator.reconcile import connect_build, connect_workers
from sparklink.operator.reconcile.context import Deps, ReconcileResult

log = logging.getLogger("sparklink.operator")


def reconcile(deps: Deps, key: Key) -> ReconcileResult:
    result = ReconcileResult()
    resource = connect_workers.live(deps, key)
    if resource is None:
        connect_build.removed(deps, key)
        return result
    managed = resource.annotations.get(anno.USE_CONNECTOR_RESOURCES, "").lower() == "true"
    result.also = [c.key for c in deps.store.list(KAFKA_CONNECTOR, key.namespace, {anno.CLUSTER_LABEL: key.name})]
    build = connect_build.prepare(deps, resource)
    group = connect_workers.ensure(deps, resource, "Kafka Connect", build.plugin_path)
    # The workers now run with the build's directory (unless their settings were refused or invalid).
    connect_build.settled(deps, key, build, group.settings is not None and not group.refused)
    readiness = build.problem or group.problem or ready()
    result.requeue_after = _sooner(group.retry_after, build.retry_after)
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
        conditions=[readiness, *group.warnings, *build.warnings],
        observed_generation=resource.generation,
        connector_plugins=plugins,
    )
    result.status_written = deps.write_status(resource, group.status(status))
    return result


def _delete_orphans(client: ConnectClient, deps: Deps, key: Key) -> None:
    running = client.connectors()  # Connect first: see the module docstring
    wanted = {c.name for c in deps.store.list(KAFKA_CONNECTOR, key.namespace, {anno.CLUSTER_LABEL: key.name})}
    for name in sorted(set(running) - wanted):
        log.info("%s: deleting connector %s, which no KafkaConnector describes", key, name)
        client.delete(name)


def _sooner(a: float | None, b: float | None) -> float | None:
    return min(a, b) if a is not None and b is not None else a if a is not None else b
