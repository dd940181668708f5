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

import dataclasses
import logging
from typing import Any

from sparklink.operator.connect_client import ConnectClient, ConnectRestError
from sparklink.operator.model import annotations as anno
from sparklink.operator.model import worker_security
from sparklink.operator.model.autorestart import AutoRestartStatus
from sparklink.operator.model.conditions import (
    REASON_FAILED_FUTURE,
    REASON_REST,
    Condition,
    not_ready,
    ready,
    warning,
)
from sparklink.operator.model.connectors import ConnectorJob, DesiredConnector, from_mirror_maker_2
from sparklink.operator.model.resources import Key, Resource
from sparklink.operator.model.status import KafkaMirrorMaker2Status
from sparklink.operator.reconcile import connect_workers
from sparklink.operator.reconcile.connector import ConnectorOutcome, connector_failed
from sparklink.operator.reconcile.context import Deps, ReconcileResult

log = logging.getLogger("sparklink.operator")


def reconcile(deps: Deps, key: Key) -> ReconcileResult:
    result = ReconcileResult()
    resource = connect_workers.live(deps, key)
    if resource is None:
        return result
    group = connect_workers.ensure(deps, resource, "MirrorMaker 2")
    result.requeue_after = group.retry_after
    if group.rest_url is None or group.refused:  # invalid, refused, starting, or 0 replicas
        result.failed = group.problem is not None
        conditions = [group.problem or ready(), *group.warnings]
        status = KafkaMirrorMaker2Status(
            conditions=conditions, observed_generation=resource.generation, **_kept(resource, group.refused)
        )
        result.status_written = deps.write_status(resource, group.status(status))
        return result

    owner = group.resource
    desired = from_mirror_maker_2(owner, *_cluster_security(group, owner.namespace))
    names = [d.name for d in desired]
    previous = {
        s.connector_name: s
        for s in map(AutoRestartStatus.from_json, owner.status.get("autoRestartStatuses") or [])
        if s is not None and s.connector_name
    }
    with deps.connect(group.rest_url, group.ca_pem) as client:
        listing = _delete_undescribed(client, key, names)
        outcomes = [
            _reconcile_connector(deps, client, owner, connector, previous.get(connector.name)) for connector in desired
        ]
    for outcome in outcomes:
        result.requeue_at(outcome.next_check, deps.clock.now())

    readiness = listing or _readiness(outcomes)
    result.failed = readiness.type != "Ready"
    warnings = [c for o in outcomes for c in o.conditions] + _dangling(resource, names) + list(group.warnings)
    for connector in desired:
        warnings += connect_workers.ignored_warnings(
            tuple(f"{connector.name}: {opt}" for opt in connector.ignored_options)
        )
    # An annotation about the whole resource (a half of the offsets pair) is found wrong by each of its
    # connectors; the status says so once.
    status = KafkaMirrorMaker2Status(
        conditions=[readiness, *dict.fromkeys(warnings)],
        observed_generation=resource.generation,
        connectors=sorted((o.status for o in outcomes if o.status is not None), key=lambda s: str(s.get("name", ""))),
        auto_restart_statuses=sorted(
            (
                dataclasses.replace(o.auto_restart, connector_name=o.name)
                for o in outcomes
                if o.auto_restart is not None
            ),
            key=lambda s: s.connector_name or "",
        ),
    )
    result.status_written = deps.write_status(resource, group.status(status))
    return result


def _cluster_security(
    group: connect_workers.ConnectWorkers, namespace: str
) -> tuple[dict[str, str] | None, dict[int, dict[str, str]]]:
    """The clusters' rendered `tls` / `authentication` for the connectors' config (Strimzi puts them there)."""
    if group.settings is None:
        return None, {}
    target, sources = worker_security.connector_settings(group.settings, group.credentials, namespace)
    return target or None, sources


def _kept(resource: Resource, refused: bool) -> dict[str, Any]:
    """A refused resource changes nothing, so its status keeps saying what its connectors do."""
    if not refused:
        return {}
    previous = (AutoRestartStatus.from_json(s) for s in resource.status.get("autoRestartStatuses") or [])
    return {
        "connectors": list(resource.status.get("connectors") or []),
        "auto_restart_statuses": [s for s in previous if s is not None],
    }


def _delete_undescribed(client: ConnectClient, key: Key, names: list[str]) -> Condition | None:
    """Delete the connectors Connect runs that the resource no longer describes; NotReady when Connect
    could not list them (that condition comes first)."""
    try:
        for name in sorted(set(client.connectors()) - set(names)):
            log.info("%s: deleting connector %s, which the resource no longer describes", key, name)
            client.delete(name)
    except ConnectRestError as exc:
        return not_ready(REASON_REST, str(exc))
    return None


def _reconcile_connector(
    deps: Deps,
    client: ConnectClient,
    owner: Resource,
    connector: DesiredConnector,
    previous_auto_restart: AutoRestartStatus | None,
) -> ConnectorOutcome:
    job = ConnectorJob(
        owner=owner,
        desired=connector,
        requests=anno.mirror_requests(owner.annotations, connector.name, owner.namespace, owner.name),
        previous_auto_restart=previous_auto_restart,
    )
    outcome = deps.connectors.reconcile(client, job)
    if outcome.actions:
        log.info("%s: connector %s: %s", owner.key, connector.name, ", ".join(outcome.actions))
    return outcome


def _readiness(outcomes: list[ConnectorOutcome]) -> Condition:
    """The first connector's failure, else NotReady when a connector FAILED (Strimzi's message), else Ready."""
    failure = next((o.failure for o in outcomes if o.failure is not None), None)
    if failure is not None:
        return not_ready(failure.reason, failure.message)
    if any(connector_failed(o.status) for o in outcomes):
        return not_ready(REASON_FAILED_FUTURE, "One or more connectors are in FAILED state")
    return ready()


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
