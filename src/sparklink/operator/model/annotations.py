"""Strimzi's connector annotations -> typed requests, with Strimzi's validation rules.

KafkaConnector:
  strimzi.io/restart            "true" | "includeTasks" | "onlyFailed" | "includeTasks,onlyFailed" (any order,
                                trimmed, case-insensitive); a value containing "false", or a blank one, asks
                                for nothing; mixing "true" with arguments or any other word is invalid
  strimzi.io/restart-task       "<task id>"
  strimzi.io/connector-offsets  "list" | "alter" | "reset"
KafkaMirrorMaker2 (one annotation names one connector):
  strimzi.io/restart-connector       "<connector>[:includeTasks,onlyFailed]"
  strimzi.io/restart-connector-task  "<connector>:<task id>"
  strimzi.io/connector-offsets + strimzi.io/mirrormaker-connector "<connector>" (both, or neither)

An invalid value becomes `Invalid` (a Warning condition; the annotation stays so the user sees and fixes
it). Deliberate departures from Strimzi, where its behaviour hurt users (reference §5):
- a non-numeric or negative restart-task value is a Warning (Strimzi fails the reconcile, or ignores it);
- an empty or unknown connector-offsets value is a Warning and the connector is still reconciled (Strimzi
  makes the resource NotReady and never creates the connector);
- restart arguments are read case-insensitively everywhere (Strimzi validates `INCLUDETASKS` as valid and
  then restarts without tasks).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

RESTART = "strimzi.io/restart"
RESTART_TASK = "strimzi.io/restart-task"
RESTART_CONNECTOR = "strimzi.io/restart-connector"
RESTART_CONNECTOR_TASK = "strimzi.io/restart-connector-task"
CONNECTOR_OFFSETS = "strimzi.io/connector-offsets"
MIRRORMAKER_CONNECTOR = "strimzi.io/mirrormaker-connector"
USE_CONNECTOR_RESOURCES = "strimzi.io/use-connector-resources"
CLUSTER_LABEL = "strimzi.io/cluster"

INCLUDE_TASKS = "includeTasks"
ONLY_FAILED = "onlyFailed"
_ARGS = {INCLUDE_TASKS.lower(): INCLUDE_TASKS, ONLY_FAILED.lower(): ONLY_FAILED}
_TASK_PATTERN = re.compile(r"^(?P<connector>.+):(?P<task>\d+)$")

OffsetsOp = Literal["list", "alter", "reset"]
OFFSETS_OPS: tuple[OffsetsOp, ...] = ("list", "alter", "reset")


@dataclass(frozen=True)
class Restart:
    include_tasks: bool
    only_failed: bool


@dataclass(frozen=True)
class TaskRestart:
    task: int


@dataclass(frozen=True)
class Offsets:
    op: OffsetsOp


@dataclass(frozen=True)
class Invalid:
    """A request that cannot be carried out: it becomes a Warning condition and the annotation stays."""

    reason: str
    message: str


@dataclass(frozen=True)
class ConnectorRequests:
    """What the annotations ask of one connector, with the annotation values they were read from (the
    operator removes an annotation only if it still holds the value it acted on)."""

    restart: Restart | Invalid | None = None
    task_restart: TaskRestart | Invalid | None = None
    offsets: Offsets | Invalid | None = None
    restart_annotation: tuple[str, str] | None = None
    task_annotation: tuple[str, str] | None = None
    offsets_annotations: tuple[tuple[str, str], ...] = ()


def java_split(text: str, sep: str) -> list[str]:
    """`String.split` as Java does it: trailing empty strings are dropped ("a:".split(":") == ["a"])."""
    if text == "":
        return [""]
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


# -- KafkaConnector ----------------------------------------------------------------------------------


def connector_restart(value: str | None) -> Restart | Invalid | None:
    if value is None or not value.strip() or "false" in value:
        return None
    words = [w.strip() for w in java_split(value, ",")]
    has_true = any(w.lower() == "true" for w in words)
    args = {_ARGS[w.lower()] for w in words if w.lower() in _ARGS}
    unknown = [w for w in words if w.lower() != "true" and w.lower() not in _ARGS]
    if unknown or (has_true and args) or not (has_true or args):
        return Invalid("RestartConnector", "Invalid annotation format")
    return Restart(include_tasks=INCLUDE_TASKS in args, only_failed=ONLY_FAILED in args)


def connector_task_restart(value: str | None) -> TaskRestart | Invalid | None:
    if value is None:
        return None
    text = value.strip()
    if not text.lstrip("-").isdigit() or int(text) < 0:
        return Invalid(
            "RestartConnectorTask",
            f"Invalid annotation format: {RESTART_TASK} must be a task number (0, 1, ...), not '{value}'",
        )
    return TaskRestart(int(text))


def connector_offsets(value: str | None) -> Offsets | Invalid | None:
    if value is None:
        return None
    if value in OFFSETS_OPS:
        return Offsets(value)
    return Invalid(
        "ManageOffsets",
        f"Invalid value '{value}' of annotation {CONNECTOR_OFFSETS}: use list, alter or reset. "
        "The connector is reconciled as usual; fix or remove the annotation.",
    )


def kafka_connector_requests(annotations: Mapping[str, str]) -> ConnectorRequests:
    restart = annotations.get(RESTART)
    task = annotations.get(RESTART_TASK)
    offsets = annotations.get(CONNECTOR_OFFSETS)
    return ConnectorRequests(
        restart=connector_restart(restart),
        task_restart=connector_task_restart(task),
        offsets=connector_offsets(offsets),
        restart_annotation=(RESTART, restart) if restart is not None else None,
        task_annotation=(RESTART_TASK, task) if task is not None else None,
        offsets_annotations=((CONNECTOR_OFFSETS, offsets),) if offsets is not None else (),
    )


# -- KafkaMirrorMaker2 -------------------------------------------------------------------------------


def mirror_restart(value: str | None, connector: str) -> Restart | Invalid | None:
    if value is None or connector not in value:
        return None
    parts = java_split(value, ":")
    invalid = Invalid("RestartConnector", "Invalid annotation format")
    if len(parts) not in (1, 2) or parts[0].lower() != connector.lower():
        return invalid
    args: set[str] = set()
    if len(parts) == 2:
        for word in java_split(parts[1], ","):
            arg = _ARGS.get(word.strip().lower())
            if arg is None:
                return invalid
            args.add(arg)
    return Restart(include_tasks=INCLUDE_TASKS in args, only_failed=ONLY_FAILED in args)


def mirror_task_restart(value: str | None, connector: str) -> TaskRestart | Invalid | None:
    if value is None:
        return None
    text = value.strip()
    match = _TASK_PATTERN.match(text)
    if match is not None:
        return TaskRestart(int(match["task"])) if match["connector"] == connector else None
    # Strimzi ignores a malformed value silently; say so when it clearly targets this connector.
    if text.rpartition(":")[0] == connector or text == connector:
        return Invalid(
            "RestartConnectorTask",
            f"Invalid annotation format: {RESTART_CONNECTOR_TASK} must be '<connector>:<task number>', not '{value}'",
        )
    return None


def mirror_offsets(
    annotations: Mapping[str, str], connector: str, namespace: str, name: str
) -> Offsets | Invalid | None:
    offsets = annotations.get(CONNECTOR_OFFSETS)
    target = annotations.get(MIRRORMAKER_CONNECTOR)
    if offsets is not None and target is None:
        return Invalid(
            "ManageOffsets",
            "Encountered error getting connector offsets annotation. "
            f"KafkaMirrorMaker2 resource {namespace}/{name} is missing annotation {MIRRORMAKER_CONNECTOR}",
        )
    if offsets is None and target is not None:
        return Invalid(
            "ManageOffsets",
            "Encountered error getting connector offsets annotation. "
            f"KafkaMirrorMaker2 resource {namespace}/{name} is missing annotation {CONNECTOR_OFFSETS}",
        )
    if target != connector:
        return None
    return connector_offsets(offsets)


def mirror_requests(annotations: Mapping[str, str], connector: str, namespace: str, name: str) -> ConnectorRequests:
    restart = annotations.get(RESTART_CONNECTOR)
    task = annotations.get(RESTART_CONNECTOR_TASK)
    offsets = mirror_offsets(annotations, connector, namespace, name)
    pair = tuple((k, annotations[k]) for k in (CONNECTOR_OFFSETS, MIRRORMAKER_CONNECTOR) if k in annotations)
    return ConnectorRequests(
        restart=mirror_restart(restart, connector),
        task_restart=mirror_task_restart(task, connector),
        offsets=offsets,
        restart_annotation=(RESTART_CONNECTOR, restart) if restart is not None else None,
        task_annotation=(RESTART_CONNECTOR_TASK, task) if task is not None else None,
        offsets_annotations=pair if isinstance(offsets, Offsets) else (),
    )


def offsets_config_map_key(kind: str, connector: str) -> str:
    """KafkaConnector: `offsets.json`; MirrorMaker 2: `<source>--<target>.<Connector>.json`, so one
    ConfigMap can hold the offsets of several connectors."""
    return "offsets.json" if kind == "KafkaConnector" else connector.replace("->", "--") + ".json"
