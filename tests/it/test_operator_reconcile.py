"""The operator's reconcilers against a real sparklink worker (in-process, shared by the module), with an
in-memory twin of the Kubernetes store: Strimzi's connector pipeline as Connect really answers it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest

from sparklink.operator.clock import SystemClock
from sparklink.operator.hosting import HostState
from sparklink.operator.metrics import OperatorMetrics
from sparklink.operator.model import annotations as anno
from sparklink.operator.model.autorestart import BackOff
from sparklink.operator.model.resources import Key, Resource
from sparklink.operator.model.workers import WorkerSettings
from sparklink.operator.reconcile import kafka_connector
from sparklink.operator.reconcile.context import Deps
from sparklink.worker.assembly import RunningWorker
from tests.helpers import status, unique, wait_for
from tests.plugins import CountingConnector, CountingTask
from tests.unit.operator.memory_store import MemoryStore

pytestmark = [pytest.mark.kafka, pytest.mark.spark]
NS = "it"


@dataclass
class FixedWorkerHost:
    url: str

    def ensure(self, owner: Resource, settings: WorkerSettings) -> HostState:
        return HostState(self.url, True, 1)

    def state(self, key: Key) -> HostState | None:
        return HostState(self.url, True, 1)

    def remove(self, key: Key) -> None: ...

    def close(self) -> None: ...


@pytest.fixture(scope="module")
def env(module_worker: RunningWorker) -> Iterator[tuple[Deps, MemoryStore, str]]:
    store = MemoryStore()
    store.put(
        {
            "kind": "KafkaConnect",
            "metadata": {"namespace": NS, "name": "connect", "annotations": {anno.USE_CONNECTOR_RESOURCES: "true"}},
            "spec": {"replicas": 1},
        }
    )
    deps = Deps(
        store, FixedWorkerHost(module_worker.url), SystemClock(), BackOff(timedelta(seconds=1)), OperatorMetrics()
    )
    yield deps, store, module_worker.url


def connector(store: MemoryStore, name: str, **spec: Any) -> Key:
    config = {"topic": f"{name}-out", "records.per.second": 2, "key.shape": "seq", **spec.pop("config", {})}
    body = {
        "kind": "KafkaConnector",
        "metadata": {"namespace": NS, "name": name, "labels": {anno.CLUSTER_LABEL: "connect"}},
        "spec": {"class": "tests.plugins.CountingConnector", "tasksMax": 1, "config": config, **spec},
    }
    return store.put(body).key


def settle(deps: Deps, key: Key, until: Any, what: str, timeout: float = 90) -> Resource:
    """Reconcile as the operator's queue would until `until(resource)` holds."""

    def step() -> Resource | None:
        kafka_connector.reconcile(deps, key)
        resource = deps.store.get(key)
        assert resource is not None
        return resource if until(resource) else None

    return wait_for(step, timeout, what, interval=0.3)


def condition(resource: Resource, type_: str) -> dict[str, Any] | None:
    return next((c for c in resource.status.get("conditions", []) if c["type"] == type_), None)


def connector_state(resource: Resource) -> str | None:
    return resource.status.get("connectorStatus", {}).get("connector", {}).get("state")


def test_new_connector_starts_in_its_requested_state_then_follows_spec_state(
    env: tuple[Deps, MemoryStore, str],
) -> None:
    deps, store, url = env
    name = unique("states")
    key = connector(store, name, state="stopped")
    r = settle(deps, key, lambda r: connector_state(r) == "STOPPED", "the connector created STOPPED")
    assert condition(r, "Ready") is not None
    assert CountingConnector.starts[name] == 0, "a connector created stopped never starts (initial_state)"
    assert r.status["observedGeneration"] == 1 and r.status["tasksMax"] == 1

    for target, connect_state in (("running", "RUNNING"), ("paused", "PAUSED"), ("stopped", "STOPPED")):
        store.put({**_body(store, key), "spec": {**store.resources[key].spec, "state": target}})
        settle(deps, key, lambda r, s=connect_state: connector_state(r) == s, f"the connector {connect_state}")
        assert status(url, name)["connector"]["state"] == connect_state
    store.resources.pop(key)


