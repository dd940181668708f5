"""Connector configs, task configs, target states and restart requests, in Connect's config-topic format.

Keys and values (KafkaConfigBackingStore): `connector-<c>` {"properties":{..}}, `task-<c>-<n>`
{"properties":{..}} made visible by `commit-<c>` {"tasks":N}, `target-state-<c>`
{"state":"PAUSED","state.v2":"STOPPED"}, `restart-connector-<c>` {"include-tasks":b,"only-failed":b},
and the group's KIP-507 session key `session-key` {"key":"<Base64>","algorithm":"HmacSHA256",
"creation-timestamp":<ms>} (SESSION_KEY_V0, written by the leader; a record Connect could not read is
ignored as Connect ignores it). A tombstone on `connector-<c>` deletes the connector.

In a worker group every worker's store tails the topic; a `ConfigListener` hears of each change as it
is applied (Connect's ConfigBackingStore.UpdateListener) and must only take note: it is called with
the store's lock held.
"""

from __future__ import annotations

import base64
import binascii
import logging
from dataclasses import dataclass
from typing import Any, Protocol

from sparklink.api.states import TargetState
from sparklink.worker.request_signing import SessionKey
from sparklink.worker.storage.backend import Backend, TextKeyStore, encode

log = logging.getLogger(__name__)

SESSION_KEY = "session-key"


@dataclass(frozen=True)
class RestartRequest:
    connector: str
    include_tasks: bool
    only_failed: bool

    def impact(self) -> int:
        """Higher means more is restarted; a pending request is replaced only by a wider one."""
        return (2 if self.include_tasks else 0) + (0 if self.only_failed else 1)


class ConfigListener(Protocol):
    def connector_changed(self, name: str, existed: bool, removed: bool) -> None: ...
    def tasks_committed(self, name: str) -> None: ...
    def target_state_changed(self, name: str) -> None: ...
    def restart_requested(self, request: RestartRequest) -> None: ...
    def session_key_updated(self, key: SessionKey) -> None: ...


