"""Connector offsets through ConfigMaps (Strimzi proposals 076 and 083): the `strimzi.io/connector-offsets`
annotation asks to list, alter or reset them.

- list: GET the offsets and write them, pretty-printed, to `spec.listOffsets.toConfigMap` under the key
  `offsets.json` (MirrorMaker 2: `<source>--<target>.<Connector>.json`); the ConfigMap's other keys and
  owners are kept and the resource is added as an owner.
- alter: the connector must be STOPPED; PATCH it with the JSON under that key of
  `spec.alterOffsets.fromConfigMap`. Resuming is left to the user (`state: running`).
- reset: the connector must be STOPPED; DELETE its offsets.
On success the annotation (MirrorMaker 2: both annotations) is removed. Every failure is a Warning with
Strimzi's reason and message, and the annotation stays so the operation is retried on each reconcile.
Called from `connector.ConnectorReconciler` between the state change and the restart annotations.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from sparklink.operator.connect_client import ConnectClient
from sparklink.operator.model import annotations as anno
from sparklink.operator.model.conditions import Condition, warning
from sparklink.operator.model.connectors import ConnectorJob
from sparklink.operator.model.resources import Resource
from sparklink.operator.reconcile.ports import Store

log = logging.getLogger("sparklink.operator")


@dataclass(frozen=True)
class _Op:
    reason: str  # of the Warning condition when it fails (Strimzi's)
    doing: str  # in its error message
    needs: str | None  # the spec property naming its ConfigMap
    done: str  # the action, for the reconcile log


_OPS: dict[anno.OffsetsOp, _Op] = {
    "list": _Op("ListOffsets", "listing", "listOffsets", "listed offsets"),
    "alter": _Op("AlterOffsets", "altering", "alterOffsets", "altered offsets"),
    "reset": _Op("ResetOffsets", "resetting", None, "reset offsets"),
}


class OffsetsError(Exception):
    pass


def manage(client: ConnectClient, store: Store, job: ConnectorJob) -> tuple[list[Condition], list[str]]:
    """Carry out the offsets request of `job`, if any: the Warning conditions and the actions taken (for the log)."""
    request = job.requests.offsets
    if request is None:
        return [], []
    if isinstance(request, anno.Invalid):
        return [warning(request.reason, request.message)], []
    owner, name = job.owner, job.desired.name
    key = anno.offsets_config_map_key(owner.kind, name)
    prefix = f"{owner.namespace}/{owner.kind}/{owner.name}:"
    op = _OPS[request.op]
    config_map = {"list": job.desired.list_offsets_to, "alter": job.desired.alter_offsets_from}.get(request.op)
    if op.needs is not None and config_map is None:
        message = f"Failed to {request.op} the connector offsets due to missing property {op.needs} in {owner.kind} CR."
        return [warning(op.reason, message)], []
    try:
        done = _carry_out(request.op, client, store, job, config_map or "", key)
    except Exception as exc:
        message = f"Encountered error {op.doing} connector offsets. {exc}"
        log.warning("%s %s", prefix, message)
        return [warning(op.reason, message)], []
    log.info("%s offsets of connector %s %s", prefix, name, done)
    store.remove_annotations(owner, list(job.requests.offsets_annotations))
    return [], [op.done]


def _carry_out(
    op: anno.OffsetsOp, client: ConnectClient, store: Store, job: ConnectorJob, config_map: str, key: str
) -> str:
    """Carry out `op` on the connector (`config_map`: where list writes or alter reads); what was done, for the log."""
    owner, name = job.owner, job.desired.name
    if op == "list":
        offsets = client.offsets(name)
        store.write_config_map_entry(owner, config_map, key, json.dumps(offsets, indent=2), _labels(owner))
        return f"written to ConfigMap {config_map} (key {key})"
    _require_stopped(client, name)
    if op == "alter":
        client.alter_offsets(name, _offsets_for_alter(store, owner.namespace, config_map, key))
        return f"were altered from ConfigMap {config_map}"
    client.reset_offsets(name)
    return "were reset"


def _require_stopped(client: ConnectClient, name: str) -> None:
    state = (client.status(name).get("connector") or {}).get("state")
    if not isinstance(state, str):
        raise OffsetsError("JSON response lacked $.connector.state")
    if state != "STOPPED":
        raise OffsetsError("Connector is not in STOPPED state")


def _offsets_for_alter(store: Store, namespace: str, config_map: str, key: str) -> str:
    data = store.config_map_data(namespace, config_map)
    if data is None:
        raise OffsetsError(
            "Encountered error fetching offsets to use in alter operation. "
            f"ConfigMap {namespace}/{config_map} does not exist."
        )
    if data.get(key) is None:
        raise OffsetsError(
            f"Encountered error fetching offsets to use in alter operation. Data field {key} is missing."
        )
    try:
        json.loads(data[key])
    except ValueError as exc:
        raise OffsetsError(f"Failed to parse contents of {key} as JSON: {exc}") from exc
    return data[key]


def _labels(owner: Resource) -> dict[str, str]:
    """Strimzi's default labels for what it creates for a connector resource."""
    return {
        "strimzi.io/kind": owner.kind,
        "strimzi.io/name": owner.name,
        "strimzi.io/cluster": owner.name,
        "strimzi.io/component-type": "kafka-connector",
        "app.kubernetes.io/name": "kafka-connector",
        "app.kubernetes.io/instance": owner.name,
        "app.kubernetes.io/part-of": f"strimzi-{owner.name}"[:63],
        "app.kubernetes.io/managed-by": "sparklink-operator",
    }
