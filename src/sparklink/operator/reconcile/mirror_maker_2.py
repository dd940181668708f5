"""KafkaMirrorMaker2: run a worker group on the target cluster and its connectors, one source and one
checkpoint connector per mirror (`<source>-><target>.MirrorSourceConnector` / `...MirrorCheckpointConnector`).

Each connector goes through the same pipeline as a KafkaConnector, with MirrorMaker 2's annotations
(`strimzi.io/restart-connector`, `strimzi.io/restart-connector-task`, and the offsets pair
`strimzi.io/connector-offsets` + `strimzi.io/mirrormaker-connector`). Connectors Connect runs that the
resource no longer describes are deleted. Status: Ready, or NotReady "One or more connectors are in
FAILED state"; Warning conditions of every connector; `connectors` (Connect's statuses) and
`autoRestartStatuses`, both sorted by connector name; url, replicas, labelSelector.
"""

from __future__ import annotations

import logging

from sparklink.operator.connect_client import ConnectRestError
from sparklink.operator.hosting import label_selector
from sparklink.operator.model import annotations as anno
from sparklink.operator.model import workers
from sparklink.operator.model.autorestart import AutoRestartStatus
from sparklink.operator.model.conditions import (
    REASON_FAILED_FUTURE,
    REASON_REST,
    Condition,
    ReconcileFailure,
    not_ready,
    ready,
    warning,
)
from sparklink.operator.model.connectors import ConnectorJob, from_mirror_maker_2
from sparklink.operator.model.resources import Key, Resource
from sparklink.operator.reconcile.connector import ConnectorOutcome
from sparklink.operator.reconcile.context import (
    STARTING_RECHECK_SECONDS,
    Deps,
    ReconcileResult,
    local_addresses,
    prune,
)
from sparklink.operator.reconcile.kafka_connect import ignored_warnings

log = logging.getLogger("sparklink.operator")


def reconcile(deps: Deps, key: Key) -> ReconcileResult:
    result = ReconcileResult()
    resource = deps.store.get(key)
    if resource is None or resource.deleting:
        log.info("%s: deleted, stopping its workers", key)
        deps.runtime.remove(key)
        return result
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
    if settings.replicas == 0:
        result.status_written = deps.write_status(resource, _status(resource, [ready(), *notes], replicas=0))
        return result
    if not state.ready or state.url is None:
        result.failed = True
        result.requeue_after = STARTING_RECHECK_SECONDS
        starting = [not_ready("Creating", f"MirrorMaker 2 workers are starting: {state.detail}"), *notes]
        result.status_written = deps.write_status(resource, _status(resource, starting, replicas=state.replicas))
        return result

    desired = from_mirror_maker_2(resource)
    names = [d.name for d in desired]
    previous = {
        s.connector_name: s
        for s in (AutoRestartStatus.from_json(raw) for raw in resource.status.get("autoRestartStatuses") or [])
        if s is not None and s.connector_name
    }
    outcomes: list[ConnectorOutcome] = []
    conditions: list[Condition] = []
    with deps.connect(state.url) as client:
        try:
            for name in sorted(set(client.connectors()) - set(names)):
                log.info("%s: deleting connector %s, which the resource no longer describes", key, name)
                client.delete(name)
        except ConnectRestError as exc:
            conditions.append(not_ready(REASON_REST, str(exc)))
        for connector in desired:
            job = ConnectorJob(
                owner=resource,
                desired=connector,
                requests=anno.mirror_requests(resource.annotations, connector.name, key.namespace, key.name),
                previous_auto_restart=previous.get(connector.name),
            )
            outcome = deps.connectors.reconcile(client, job)
            if outcome.actions:
                log.info("%s: connector %s: %s", key, connector.name, ", ".join(outcome.actions))
            outcomes.append(outcome)
            result.requeue_at(outcome.next_check, deps.clock.now())

    failure = next((o.failure for o in outcomes if o.failure is not None), None)
    if conditions:
        pass  # listing Connect's connectors failed: that NotReady comes first
    elif failure is not None:
        conditions.append(not_ready(failure.reason, failure.message))
    elif any((o.status or {}).get("connector", {}).get("state") == "FAILED" for o in outcomes):
        conditions.append(not_ready(REASON_FAILED_FUTURE, "One or more connectors are in FAILED state"))
    else:
        conditions.append(ready())
    result.failed = conditions[0].type != "Ready"
    warnings = [c for o in outcomes for c in o.conditions] + _dangling(resource, names) + notes
    for connector in desired:
        warnings += ignored_warnings(tuple(f"{connector.name}: {opt}" for opt in connector.ignored_options))
    auto = sorted(
        ({**o.auto_restart.to_json(), "connectorName": o.name} for o in outcomes if o.auto_restart is not None),
        key=lambda s: str(s["connectorName"]),
    )
    statuses = sorted((dict(o.status) for o in outcomes if o.status is not None), key=lambda s: str(s.get("name", "")))
    status = _status(resource, [*conditions, *warnings], state.url, state.replicas, statuses, auto)
    result.status_written = deps.write_status(resource, status)
    return result


def _dangling(resource: Resource, names: list[str]) -> list[Condition]:
    """Annotations that name no connector of this resource do nothing in Strimzi; say so."""
    out = []
    target = resource.annotations.get(anno.MIRRORMAKER_CONNECTOR)
    if target is not None and anno.CONNECTOR_OFFSETS in resource.annotations and target not in names:
        out.append(
            warning(
                "ManageOffsets",
                f"Annotation {anno.MIRRORMAKER_CONNECTOR} names '{target}', which is not a connector of this "
                f"KafkaMirrorMaker2 (its connectors: {', '.join(names)})",
            )
        )
    restart = resource.annotations.get(anno.RESTART_CONNECTOR)
    if restart is not None and not any(name in restart for name in names):
        out.append(
            warning(
                "RestartConnector",
                f"Annotation {anno.RESTART_CONNECTOR} names no connector of this KafkaMirrorMaker2 "
                f"(its connectors: {', '.join(names)})",
            )
        )
    return out


def _status(
    resource: Resource,
    conditions: list[Condition],
    url: str | None = None,
    replicas: int | None = None,
    connectors: list[dict[str, object]] | None = None,
    auto_restarts: list[dict[str, object]] | None = None,
) -> dict[str, object]:
    return prune(
        {
            "conditions": conditions,
            "observedGeneration": resource.generation,
            "url": url,
            "connectors": connectors or None,
            "autoRestartStatuses": auto_restarts or None,
            "replicas": replicas,
            "labelSelector": label_selector(resource),
        }
    )