def test_failed_connector_can_be_stopped_but_not_paused(env: tuple[Deps, MemoryStore, str]) -> None:
    deps, store, url = env
    name = unique("failed")
    key = connector(store, name, config={"test.fail.starts": 1})
    settle(deps, key, lambda r: connector_state(r) == "FAILED", "the connector FAILED")
    r = store.resources[key]
    assert condition(r, "NotReady") == {
        "type": "NotReady",
        "status": "True",
        "reason": "Throwable",
        "message": "Connector has failed, see connectorStatus for more details.",
        "lastTransitionTime": condition(r, "NotReady")["lastTransitionTime"],  # type: ignore[index]
    }

    store.put({**_body(store, key), "spec": {**r.spec, "state": "paused"}})
    r = settle(deps, key, lambda r: "connectorStatus" not in r.status, "the refused pause")
    refused = condition(r, "NotReady")
    assert (
        refused is not None and refused["message"] == f"Connector {name} cannot be paused since it is in failed state."
    )
    assert status(url, name)["connector"]["state"] == "FAILED", "nothing was paused"

    store.put({**_body(store, key), "spec": {**r.spec, "state": "stopped"}})
    settle(deps, key, lambda r: connector_state(r) == "STOPPED", "the FAILED connector stopped")
    store.resources.pop(key)


def test_restart_annotations_restart_what_they_say_and_invalid_ones_warn(env: tuple[Deps, MemoryStore, str]) -> None:
    deps, store, _url = env
    name = unique("restart")
    key = connector(store, name)
    settle(deps, key, lambda r: connector_state(r) == "RUNNING", "the connector RUNNING")
    wait_for(lambda: CountingTask.starts[(name, 0)] == 1, 60, "the task to start")

    store.annotate(key, **{anno.RESTART: "true,includeTasks"})
    r = settle(deps, key, lambda r: condition(r, "Warning") is not None, "the invalid-annotation warning")
    assert condition(r, "Warning")["reason"] == "RestartConnector"  # type: ignore[index]
    assert condition(r, "Warning")["message"] == "Invalid annotation format"  # type: ignore[index]
    assert r.annotations[anno.RESTART] == "true,includeTasks", "an invalid annotation stays"
    assert CountingConnector.starts[name] == 1

    store.annotate(key, **{anno.RESTART: "includeTasks"})
    r = settle(deps, key, lambda r: anno.RESTART not in r.annotations, "the restart annotation to be removed")
    assert condition(r, "Warning") is None
    wait_for(lambda: CountingConnector.starts[name] == 2 and CountingTask.starts[(name, 0)] == 2, 60, "restarts")

    store.annotate(key, **{anno.RESTART_TASK: "0"})
    settle(deps, key, lambda r: anno.RESTART_TASK not in r.annotations, "the restart-task annotation to go")
    wait_for(lambda: CountingTask.starts[(name, 0)] == 3, 60, "the task restart")
    assert CountingConnector.starts[name] == 2, "a task restart does not restart the connector"

    store.annotate(key, **{anno.RESTART_TASK: "zero"})
    r = settle(deps, key, lambda r: condition(r, "Warning") is not None, "the restart-task warning")
    assert condition(r, "Warning")["reason"] == "RestartConnectorTask"  # type: ignore[index]
    assert condition(r, "Ready") is not None, "a bad restart-task value does not fail the reconcile"
    store.resources.pop(key)


