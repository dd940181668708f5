"""Nothing in a resource becomes a setting it was not meant to be: line breaks and control characters refuse
the resource (nothing is handed to a host, what runs keeps running), Spark settings pass only from the
allow-list, and the properties files are written by a real properties writer. Pure model and reconcilers
with an in-memory store and scripted hosts."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sparklink.api.config import read_properties
from sparklink.clients.settings import properties_text
from sparklink.operator.hosting import HostState
from sparklink.operator.hosting.kafka import KafkaState, RollReport
from sparklink.operator.hosting.kubernetes import CONFIG_FILE, desired_objects
from sparklink.operator.metrics import OperatorMetrics
from sparklink.operator.model import workers
from sparklink.operator.model.autorestart import BackOff
from sparklink.operator.model.config_safety import SPARK_ALLOWED, UnsafeConfig
from sparklink.operator.model.kafka import DesiredCluster, DesiredNode, desired_cluster
from sparklink.operator.model.kafka_changes import NodeChange
from sparklink.operator.model.resources import Key, Resource
from sparklink.operator.reconcile import kafka as kafka_reconcile
from sparklink.operator.reconcile.context import Deps, ReconcileResult
from tests.unit.operator.memory_store import MemoryStore
from tests.unit.operator.test_connect_workers import KINDS, FixedClock, ScriptedHost, connect_body
from tests.unit.operator.test_kafka_model import MODEL, example, with_spec

INJECTION = "1\nrest.host.name=0.0.0.0"


def connect(**config: Any) -> Resource:
    return Resource.from_json(connect_body(config=config))


def test_the_injection_reproduction_is_refused_naming_the_key_and_never_the_value() -> None:
    with pytest.raises(UnsafeConfig) as refused:
        workers.from_resource(connect(**{"consumer.max.poll.records": INJECTION}))
    message = refused.value.message
    assert 'spec.config option "consumer.max.poll.records" has a line break (\\n) in its value' in message
    assert "write each option on one line" in message and "the workers keep running" in message
    assert "0.0.0.0" not in message


@pytest.mark.parametrize(
    ("config", "spec", "phrase"),
    [
        ({"a\rb": "1"}, {}, 'spec.config option "a\\u000db" has a carriage return (\\r) in its key'),
        ({"client.id": "x\u2028y"}, {}, 'option "client.id" has the control character U+2028 in its value'),
        ({"client.id": "x\x85y"}, {}, 'option "client.id" has the control character U+0085 in its value'),
        ({"client.id": "x\ty"}, {}, 'option "client.id" has a tab (\\t) in its value'),
        ({}, {"groupId": "g\nrest.port=1"}, "spec.groupId has a line break (\\n)"),
        ({}, {"offsetStorageTopic": "o\x00"}, "spec.offsetStorageTopic has a NUL byte"),
    ],
)
def test_control_characters_in_any_key_value_or_written_field_are_refused(
    config: dict[str, Any], spec: dict[str, Any], phrase: str
) -> None:
    body = connect_body(config=config, **spec)
    with pytest.raises(UnsafeConfig) as refused:
        workers.from_resource(Resource.from_json(body))
    assert phrase in refused.value.message


def test_nested_values_are_written_as_json_so_their_line_breaks_stay_escaped() -> None:
    settings = workers.from_resource(connect(**{"my.plugin.option": {"a": "x\ny"}}))
    assert settings.config["my.plugin.option"] == '{"a": "x\\ny"}'


def test_only_sizing_spark_options_pass_and_the_others_are_warnings() -> None:
    dangerous = {
        "spark.driver.extraJavaOptions": "-javaagent:/tmp/evil.jar",
        "spark.plugins": "evil.Plugin",
        "spark.jars.packages": "evil:evil:1",
        "spark.jars": "/tmp/evil.jar",
        "spark.driver.extraClassPath": "/tmp",
        "spark.extraListeners": "evil.Listener",
        "spark.sql.extensions": "evil.Extensions",
        "spark.ui.enabled": "true",
        "spark.master": "spark://elsewhere:7077",
        "Spark.Jars": "/tmp/evil.jar",
    }
    sizing = {"spark.executor.memory": "2g", "spark.driver.memory": "1g", "spark.sql.shuffle.partitions": 4}
    settings = workers.from_resource(connect(**dangerous, **sizing))
    assert settings.ignored_spark == tuple(dangerous)
    assert {k: v for k, v in settings.properties().items() if k.lower().startswith("spark.")} == {
        "spark.executor.memory": "2g",
        "spark.driver.memory": "1g",
        "spark.sql.shuffle.partitions": "4",
    }
    assert set(sizing) <= SPARK_ALLOWED


def test_where_a_worker_listens_and_keeps_state_is_the_operators() -> None:
    settings = workers.from_resource(
        connect(**{"sparklink.state.dir": "/etc", "admin.listeners": "http://0.0.0.0:9", "sparklink.worker.mode": "x"})
    )
    assert settings.ignored_options == ("sparklink.state.dir", "admin.listeners", "sparklink.worker.mode")
    assert not {"sparklink.state.dir", "admin.listeners"} & set(settings.properties())


def test_which_files_a_workers_connectors_may_touch_is_the_operators() -> None:
    settings = workers.from_resource(connect(**{"sparklink.file.allowed.paths": "/"}))
    assert settings.ignored_options == ("sparklink.file.allowed.paths",)
    assert "sparklink.file.allowed.paths" not in settings.properties()


def test_properties_are_written_escaped_and_read_back_as_the_same_values(tmp_path: Path) -> None:
    props = {"a": INJECTION, "b": "x:y=z\\w", "c": " lead", "url": "http://h:1", "é": "ü\u2028x", "k y": "v"}
    path = tmp_path / "worker.properties"
    path.write_text(properties_text(props))
    assert "rest.host.name" not in read_properties(path)
    assert read_properties(path) == props
    assert all(line.isascii() for line in path.read_text().splitlines())


def test_the_workers_config_map_is_escaped_too() -> None:
    raw = connect_body(config={"my.plugin.option": "x=y:z"})
    owner = Resource.from_json(raw)
    text = desired_objects(owner, workers.from_resource(owner), "img")["ConfigMap"]["data"][CONFIG_FILE]
    assert "my.plugin.option=x\\=y\\:z" in text.splitlines()


@pytest.mark.parametrize(("body", "reconcile", "what", "name"), KINDS)
def test_a_refused_resource_leaves_its_running_workers_as_they_are_and_says_why(
    body: Callable[..., dict[str, Any]], reconcile: Callable[[Deps, Key], ReconcileResult], what: str, name: str
) -> None:
    store = MemoryStore()
    raw = body(config={"consumer.max.poll.records": INJECTION})
    raw["status"] = {"connectors": [{"name": "kept"}]} if raw["kind"] == "KafkaMirrorMaker2" else {}
    key = store.put(raw).key
    host = ScriptedHost(HostState("http://127.0.0.1:8083", True, 1))

    def no_rest(url: str, ca_pem: bytes | None) -> Any:
        raise AssertionError(f"a refused resource must change nothing through Connect ({url})")

    deps = Deps(store, host, FixedClock(), BackOff(timedelta(seconds=1)), OperatorMetrics(), connect=no_rest)
    if raw["kind"] == "KafkaConnect":
        deps.connect = lambda url, ca_pem: _Listing(url)  # type: ignore[assignment,return-value]
    result = reconcile(deps, key)
    status = store.resources[key].status
    assert host.ensured == [] and not result.failed
    assert [c["type"] for c in status["conditions"]] == ["Ready", "Warning"]
    assert status["conditions"][1]["reason"] == "UnsafeConfigOption"
    assert '"consumer.max.poll.records" has a line break' in status["conditions"][1]["message"]
    assert status["url"] == "http://127.0.0.1:8083"
    if raw["kind"] == "KafkaMirrorMaker2":
        assert status["connectors"] == [{"name": "kept"}]


class _Listing:
    """KafkaConnect lists what its workers run (reading is allowed); any change would fail the test."""

    def __init__(self, url: str) -> None:
        self.url = url

    def __enter__(self) -> _Listing:
        return self

    def __exit__(self, *exc: object) -> None: ...

    def plugins(self) -> list[dict[str, str]]:
        return []

    def connectors(self) -> list[str]:
        return []

    def delete(self, name: str) -> None:
        raise AssertionError("nothing may be deleted")


@pytest.mark.parametrize(("body", "reconcile", "what", "name"), KINDS)
def test_a_refused_resource_with_no_workers_is_not_ready_and_nothing_starts(
    body: Callable[..., dict[str, Any]], reconcile: Callable[[Deps, Key], ReconcileResult], what: str, name: str
) -> None:
    store = MemoryStore()
    key = store.put(body(config={"a\nb": "1"})).key
    host = _NothingRuns(HostState(None, False, 0))
    deps = Deps(store, host, FixedClock(), BackOff(timedelta(seconds=1)), OperatorMetrics())
    result = reconcile(deps, key)
    conditions = store.resources[key].status["conditions"]
    assert result.failed and host.ensured == []
    assert [(c["type"], c.get("reason")) for c in conditions] == [
        ("NotReady", "InvalidResourceException"),
        ("Warning", "UnsafeConfigOption"),
    ]
    assert conditions[0]["message"] == f"No {what} workers run: their settings were refused (see the Warning)"


class _NothingRuns(ScriptedHost):
    def state(self, key: Key) -> HostState | None:
        return None


# -- Kafka and KafkaNodePool ------------------------------------------------------------------------------


def test_kafka_and_pool_config_with_control_characters_are_refused_naming_where() -> None:
    kafka, pools = example()
    spec = {**kafka.spec["kafka"], "config": {"num.io.threads": "8\nlisteners=X://:1"}}
    with pytest.raises(UnsafeConfig) as refused:
        desired_cluster(with_spec(kafka, kafka=spec), pools, MODEL)
    assert 'spec.kafka.config option "num.io.threads" has a line break (\\n) in its value' in refused.value.message
    pool = with_spec(pools[0], config={"log.cleaner.threads\n": 1})
    with pytest.raises(UnsafeConfig) as refused:
        desired_cluster(kafka, [pool, *pools[1:]], MODEL)
    assert f'KafkaNodePool {pool.name} spec.config option "log.cleaner.threads\\u000a"' in refused.value.message
    assert "the nodes keep running with their previous settings" in refused.value.message


def test_kafka_forbidden_prefixes_match_whatever_the_case_as_strimzi_does() -> None:
    kafka, pools = example()
    spec = {**kafka.spec["kafka"], "config": {"Listeners": "X://:1", "SSL.keystore.location": "/x"}}
    desired = desired_cluster(with_spec(kafka, kafka=spec), pools, MODEL)
    assert desired.node(0).config == {}
    assert [c.reason for c in desired.warnings if c.reason == "ForbiddenConfigOption"] == ["ForbiddenConfigOption"] * 2


@dataclasses.dataclass
class RunningKafka:
    """A Kafka host with a ready cluster that records whatever it is asked to do."""

    asked: list[str] = dataclasses.field(default_factory=list)

    def running(self, owner: Resource) -> KafkaState | None:
        return KafkaState("cluster-id", {}, (("127.0.0.1", 9092),), True)

    def ensure(self, owner: Resource, desired: DesiredCluster, add: Sequence[DesiredNode]) -> KafkaState:
        self.asked.append("ensure")
        raise AssertionError("a refused Kafka must not be ensured")

    def roll(self, owner: Resource, desired: DesiredCluster, changes: Sequence[NodeChange]) -> RollReport:
        self.asked.append("roll")
        raise AssertionError("a refused Kafka must not be rolled")

    def remove(self, key: Key) -> None: ...

    def close(self) -> None: ...


def test_a_refused_kafka_runs_on_untouched_and_the_kafka_and_its_pool_say_why() -> None:
    kafka, pools = example()
    store = MemoryStore()
    kafka_body = {
        "kind": "Kafka",
        "metadata": {"namespace": "ns", "name": kafka.name, "generation": 2},
        "spec": dict(kafka.spec),
        "status": {"clusterId": "cluster-id", "listeners": [{"name": "plain", "bootstrapServers": "127.0.0.1:9092"}]},
    }
    key = store.put(kafka_body).key
    bad = pools[0]
    store.put(
        {
            "kind": "KafkaNodePool",
            "metadata": {"namespace": "ns", "name": bad.name, "labels": dict(bad.labels)},
            "spec": {**bad.spec, "config": {"num.io.threads": INJECTION}},
        }
    )
    for pool in pools[1:]:
        store.put(
            {
                "kind": "KafkaNodePool",
                "metadata": {"namespace": "ns", "name": pool.name, "labels": dict(pool.labels)},
                "spec": dict(pool.spec),
            }
        )
    host = RunningKafka()
    deps = Deps(
        store, ScriptedHost(HostState(None, False, 0)), FixedClock(), BackOff(timedelta(seconds=1)),
        OperatorMetrics(), kafka=host, kafka_model=lambda: MODEL,
    )  # fmt: skip
    result = kafka_reconcile.reconcile(deps, key)
    assert host.asked == [] and not result.failed
    status = store.resources[key].status
    assert [(c["type"], c.get("reason")) for c in status["conditions"]] == [
        ("Ready", None),
        ("Warning", "UnsafeConfigOption"),
    ]
    assert status["clusterId"] == "cluster-id" and status["observedGeneration"] == 2
    pool_status = store.resources[Key("KafkaNodePool", "ns", bad.name)].status
    assert [c["reason"] for c in pool_status["conditions"]] == ["UnsafeConfigOption"]
    assert (
        f'KafkaNodePool ns/{bad.name}: spec.config option "num.io.threads"' in pool_status["conditions"][0]["message"]
    )
