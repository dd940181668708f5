"""The stores' Kafka Connect record formats and replay, on the in-memory backend."""

from __future__ import annotations

import json

from sparklink.api.states import State, TargetState
from sparklink.worker.storage.backend import MemoryBackend
from sparklink.worker.storage.config import ConfigStore, RestartRequest
from sparklink.worker.storage.offsets import OffsetStore
from sparklink.worker.storage.status import Status, StatusStore

PAUSED, STARTED, STOPPED = TargetState.PAUSED, TargetState.STARTED, TargetState.STOPPED
FAILED, RUNNING = State.FAILED, State.RUNNING


def records(backend: MemoryBackend) -> list[tuple[str, object]]:
    return [(k.decode(), None if v is None else json.loads(v)) for k, v in backend.records]


def test_config_store_writes_connect_keys_and_replays() -> None:
    backend = MemoryBackend()
    store = ConfigStore(backend)
    store.start()
    store.put_connector_config("c", {"connector.class": "datagen"}, STOPPED)
    store.put_task_configs("c", [{"a": "1"}, {"a": "2"}])
    store.put_restart_request(RestartRequest("c", include_tasks=True, only_failed=False))
    assert records(backend) == [
        ("connector-c", {"properties": {"connector.class": "datagen"}}),
        ("target-state-c", {"state": "PAUSED", "state.v2": "STOPPED"}),
        ("task-c-0", {"properties": {"a": "1"}}),
        ("task-c-1", {"properties": {"a": "2"}}),
        ("commit-c", {"tasks": 2}),
        ("restart-connector-c", {"include-tasks": True, "only-failed": False}),
    ]
    replayed = ConfigStore(backend)
    replayed.start()
    assert replayed.connectors() == ["c"]
    assert replayed.target_state("c") == STOPPED
    assert replayed.task_configs("c") == [{"a": "1"}, {"a": "2"}]


def test_task_configs_become_visible_only_with_their_commit_record() -> None:
    backend = MemoryBackend()
    backend.records += [(b"connector-c", b'{"properties":{}}'), (b"task-c-0", b'{"properties":{"x":"y"}}')]
    store = ConfigStore(backend)
    store.start()
    assert store.task_configs("c") == []


def test_target_states_and_connector_removal() -> None:
    store = ConfigStore(MemoryBackend())
    store.start()
    store.put_connector_config("c", {"k": "v"})
    assert store.target_state("c") == STARTED
    store.put_target_state("c", PAUSED)
    assert store.target_state("c") == PAUSED
    store.remove_connector("c")
    assert store.connectors() == [] and store.connector_config("c") is None


def test_restart_requests_coalesce_to_the_widest() -> None:
    store = ConfigStore(MemoryBackend())
    store.start()
    store.put_restart_request(RestartRequest("c", include_tasks=True, only_failed=False))
    store.put_restart_request(RestartRequest("c", include_tasks=False, only_failed=True))
    assert store.pending_restart("c") == RestartRequest("c", include_tasks=True, only_failed=False)


def test_status_store_formats_and_topic_records() -> None:
    backend = MemoryBackend()
    store = StatusStore(backend)
    store.start()
    store.put_connector("c", Status(RUNNING, "h:8083", None, 3, "1.2.3"))
    store.put_task("c", 0, Status(FAILED, "h:8083", "boom", 3))
    store.put_topic("c", "orders", 0)
    keys = [k for k, _ in records(backend)]
    assert keys == ["status-connector-c", "status-task-c-0", "status-topic-orders:connector-c"]
    # Connect 4.x (KafkaStatusBackingStore STATUS_SCHEMA_V0) records the plugin version too; null if unknown.
    assert records(backend)[0][1] == {
        "state": "RUNNING",
        "trace": None,
        "worker_id": "h:8083",
        "generation": 3,
        "version": "1.2.3",
    }
    assert records(backend)[1][1]["version"] is None  # type: ignore[index]
    topic_value = records(backend)[2][1]
    assert isinstance(topic_value, dict)
    assert {k: v for k, v in topic_value["topic"].items() if k != "discoverTimestamp"} == {
        "name": "orders",
        "connector": "c",
        "task": 0,
    }
    replayed = StatusStore(backend)
    replayed.start()
    assert replayed.task("c", 0) == Status(FAILED, "h:8083", "boom", 3)
    assert replayed.connector("c") == Status(RUNNING, "h:8083", None, 3, "1.2.3")
    assert replayed.topics("c") == ["orders"]
    replayed.remove_connector("c")
    replayed.remove_topics("c")
    assert replayed.connector("c") is None and replayed.tasks("c") == {} and replayed.topics("c") == []


def test_offset_store_keys_and_tombstones() -> None:
    backend = MemoryBackend()
    store = OffsetStore(backend)
    store.start()
    store.put("c", [({"task": 0}, {"position": 5}), ({"task": 1}, {"position": 7})])
    assert backend.records[0] == (b'["c",{"task":0}]', b'{"position":5}')
    store.put("c", [({"task": 1}, None)])
    assert store.get("c") == [({"task": 0}, {"position": 5})]
    backend.records.append((b"not json", b"{}"))
    replayed = OffsetStore(backend)
    replayed.start()
    assert replayed.get("c") == [({"task": 0}, {"position": 5})]
    replayed.reset("c")
    assert replayed.get("c") == []
