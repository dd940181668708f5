"""Connector and task states and active topics, in Connect's status-topic format.

Keys (KafkaStatusBackingStore): `status-connector-<c>`, `status-task-<c>-<n>` with values
{"state":S,"trace":s|null,"worker_id":"host:port","generation":N}, and
`status-topic-<t>:connector-<c>` with {"topic":{"name","connector","task","discoverTimestamp"}}.

Several workers of a group write here; Connect's KafkaStatusBackingStore rules keep a late write of an
old owner from hiding the new owner's: a `safe` write (UNASSIGNED, FAILED) is dropped when the status
was last written by another worker in a newer generation, and an UNASSIGNED read from the log never
replaces a RUNNING of the same or a newer generation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sparklink.api.states import State
from sparklink.worker.storage.backend import Backend, TextKeyStore, encode

TOPIC_PREFIX = "status-topic-"
TOPIC_SEPARATOR = ":connector-"


@dataclass(frozen=True)
class Status:
    state: State
    worker_id: str
    trace: str | None = None
    generation: int = 0
    version: str | None = None
    """The plugin version that wrote it (Connect 4.x records it; older records have none)."""


class StatusStore(TextKeyStore):
    def __init__(self, backend: Backend) -> None:
        super().__init__(backend)
        self._connectors: dict[str, Status] = {}
        self._tasks: dict[str, dict[int, Status]] = {}
        self._topics: dict[str, dict[str, int]] = {}

    # ------------------------------------------------------------------ reads
    def connector(self, name: str) -> Status | None:
        with self._lock:
            return self._connectors.get(name)

    def connector_names(self) -> list[str]:
        """Every connector with a connector or task status."""
        with self._lock:
            return sorted(set(self._connectors) | {n for n, tasks in self._tasks.items() if tasks})

    def task(self, name: str, task_id: int) -> Status | None:
        with self._lock:
            return self._tasks.get(name, {}).get(task_id)

    def tasks(self, name: str) -> dict[int, Status]:
        with self._lock:
            return dict(self._tasks.get(name, {}))

    def topics(self, name: str) -> list[str]:
        with self._lock:
            return sorted(self._topics.get(name, {}))

    def has_topic(self, name: str, topic: str) -> bool:
        with self._lock:
            return topic in self._topics.get(name, {})

    # ------------------------------------------------------------------ writes
    def put_connector(self, name: str, status: Status, safe: bool = False) -> None:
        if safe and not _can_write_safely(self.connector(name), status):
            return
        self._write([(f"status-connector-{name}".encode(), _encode_status(status))])

    def put_task(self, name: str, task_id: int, status: Status, safe: bool = False) -> None:
        if safe and not _can_write_safely(self.task(name, task_id), status):
            return
        self._write([(f"status-task-{name}-{task_id}".encode(), _encode_status(status))])

    def remove_task(self, name: str, task_id: int) -> None:
        self._write([(f"status-task-{name}-{task_id}".encode(), None)])

    def remove_connector(self, name: str) -> None:
        """Tombstone the connector's status and every task status it has."""
        with self._lock:
            task_ids = list(self._tasks.get(name, {}))
        records: list[tuple[bytes, bytes | None]] = [(f"status-connector-{name}".encode(), None)]
        records += [(f"status-task-{name}-{t}".encode(), None) for t in task_ids]
        self._write(records)

    def put_topic(self, name: str, topic: str, task_id: int) -> None:
        value = {
            "topic": {
                "name": topic,
                "connector": name,
                "task": task_id,
                "discoverTimestamp": int(time.time() * 1000),
            }
        }
        self._write([(_topic_key(name, topic), encode(value))])

    def remove_topics(self, name: str) -> None:
        with self._lock:
            topics = list(self._topics.get(name, {}))
        if topics:
            self._write([(_topic_key(name, t), None) for t in topics])

    # ------------------------------------------------------------------ replay
    def _apply_record(self, key: str, value: Any) -> None:
        if key.startswith(TOPIC_PREFIX):
            topic, _, name = key.removeprefix(TOPIC_PREFIX).rpartition(TOPIC_SEPARATOR)
            if value is None:
                self._topics.get(name, {}).pop(topic, None)
            else:
                self._topics.setdefault(name, {})[topic] = int(value["topic"].get("task", 0))
        elif key.startswith("status-connector-"):
            name = key.removeprefix("status-connector-")
            if value is None:
                self._connectors.pop(name, None)
            else:
                self._connectors[name] = _decode_status(value)
        elif key.startswith("status-task-"):
            name, _, index = key.removeprefix("status-task-").rpartition("-")
            if value is None:
                self._tasks.get(name, {}).pop(int(index), None)
                return
            status = _decode_status(value)
            current = self._tasks.get(name, {}).get(int(index))
            if _stale_unassigned(current, status):
                return
            self._tasks.setdefault(name, {})[int(index)] = status


def _can_write_safely(current: Status | None, status: Status) -> bool:
    """No status yet, our own, or ours is of a generation at least as new (Connect's putSafe)."""
    return current is None or current.worker_id == status.worker_id or current.generation <= status.generation


def _stale_unassigned(current: Status | None, status: Status) -> bool:
    """An old owner's UNASSIGNED that reached the log after the new owner's RUNNING."""
    return (
        status.state is State.UNASSIGNED
        and current is not None
        and current.state is State.RUNNING
        and current.generation >= status.generation
    )


def _topic_key(name: str, topic: str) -> bytes:
    return f"{TOPIC_PREFIX}{topic}{TOPIC_SEPARATOR}{name}".encode()


def _encode_status(status: Status) -> bytes:
    return encode(
        {
            "state": str(status.state),
            "trace": status.trace,
            "worker_id": status.worker_id,
            "generation": status.generation,
            "version": status.version,
        }
    )


def _decode_status(value: dict[str, object]) -> Status:
    trace = value.get("trace")
    generation = value.get("generation")
    version = value.get("version")
    return Status(
        state=State.parse(str(value["state"])),
        worker_id=str(value.get("worker_id", "")),
        trace=str(trace) if trace else None,
        generation=int(generation) if isinstance(generation, int) else 0,
        version=str(version) if version is not None else None,
    )
