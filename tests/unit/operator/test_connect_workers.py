"""The Connect-workers step KafkaConnect and KafkaMirrorMaker2 share, through both reconcilers, with an
in-memory store and a host that reports what a test tells it: the status each case writes, field by field."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sparklink.operator.hosting import HostState
from sparklink.operator.metrics import OperatorMetrics
from sparklink.operator.model.autorestart import BackOff
from sparklink.operator.model.resources import Key, Resource
from sparklink.operator.model.workers import WorkerSettings
from sparklink.operator.reconcile import kafka_connect, mirror_maker_2
from sparklink.operator.reconcile.context import Deps, ReconcileResult
from tests.unit.operator.memory_store import MemoryStore

NOW = datetime(2026, 11, 22, 10, 0, 0, tzinfo=UTC)
STAMP = "2026-11-22T10:00:00.000Z"


class FixedClock:
    def now(self) -> datetime:
        return NOW


@dataclass
class ScriptedHost:
    """Answers `answer` for every group it is asked to run, and remembers the settings it was given."""

    answer: HostState
    ensured: list[WorkerSettings] = field(default_factory=list)

    def ensure(self, owner: Resource, settings: WorkerSettings) -> HostState:
        self.ensured.append(settings)
        return self.answer

    def state(self, key: Key) -> HostState | None:
        return self.answer

    def remove(self, key: Key) -> None: ...

    def close(self) -> None: ...


def worker_spec(**extra: Any) -> dict[str, Any]:
    return {
        "bootstrapServers": "127.0.0.1:9092",
        "groupId": "g",
        "configStorageTopic": "c",
        "offsetStorageTopic": "o",
        "statusStorageTopic": "s",
        **extra,
    }


def connect_body(replicas: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "kind": "KafkaConnect",
        "metadata": {"namespace": "ns", "name": "my-connect"},
        "spec": {"replicas": replicas, **worker_spec(**spec)},
    }


def mirror_body(replicas: int = 1, **target: Any) -> dict[str, Any]:
    return {
        "kind": "KafkaMirrorMaker2",
        "metadata": {"namespace": "ns", "name": "my-mm2"},
        "spec": {"replicas": replicas, "target": {"alias": "b", **worker_spec(**target)}, "mirrors": []},
    }


KINDS: list[tuple[Callable[..., dict[str, Any]], Callable[[Deps, Key], ReconcileResult], str, str]] = [
    (connect_body, kafka_connect.reconcile, "Kafka Connect", "my-connect-connect"),
    (mirror_body, mirror_maker_2.reconcile, "MirrorMaker 2", "my-mm2-mirrormaker2"),
]


def run(body: dict[str, Any], reconcile: Callable[[Deps, Key], ReconcileResult], state: HostState) -> Any:
    store = MemoryStore()
    key = store.put(body).key
    host = ScriptedHost(state)
    deps = Deps(store, host, FixedClock(), BackOff(timedelta(seconds=1)), OperatorMetrics())
    result = reconcile(deps, key)
    return result, store.resources[key].status, host


def selector(name: str, kind: str) -> str:
    return f"strimzi.io/cluster={name.rsplit('-', 1)[0]},strimzi.io/name={name},strimzi.io/kind={kind}"


@pytest.mark.parametrize(("body", "reconcile", "what", "name"), KINDS)
def test_workers_still_starting_are_not_ready_with_url_replicas_and_selector(
    body: Callable[..., dict[str, Any]], reconcile: Callable[[Deps, Key], ReconcileResult], what: str, name: str
) -> None:
    state = HostState("http://127.0.0.1:8083", False, 1, "the worker at http://127.0.0.1:8083 is starting")
    result, status, _host = run(body(), reconcile, state)
    assert result.failed and result.requeue_after == 2.0
    kind = body()["kind"]
    assert status == {
        "conditions": [
            {
                "type": "NotReady",
                "status": "True",
                "reason": "Creating",
                "message": f"{what} workers are starting: the worker at http://127.0.0.1:8083 is starting",
                "lastTransitionTime": STAMP,
            }
        ],
        "observedGeneration": 1,
        "url": "http://127.0.0.1:8083",
        "replicas": 1,
        "labelSelector": selector(name, kind),
    }


@pytest.mark.parametrize(("body", "reconcile", "what", "name"), KINDS)
def test_an_invalid_resource_runs_nothing_and_says_what_is_missing(
    body: Callable[..., dict[str, Any]], reconcile: Callable[[Deps, Key], ReconcileResult], what: str, name: str
) -> None:
    raw = body()
    spec = raw["spec"] if raw["kind"] == "KafkaConnect" else raw["spec"]["target"]
    del spec["groupId"]
    result, status, host = run(raw, reconcile, HostState("http://127.0.0.1:8083", True, 1))
    assert result.failed and result.requeue_after is None and host.ensured == []
    where = "spec" if raw["kind"] == "KafkaConnect" else "spec.target"
    assert status["conditions"] == [
        {
            "type": "NotReady",
            "status": "True",
            "reason": "InvalidResourceException",
            "message": f"{raw['kind']} ns/{raw['metadata']['name']} is missing {where}.groupId",
            "lastTransitionTime": STAMP,
        }
    ]
    assert set(status) == {"conditions", "observedGeneration", "labelSelector"}


@pytest.mark.parametrize(("body", "reconcile", "what", "name"), KINDS)
def test_zero_replicas_are_ready_without_a_url_and_reserved_options_are_warnings(
    body: Callable[..., dict[str, Any]], reconcile: Callable[[Deps, Key], ReconcileResult], what: str, name: str
) -> None:
    result, status, host = run(body(0, config={"group.id": "x"}), reconcile, HostState(None, False, 0, "0"))
    assert not result.failed and result.requeue_after is None
    assert host.ensured[0].replicas == 0 and "group.id" in host.ensured[0].ignored_options
    assert status == {
        "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": STAMP},
            {
                "type": "Warning",
                "status": "True",
                "reason": "ForbiddenConfigOption",
                "message": 'Configuration option "group.id" is forbidden and was ignored',
                "lastTransitionTime": STAMP,
            },
        ],
        "observedGeneration": 1,
        "replicas": 0,
        "labelSelector": selector(name, body()["kind"]),
    }