class ConfigStore(TextKeyStore):
    def __init__(self, backend: Backend) -> None:
        super().__init__(backend)
        self.listener: ConfigListener | None = None
        self._configs: dict[str, dict[str, str]] = {}
        self._tasks: dict[str, list[dict[str, str]]] = {}
        self._pending_tasks: dict[str, dict[int, dict[str, str]]] = {}
        self._targets: dict[str, TargetState] = {}
        self._restarts: dict[str, RestartRequest] = {}
        self._session_key: SessionKey | None = None

    # ------------------------------------------------------------------ reads
    def connectors(self) -> list[str]:
        with self._lock:
            return sorted(self._configs)

    def connector_config(self, name: str) -> dict[str, str] | None:
        with self._lock:
            cfg = self._configs.get(name)
            return dict(cfg) if cfg is not None else None

    def task_configs(self, name: str) -> list[dict[str, str]]:
        with self._lock:
            return [dict(t) for t in self._tasks.get(name, [])]

    def target_state(self, name: str) -> TargetState:
        with self._lock:
            return self._targets.get(name, TargetState.STARTED)

    def pending_restart(self, name: str) -> RestartRequest | None:
        with self._lock:
            return self._restarts.get(name)

    def session_key(self) -> SessionKey | None:
        """The newest session key read from the topic (KIP-507)."""
        with self._lock:
            return self._session_key

    # ------------------------------------------------------------------ writes
    def put_connector_config(self, name: str, config: dict[str, str], target_state: TargetState | None = None) -> None:
        records = [(f"connector-{name}".encode(), encode({"properties": config}))]
        if target_state is not None:
            records.append(_target_record(name, target_state))
        self._write(records)

    def remove_connector(self, name: str) -> None:
        self._write([(f"connector-{name}".encode(), None), (f"target-state-{name}".encode(), None)])

    def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        records = [(f"task-{name}-{i}".encode(), encode({"properties": c})) for i, c in enumerate(configs)]
        records.append((f"commit-{name}".encode(), encode({"tasks": len(configs)})))
        self._write(records)

    def put_target_state(self, name: str, state: TargetState) -> None:
        self._write([_target_record(name, state)])

    def put_restart_request(self, request: RestartRequest) -> None:
        value = {"include-tasks": request.include_tasks, "only-failed": request.only_failed}
        self._write([(f"restart-connector-{request.connector}".encode(), encode(value))])

    def put_session_key(self, key: SessionKey) -> None:
        """KafkaConfigBackingStore.putSessionKey: the record an Apache Connect worker reads too."""
        value = {
            "key": base64.b64encode(key.key).decode("ascii"),
            "algorithm": key.algorithm,
            "creation-timestamp": key.created_ms,
        }
        self._write([(SESSION_KEY.encode(), encode(value))])

    def clear_restart_request(self, name: str) -> None:
        with self._lock:
            self._restarts.pop(name, None)

    # ------------------------------------------------------------------ replay
    def _apply_record(self, key: str, value: Any) -> None:
        if key.startswith("connector-"):
            name = key.removeprefix("connector-")
            existed = name in self._configs
            if self.listener is not None:
                self.listener.connector_changed(name, existed, value is None)
            if value is None:
                self._configs.pop(name, None)
                self._tasks.pop(name, None)
                self._targets.pop(name, None)
                self._restarts.pop(name, None)
            else:
                self._configs[name] = dict(value["properties"])
        elif key.startswith("target-state-"):
            name = key.removeprefix("target-state-")
            if value is None:
                self._targets.pop(name, None)
            else:
                self._targets[name] = TargetState(value.get("state.v2", value.get("state", TargetState.STARTED)))
            if self.listener is not None:
                self.listener.target_state_changed(name)
        elif key.startswith("task-"):
            name, _, index = key.removeprefix("task-").rpartition("-")
            if value is not None:
                self._pending_tasks.setdefault(name, {})[int(index)] = dict(value["properties"])
        elif key.startswith("commit-"):
            name = key.removeprefix("commit-")
            count = int(value["tasks"]) if value else 0
            pending = self._pending_tasks.pop(name, {})
            self._tasks[name] = [pending[i] for i in range(count) if i in pending]
            if self.listener is not None:
                self.listener.tasks_committed(name)
        elif key == SESSION_KEY:
            session_key = _session_key(value)
            if session_key is not None:
                self._session_key = session_key
                if self.listener is not None:
                    self.listener.session_key_updated(session_key)
        elif key.startswith("restart-connector-") and value is not None:
            name = key.removeprefix("restart-connector-")
            request = RestartRequest(name, bool(value["include-tasks"]), bool(value["only-failed"]))
            current = self._restarts.get(name)
            if current is None or request.impact() >= current.impact():
                self._restarts[name] = request
            if self.listener is not None:
                self.listener.restart_requested(request)


def _target_record(name: str, state: TargetState) -> tuple[bytes, bytes]:
    # Old workers only read "state", which has no STOPPED; they fall back to PAUSED like Connect's do.
    legacy = TargetState.PAUSED if state is TargetState.STOPPED else state
    return f"target-state-{name}".encode(), encode({"state": str(legacy), "state.v2": str(state)})


def _session_key(value: Any) -> SessionKey | None:
    """processSessionKeyRecord: each field of its type, or the record is ignored with an error logged."""
    if not isinstance(value, dict):
        log.error("Ignoring session key because the value is not a JSON object but %s", type(value).__name__)
        return None
    encoded, algorithm, created = value.get("key"), value.get("algorithm"), value.get("creation-timestamp")
    if not isinstance(encoded, str) or not isinstance(algorithm, str):
        log.error("Ignoring session key: its 'key' and 'algorithm' fields must be strings")
        return None
    if not isinstance(created, int) or isinstance(created, bool):
        log.error("Ignoring session key: its 'creation-timestamp' field must be a long")
        return None
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        log.error("Ignoring session key: its 'key' field is not Base64")
        return None
    return SessionKey(key, algorithm, created)
