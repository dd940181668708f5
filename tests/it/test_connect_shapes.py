"""Kafka Connect 4.4.0's JSON shapes, key for key (checked against connect-runtime 4.3.1's sources:
ConnectorStateInfo, ConfigKeyInfo, AbstractHerder#validateConnectorConfig, Loggers#setLevel; 4.4.0's REST
entities and resources compile to the same code)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from sparklink import __version__
from sparklink.worker.assembly import RunningWorker
from tests.helpers import status, task_states, unique, wait_for

CONFIG_KEY_INFO = {
    "name",
    "type",
    "required",
    "default_value",
    "importance",
    "documentation",
    "group",
    "order_in_group",
    "width",
    "display_name",
    "dependents",
}
CONNECTOR_ENTRY = {"state", "worker_id", "version"}
TASK_ENTRY = {"id", "state", "worker_id", "version"}
SOURCE_GROUPS = ["Common", "Transforms", "Predicates", "Error Handling", "Topic Creation", "Exactly Once Support"]
SOURCE_GROUPS.append("offsets.topic")


@pytest.fixture(scope="module")
def running(module_worker: RunningWorker) -> str:
    name = unique("shapes")
    config = {"connector.class": "datagen", "topic": unique("shapes"), "tasks.max": "2", "records.per.second": "5"}
    assert httpx.post(f"{module_worker.url}/connectors", json={"name": name, "config": config}, timeout=60).is_success
    wait_for(lambda: task_states(module_worker.url, name) == ["RUNNING", "RUNNING"], 90, "two RUNNING tasks")
    return name


def test_status_entries_carry_the_plugin_version(module_worker: RunningWorker, running: str) -> None:
    body = status(module_worker.url, running)
    assert set(body) == {"name", "connector", "tasks", "type"}
    assert set(body["connector"]) == CONNECTOR_ENTRY and body["connector"]["version"] == __version__
    assert [set(t) for t in body["tasks"]] == [TASK_ENTRY, TASK_ENTRY]
    task = httpx.get(f"{module_worker.url}/connectors/{running}/tasks/1/status", timeout=10).json()
    assert set(task) == TASK_ENTRY and task["version"] == __version__
    expanded = httpx.get(f"{module_worker.url}/connectors", params={"expand": "status"}, timeout=10).json()
    assert set(expanded[running]["status"]["connector"]) == CONNECTOR_ENTRY
    assert {frozenset(t) for t in expanded[running]["status"]["tasks"]} == {frozenset(TASK_ENTRY)}
    plan = httpx.post(f"{module_worker.url}/connectors/{running}/restart", params={"includeTasks": "true"}, timeout=60)
    assert plan.status_code == 202
    assert set(plan.json()["connector"]) == CONNECTOR_ENTRY
    assert [set(t) for t in plan.json()["tasks"]] == [TASK_ENTRY, TASK_ENTRY]
    assert [t["state"] for t in plan.json()["tasks"]] == ["RESTARTING", "RESTARTING"]


def test_config_key_infos_say_order_in_group(module_worker: RunningWorker) -> None:
    keys = httpx.get(f"{module_worker.url}/connector-plugins/datagen/config", timeout=10).json()
    assert {frozenset(k) for k in keys} == {frozenset(CONFIG_KEY_INFO)}
    tasks_max = next(k for k in keys if k["name"] == "tasks.max")
    assert (tasks_max["group"], tasks_max["order_in_group"], tasks_max["width"]) == ("Common", 4, "SHORT")


def _validate(worker: RunningWorker, plugin: str, config: dict[str, str]) -> dict[str, Any]:
    url = f"{worker.url}/connector-plugins/{plugin}/config/validate"
    response = httpx.put(url, json=config, timeout=30)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _keys_by_group(body: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for entry in body["configs"]:
        if entry["definition"] is not None:
            out.setdefault(entry["definition"]["group"], []).append(entry["definition"]["name"])
    return out


def test_validate_returns_every_connect_group_with_its_keys(module_worker: RunningWorker) -> None:
    source = _validate(module_worker, "datagen", {"connector.class": "datagen", "name": "v", "topic": "t"})
    assert source["groups"] == SOURCE_GROUPS and source["error_count"] == 0
    groups = _keys_by_group(source)
    assert groups["Common"][:5] == [
        "name",
        "connector.class",
        "connector.plugin.version",
        "tasks.max",
        "tasks.max.enforce",
    ]
    assert {"key.converter", "value.converter", "header.converter", "config.action.reload"} <= set(groups["Common"])
    assert groups["Transforms"] == ["transforms"] and groups["Predicates"] == ["predicates"]
    assert groups["Error Handling"] == [
        "errors.retry.timeout",
        "errors.retry.delay.max.ms",
        "errors.tolerance",
        "errors.log.enable",
        "errors.log.include.messages",
    ]
    assert groups["Topic Creation"] == ["topic.creation.groups"]
    assert groups["Exactly Once Support"] == [
        "exactly.once.support",
        "transaction.boundary",
        "transaction.boundary.interval.ms",
    ]
    assert groups["offsets.topic"] == ["offsets.storage.topic"]

    sink = _validate(module_worker, "FileStreamSink", {"connector.class": "FileStreamSink", "name": "v", "topics": "t"})
    assert sink["groups"][:4] == ["Common", "Transforms", "Predicates", "Error Handling"]
    assert "Topic Creation" not in sink["groups"]
    sink_groups = _keys_by_group(sink)
    assert {"topics", "topics.regex"} <= set(sink_groups["Common"])
    assert sink_groups["Error Handling"][-3:] == [
        "errors.deadletterqueue.topic.name",
        "errors.deadletterqueue.topic.replication.factor",
        "errors.deadletterqueue.context.headers.enable",
    ]


def test_tasks_max_abc_gives_connects_two_errors(module_worker: RunningWorker) -> None:
    body = _validate(
        module_worker, "datagen", {"connector.class": "datagen", "name": "v", "topic": "t", "tasks.max": "abc"}
    )
    errors = next(c["value"]["errors"] for c in body["configs"] if c["value"]["name"] == "tasks.max")
    assert errors == [
        "Invalid value abc for configuration tasks.max: Not a number of type INT",
        "Invalid value null for configuration tasks.max: Value must be non-null",
    ]
    assert body["error_count"] == 2


def test_setting_a_logger_to_its_level_changes_nothing(module_worker: RunningWorker) -> None:
    url = f"{module_worker.url}/admin/loggers/sparklink.shapes"
    assert httpx.put(url, json={"level": "DEBUG"}, timeout=10).json() == ["sparklink.shapes"]
    assert httpx.put(url, json={"level": "DEBUG"}, timeout=10).json() == []
    assert httpx.put(url, json={"level": "INFO"}, timeout=10).json() == ["sparklink.shapes"]