def test_offsets_list_alter_reset_through_config_maps(env: tuple[Deps, MemoryStore, str]) -> None:
    deps, store, _url = env
    name = unique("offsets")
    key = connector(
        store, name, listOffsets={"toConfigMap": {"name": "listed"}}, alterOffsets={"fromConfigMap": {"name": "wanted"}}
    )
    settle(deps, key, lambda r: connector_state(r) == "RUNNING", "the connector RUNNING")

    store.annotate(key, **{anno.CONNECTOR_OFFSETS: "alter"})
    r = settle(deps, key, lambda r: condition(r, "Warning") is not None, "alter refused while running")
    assert (
        condition(r, "Warning")["message"]
        == "Encountered error altering connector offsets. Connector is not in STOPPED state"
    )  # type: ignore[index]
    assert r.annotations[anno.CONNECTOR_OFFSETS] == "alter"

    store.put({**_body(store, key), "spec": {**r.spec, "state": "stopped"}})
    r = settle(deps, key, lambda r: condition(r, "Warning") is not None and connector_state(r) == "STOPPED", "stopped")
    assert "ConfigMap it/wanted does not exist." in condition(r, "Warning")["message"]  # type: ignore[index]

    store.config_maps[(NS, "wanted")] = {"data": {"other": "x"}, "labels": {}, "owners": []}
    r = settle(deps, key, lambda r: "Data field offsets.json is missing." in str(r.status), "missing key warning")
    store.config_maps[(NS, "wanted")]["data"]["offsets.json"] = "{not json"
    r = settle(deps, key, lambda r: "Failed to parse contents of offsets.json as JSON" in str(r.status), "bad JSON")
    assert r.annotations[anno.CONNECTOR_OFFSETS] == "alter"

    wanted = {"offsets": [{"partition": {"task": 0}, "offset": {"position": 1000}}]}
    store.config_maps[(NS, "wanted")]["data"]["offsets.json"] = json.dumps(wanted)
    r = settle(deps, key, lambda r: anno.CONNECTOR_OFFSETS not in r.annotations, "the alter to succeed")
    assert condition(r, "Warning") is None

    store.config_maps[(NS, "listed")] = {"data": {"keep": "me"}, "labels": {}, "owners": []}
    store.annotate(key, **{anno.CONNECTOR_OFFSETS: "list"})
    settle(deps, key, lambda r: anno.CONNECTOR_OFFSETS not in r.annotations, "the list to succeed")
    listed = store.config_maps[(NS, "listed")]
    assert json.loads(listed["data"]["offsets.json"]) == wanted
    assert listed["data"]["keep"] == "me"
    assert [o["name"] for o in listed["owners"]] == [name]

    store.annotate(key, **{anno.CONNECTOR_OFFSETS: "reset"})
    settle(deps, key, lambda r: anno.CONNECTOR_OFFSETS not in r.annotations, "the reset to succeed")
    store.annotate(key, **{anno.CONNECTOR_OFFSETS: "list"})
    settle(deps, key, lambda r: anno.CONNECTOR_OFFSETS not in r.annotations, "the second list")
    assert json.loads(store.config_maps[(NS, "listed")]["data"]["offsets.json"]) == {"offsets": []}

    store.annotate(key, **{anno.CONNECTOR_OFFSETS: ""})
    r = settle(deps, key, lambda r: condition(r, "Warning") is not None, "the empty-value warning")
    assert condition(r, "Warning")["reason"] == "ManageOffsets"  # type: ignore[index]
    assert connector_state(r) == "STOPPED"
    store.resources.pop(key)


def test_config_change_postpones_annotations_and_clears_auto_restart(env: tuple[Deps, MemoryStore, str]) -> None:
    deps, store, _url = env
    name = unique("postpone")
    key = connector(store, name)
    r = settle(deps, key, lambda r: connector_state(r) == "RUNNING", "the connector RUNNING")
    wait_for(lambda: CountingConnector.starts[name] == 1, 60, "the connector to start")
    store.put(
        {
            **_body(store, key),
            "status": {**r.status, "autoRestart": {"count": 2, "lastRestartTimestamp": "2026-01-01T00:00:00.000Z"}},
        }
    )
    spec = {**r.spec, "config": {**r.spec["config"], "records.per.second": 3}}
    store.put({**_body(store, key), "spec": spec, "status": store.resources[key].status})
    store.annotate(key, **{anno.RESTART: "true"})
    kafka_connector.reconcile(deps, key)
    r = store.resources[key]
    assert r.annotations[anno.RESTART] == "true", "a config change postpones the restart annotation"
    assert "autoRestart" not in r.status, "a config change clears the auto-restart status"
    settle(deps, key, lambda r: anno.RESTART not in r.annotations, "the restart on the next reconcile")
    store.resources.pop(key)


def _body(store: MemoryStore, key: Key) -> dict[str, Any]:
    r = store.resources[key]
    return {
        "kind": r.kind,
        "metadata": {
            "namespace": r.namespace,
            "name": r.name,
            "uid": r.uid,
            "generation": (r.generation or 1) + 1,
            "labels": dict(r.labels),
            "annotations": dict(r.annotations),
        },
        "spec": dict(r.spec),
        "status": dict(r.status),
    }
