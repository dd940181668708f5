"""The pure Kafka model: Strimzi's KRaft example -> nodes, ids and settings; validation; per-node changes
(dynamic update vs restart); scaling; the manual rolling update annotation; bootstrap address resolution."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparklink.operator.hosting.kafka import PLAIN_LISTENERS
from sparklink.operator.model import bootstrap
from sparklink.operator.model.conditions import ReconcileFailure
from sparklink.operator.model.kafka import MANUAL_ROLLING_UPDATE, assign_node_ids, desired_cluster
from sparklink.operator.model.kafka_changes import RunningNode, node_changes, scaling
from sparklink.operator.model.kafka_config import ConfigModel
from sparklink.operator.model.resources import Resource
from sparklink.operator.reconcile.kafka import listeners_status
from sparklink.roller.model import RestartReason

DATA = Path(__file__).parent.parent.parent / "data" / "strimzi"
MODEL = ConfigModel.from_json(
    {
        "version": "4.4.0",
        "metadataVersions": ["4.2-IV0", "4.2-IV1", "4.3-IV0", "4.4-IV0", "4.4-IV1", "4.4-IV2"],
        "configs": {
            "num.io.threads": {"type": "int", "dynamic": True, "min": 1},
            "log.cleaner.threads": {"type": "int", "dynamic": True, "min": 0},
            "queued.max.requests": {"type": "int", "dynamic": False, "min": 1},
            "min.insync.replicas": {"type": "int", "dynamic": True, "min": 1},
            "default.replication.factor": {"type": "int", "dynamic": False},
            "offsets.topic.replication.factor": {"type": "short", "dynamic": False, "min": 1},
            "transaction.state.log.replication.factor": {"type": "short", "dynamic": False, "min": 1},
            "transaction.state.log.min.isr": {"type": "int", "dynamic": False, "min": 1},
            "compression.type": {"type": "string", "dynamic": True, "values": ["gzip", "lz4", "producer"]},
            "log.cleanup.policy": {"type": "list", "dynamic": True, "items": ["compact", "delete"]},
            "log.cleaner.min.cleanable.ratio": {"type": "double", "dynamic": True, "min": 0, "max": 1},
            "auto.create.topics.enable": {"type": "boolean", "dynamic": False},
        },
    }
)


def example() -> tuple[Resource, list[Resource]]:
    docs = [dict(d) for d in yaml.safe_load_all((DATA / "kafka-ephemeral.yaml").read_text())]
    for doc in docs:
        doc["metadata"].update(namespace="ns", uid=f"uid-{doc['metadata']['name']}", generation=1)
    kafka = next(Resource.from_json(d) for d in docs if d["kind"] == "Kafka")
    return kafka, [Resource.from_json(d) for d in docs if d["kind"] == "KafkaNodePool"]


def with_spec(resource: Resource, **spec: Any) -> Resource:
    return Resource.from_json(
        {
            "kind": resource.kind,
            "apiVersion": resource.api_version,
            "metadata": {
                "name": resource.name,
                "namespace": resource.namespace,
                "uid": resource.uid,
                "generation": 1,
                "labels": dict(resource.labels),
                "annotations": dict(resource.annotations),
            },
            "spec": {**resource.spec, **spec},
        }
    )


def test_strimzis_kraft_example_gives_brokers_then_controllers_with_strimzi_names_and_settings() -> None:
    kafka, pools = example()
    desired = desired_cluster(kafka, pools, MODEL, kafka_version="4.4.0")
    assert [(n.node_id, n.name, n.roles) for n in desired.nodes] == [
        (0, "my-cluster-broker-0", "broker"),
        (1, "my-cluster-broker-1", "broker"),
        (2, "my-cluster-broker-2", "broker"),
        (3, "my-cluster-controller-3", "controller"),
        (4, "my-cluster-controller-4", "controller"),
        (5, "my-cluster-controller-5", "controller"),
    ]
    broker, controller = desired.node(0), desired.node(3)
    assert broker.config == {
        "offsets.topic.replication.factor": "3",
        "transaction.state.log.replication.factor": "3",
        "transaction.state.log.min.isr": "2",
        "default.replication.factor": "3",
        "min.insync.replicas": "2",
    }
    assert controller.config == broker.config  # all of these matter to controllers too
    assert [(lst.name, lst.port, lst.tls, lst.served) for lst in desired.listeners] == [
        ("plain", 9092, False, True),
        ("tls", 9093, True, True),
    ]
    assert [c.message for c in desired.warnings] == [
        "spec.entityOperator.topicOperator is not supported by sparklink yet and was ignored: KafkaTopics are not "
        "managed. (KafkaUsers are: the operator itself runs Strimzi's User Operator.)"
    ]


def test_controller_only_nodes_get_only_the_settings_that_matter_to_controllers() -> None:
    kafka, pools = example()
    kafka = with_spec(kafka, kafka={**kafka.spec["kafka"], "config": {"log.cleaner.threads": 2, "num.io.threads": 4}})
    desired = desired_cluster(kafka, pools, MODEL)
    assert desired.node(0).config == {"log.cleaner.threads": "2", "num.io.threads": "4"}
    assert desired.node(3).config == {"num.io.threads": "4"}


def test_node_ids_are_kept_new_ones_fill_the_lowest_gap_and_a_scale_down_drops_the_highest() -> None:
    assert assign_node_ids([("a", 2, None), ("b", 2, None)]) == {"a": (0, 1), "b": (2, 3)}
    assert assign_node_ids([("a", 3, [0, 5]), ("b", 1, [1])]) == {"a": (0, 2, 5), "b": (1,)}
    assert assign_node_ids([("a", 1, [0, 3, 7]), ("b", 2, None)]) == {"a": (0,), "b": (1, 2)}
    with pytest.raises(ReconcileFailure, match="Found duplicate node ID 1 in node pool b"):
        assign_node_ids([("a", 2, [0, 1]), ("b", 1, [1])])


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"num.io.threads": "many"}, "num.io.threads has value 'many' which is not an int"),
        ({"num.io.threads": 0}, "num.io.threads has value 0 which less than the minimum value 1"),
        ({"compression.type": "brotli"}, "compression.type has value 'brotli' which is not one of the allowed"),
        ({"log.cleanup.policy": "compact,compact"}, "log.cleanup.policy contains duplicate values"),
        ({"log.cleanup.policy": "forever"}, "log.cleanup.policy contains values [forever] which are not in the"),
        ({"log.cleaner.min.cleanable.ratio": 1.5}, "which greater than the maximum value 1"),
        ({"auto.create.topics.enable": "yes"}, "auto.create.topics.enable has value 'yes' which is not a boolean"),
        ({"default.replication.factor": 4}, "'default.replication.factor' should be set to 3 or less because this"),
    ],
)
def test_invalid_settings_make_the_kafka_not_ready_with_strimzis_message(config: dict[str, Any], message: str) -> None:
    kafka, pools = example()
    spec = {**kafka.spec["kafka"], "config": {**kafka.spec["kafka"]["config"], **config}}
    with pytest.raises(ReconcileFailure) as failure:
        desired_cluster(with_spec(kafka, kafka=spec), pools, MODEL)
    assert failure.value.message.startswith(
        "Kafka ns/my-cluster has invalid spec.kafka.config: "
        if "should be set" not in message
        else "Kafka configuration"
    )
    assert message in failure.value.message
    assert failure.value.reason == "InvalidResourceException"


def test_forbidden_options_are_dropped_with_a_warning_and_unknown_ones_pass() -> None:
    kafka, pools = example()
    spec = {**kafka.spec["kafka"], "config": {"listeners": "X://:1", "node.id": 7, "my.plugin.option": "x"}}
    desired = desired_cluster(with_spec(kafka, kafka=spec), pools, MODEL)
    assert desired.node(0).config == {"my.plugin.option": "x"}
    forbidden = [c.message for c in desired.warnings if c.reason == "ForbiddenConfigOption"]
    assert forbidden == [
        'Configuration option "listeners" is forbidden in spec.kafka.config and was ignored',
        'Configuration option "node.id" is forbidden in spec.kafka.config and was ignored',
    ]


@pytest.mark.parametrize(
    ("pool_spec", "message"),
    [
        ({"roles": ["broker", "zookeeper"]}, "has unknown roles ['zookeeper']"),
        ({"replicas": -1}, "has spec.replicas -1: it must be 0 or more"),
        ({"roles": []}, "KafkaNodePool broker has no role defined in .spec.roles"),
        ({"replicas": 0}, "At least one KafkaNodePool with the broker role and at least one replica is required"),
    ],
)
def test_invalid_pools_make_the_kafka_not_ready(pool_spec: dict[str, Any], message: str) -> None:
    kafka, pools = example()
    pools = [with_spec(p, **pool_spec) if p.name == "broker" else p for p in pools]
    with pytest.raises(ReconcileFailure) as failure:
        desired_cluster(kafka, pools, MODEL)
    assert message in failure.value.message


def test_a_kafka_without_pools_is_not_ready_with_strimzis_message() -> None:
    kafka, _ = example()
    with pytest.raises(ReconcileFailure) as failure:
        desired_cluster(kafka, [], MODEL)
    assert failure.value.message.startswith(
        "KafkaNodePools are enabled, but KafkaNodePools for Kafka cluster my-cluster either don't exist"
    )


def test_pool_settings_and_heaps_apply_to_the_pools_nodes_only() -> None:
    kafka, pools = example()
    pools = [
        with_spec(p, config={"num.io.threads": 16}, jvmOptions={"-Xmx": "256m"}) if p.name == "broker" else p
        for p in pools
    ]
    desired = desired_cluster(kafka, pools, MODEL)
    assert desired.node(0).config["num.io.threads"] == "16" and desired.node(0).heap == "256m"
    assert "num.io.threads" not in desired.node(3).config and desired.node(3).heap is None
    bad = [with_spec(p, config={"num.io.threads": "x"}) if p.name == "broker" else p for p in pools]
    with pytest.raises(
        ReconcileFailure, match=re.escape("KafkaNodePool ns/broker has invalid spec.config: num.io.threads")
    ):
        desired_cluster(kafka, bad, MODEL)


def test_metadata_version_resolves_short_versions_and_rejects_unknown_ones() -> None:
    kafka, pools = example()
    assert desired_cluster(kafka, pools, MODEL).metadata_version == "4.4-IV2"
    short = with_spec(kafka, kafka={**kafka.spec["kafka"], "metadataVersion": "4.2"})
    assert desired_cluster(short, pools, MODEL).metadata_version == "4.2-IV1"
    wrong = with_spec(kafka, kafka={**kafka.spec["kafka"], "metadataVersion": "2.8-IV1"})
    with pytest.raises(
        ReconcileFailure, match=re.escape("Metadata version 2.8-IV1 is invalid: use one from 4.2-IV0 to 4.4-IV2")
    ):
        desired_cluster(wrong, pools, MODEL)


def running_nodes(desired: Any, **started: dict[str, str]) -> dict[int, RunningNode]:
    """Every desired node running with its desired settings (plus `started` overrides per node name)."""
    out = {}
    for node in desired.nodes:
        base = {"node.id": str(node.node_id), "process.roles": node.roles}
        settings = {**base, **node.config, **started.get(node.name.replace("-", "_"), {})}
        out[node.node_id] = RunningNode(
            node.node_id, node.name, node.broker, node.controller, "512m", base, settings, pool=node.pool
        )
    return out


def test_a_dynamic_change_reconfigures_brokers_and_a_static_one_restarts_every_node_it_concerns() -> None:
    kafka, pools = example()
    before = desired_cluster(kafka, pools, MODEL)
    running = running_nodes(before)
    assert {c.action for c in node_changes(before, running, MODEL, "512m")} == {"none"}

    config = {**kafka.spec["kafka"]["config"], "log.cleaner.threads": 2}
    dynamic = desired_cluster(with_spec(kafka, kafka={**kafka.spec["kafka"], "config": config}), pools, MODEL)
    changes = {c.node_id: c for c in node_changes(dynamic, running, MODEL, "512m")}
    assert {i: c.action for i, c in changes.items()} == {0: "reconfigure", 1: "reconfigure", 2: "reconfigure"} | {
        3: "none",
        4: "none",
        5: "none",
    }
    assert changes[0].changes == {"log.cleaner.threads": "2"}

    config = {**kafka.spec["kafka"]["config"], "queued.max.requests": 600}
    static = desired_cluster(with_spec(kafka, kafka={**kafka.spec["kafka"], "config": config}), pools, MODEL)
    changes = {c.node_id: c for c in node_changes(static, running, MODEL, "512m")}
    assert {c.action for c in changes.values()} == {"restart"}
    assert changes[0].reasons == {RestartReason.CONFIG_CHANGE_REQUIRES_RESTART}

    # A dynamic setting that matters to controllers restarts them: the roller updates through brokers only.
    config = {**kafka.spec["kafka"]["config"], "num.io.threads": 4}
    io = desired_cluster(with_spec(kafka, kafka={**kafka.spec["kafka"], "config": config}), pools, MODEL)
    actions = {c.node_id: c.action for c in node_changes(io, running, MODEL, "512m")}
    assert actions == {0: "reconfigure", 1: "reconfigure", 2: "reconfigure", 3: "restart", 4: "restart", 5: "restart"}


def test_a_removed_setting_restarts_and_drops_its_dynamic_override() -> None:
    kafka, pools = example()
    desired = desired_cluster(kafka, pools, MODEL)
    running = running_nodes(desired, my_cluster_broker_1={"log.cleaner.threads": "3", "custom.plugin": "a"})
    (change,) = [c for c in node_changes(desired, running, MODEL, "512m") if c.action != "none"]
    assert (change.node_id, change.action, change.removed) == (1, "restart", ("custom.plugin", "log.cleaner.threads"))
    assert change.removed_dynamic == ("log.cleaner.threads",)


def test_the_manual_rolling_update_annotation_on_a_pool_or_the_kafka_restarts_its_nodes() -> None:
    kafka, pools = example()
    annotated = [
        Resource.from_json(
            {
                "kind": "KafkaNodePool",
                "metadata": {
                    "name": p.name,
                    "namespace": "ns",
                    "labels": dict(p.labels),
                    "annotations": {MANUAL_ROLLING_UPDATE: "true"} if p.name == "controller" else {},
                },
                "spec": dict(p.spec),
            }
        )
        for p in pools
    ]
    desired = desired_cluster(kafka, annotated, MODEL)
    running = running_nodes(desired)
    restarted = {c.node_id: c.reasons for c in node_changes(desired, running, MODEL, "512m") if c.action == "restart"}
    assert restarted == {i: {RestartReason.MANUAL_ROLLING_UPDATE} for i in (3, 4, 5)}
    assert [(r.name if r else None, a) for r, a in desired.manual_annotations()] == [
        ("controller", (MANUAL_ROLLING_UPDATE, "true"))
    ]
    whole = desired_cluster(
        Resource.from_json(
            {
                "kind": "Kafka",
                "metadata": {"name": "my-cluster", "namespace": "ns", "annotations": {MANUAL_ROLLING_UPDATE: "true"}},
                "spec": dict(kafka.spec),
            }
        ),
        pools,
        MODEL,
    )
    assert whole.manual_roll_nodes() == {0, 1, 2, 3, 4, 5}


def test_new_brokers_are_added_and_what_cannot_be_done_safely_is_a_warning() -> None:
    kafka, pools = example()
    now = desired_cluster(kafka, pools, MODEL)
    running = running_nodes(now)
    grown = [with_spec(p, replicas=4) for p in pools]
    plan = scaling(
        desired_cluster(
            kafka, grown, MODEL, {p: [n.node_id for n in now.nodes if n.pool == p] for p in ("broker", "controller")}
        ),
        running,
    )
    assert [n.name for n in plan.add] == ["my-cluster-broker-6"]
    assert [c.message for c in plan.warnings] == [
        "Adding nodes [my-cluster-controller-7] is not supported yet: the KRaft quorum's voters are fixed when a "
        "sparklink cluster is created. They were not started."
    ]
    shrunk = [with_spec(p, replicas=2) if p.name == "controller" else p for p in pools]
    plan = scaling(desired_cluster(kafka, shrunk, MODEL, {"broker": [0, 1, 2], "controller": [3, 4, 5]}), running)
    assert not plan.add and "Removing nodes [my-cluster-controller-5] is not supported yet" in str(
        plan.warnings[0].message
    )


def test_bootstrap_service_names_of_a_known_kafka_become_its_listener_addresses() -> None:
    kafka, _ = example()
    ready = Resource.from_json(
        {
            "kind": "Kafka",
            "metadata": {"name": "my-cluster", "namespace": "ns"},
            "spec": dict(kafka.spec),
            "status": {"listeners": [{"name": "plain", "bootstrapServers": "127.0.0.1:1111,127.0.0.1:2222"}]},
        }
    )
    kafkas = {("ns", "my-cluster"): ready}

    def find(ns: str, name: str) -> Resource | None:
        return kafkas.get((ns, name))

    assert bootstrap.resolve("my-cluster-kafka-bootstrap:9092", "ns", find) == "127.0.0.1:1111,127.0.0.1:2222"
    assert bootstrap.resolve("my-cluster-kafka-bootstrap.ns.svc:9092,other:9092", "x", find) == (
        "127.0.0.1:1111,127.0.0.1:2222,other:9092"
    )
    assert bootstrap.resolve("unknown-kafka-bootstrap:9092", "ns", find) == "unknown-kafka-bootstrap:9092"
    with pytest.raises(ReconcileFailure, match="has no ready address for listener 'tls'") as failure:
        bootstrap.resolve("my-cluster-kafka-bootstrap:9093", "ns", find)
    assert failure.value.retriable
    with pytest.raises(ReconcileFailure, match="has no listener on port 9094"):
        bootstrap.resolve("my-cluster-kafka-bootstrap:9094", "ns", find)


@pytest.mark.parametrize(
    ("listeners", "message"),
    [
        (
            [{"name": "a", "port": 9093, "tls": False, "authentication": {"type": "tls"}}],
            "Listener configuration is not valid: [listener a cannot use tls type authentication with disabled TLS "
            "encryption]",
        ),
        (
            [{"name": "a", "port": 9092, "tls": False}, {"name": "a", "port": 9093, "tls": True}],
            "Listener configuration is not valid: [every listener needs to have a unique name]",
        ),
        (
            [{"name": "a", "port": 9404, "tls": False}],
            "Listener configuration is not valid: [port 9404 is forbidden and cannot be used]",
        ),
        (
            [{"name": "a", "port": 9092, "tls": False, "authentication": {"type": "custom"}}],
            "Kafka ns/my-cluster has no listener sparklink can serve",
        ),
    ],
)
def test_listeners_follow_strimzis_validation(listeners: list[dict[str, Any]], message: str) -> None:
    kafka, pools = example()
    bad = with_spec(kafka, kafka={**kafka.spec["kafka"], "listeners": listeners})
    with pytest.raises(ReconcileFailure) as refused:
        desired_cluster(bad, pools, MODEL)
    assert refused.value.message.startswith(message)


def test_tls_and_scram_listeners_are_served_and_custom_authentication_is_a_warning() -> None:
    kafka, pools = example()
    listeners = [
        {"name": "mtls", "port": 9093, "tls": True, "authentication": {"type": "tls"}},
        {"name": "scram", "port": 9094, "tls": False, "authentication": {"type": "scram-sha-512"}},
        {"name": "oidc", "port": 9095, "tls": True, "authentication": {"type": "custom", "sasl": True}},
    ]
    desired = desired_cluster(with_spec(kafka, kafka={**kafka.spec["kafka"], "listeners": listeners}), pools, MODEL)
    assert [(lst.name, lst.authentication) for lst in desired.served_listeners] == [
        ("mtls", "tls"),
        ("scram", "scram-sha-512"),
    ]
    (note,) = [c for c in desired.warnings if c.reason == "UnsupportedListener"]
    assert note.message == (
        "Listener 'oidc' (port 9095) uses custom authentication, which sparklink does not serve; it is not served. "
        "Use authentication type tls or scram-sha-512."
    )


def test_a_cluster_made_by_an_earlier_sparklink_shows_only_its_plain_listeners_in_status() -> None:
    kafka, pools = example()
    listeners = [
        {"name": "plain", "port": 9092, "tls": False},
        {"name": "tls", "port": 9093, "tls": True},
        {"name": "scram", "port": 9094, "tls": False, "authentication": {"type": "scram-sha-512"}},
    ]
    desired = desired_cluster(with_spec(kafka, kafka={**kafka.spec["kafka"], "listeners": listeners}), pools, MODEL)
    # Its one PLAINTEXT listener serves no TLS and no authentication: a client told otherwise could not connect.
    found = listeners_status(desired, {PLAIN_LISTENERS: (("127.0.0.1", 1111), ("127.0.0.1", 2222))})
    assert [(s.name, s.bootstrap_servers) for s in found] == [("plain", "127.0.0.1:1111,127.0.0.1:2222")]


def test_simple_authorization_and_its_super_users() -> None:
    kafka, pools = example()
    spec = {**kafka.spec["kafka"], "authorization": {"type": "simple", "superUsers": ["CN=admin", "bob"]}}
    desired = desired_cluster(with_spec(kafka, kafka=spec), pools, MODEL)
    assert desired.authorization is not None
    assert desired.authorization.principals() == ["User:CN=admin", "User:bob"]
    for bad in (["CN=admin\nauthorizer.class.name=x"], ["a;User:b"]):
        spec = {**kafka.spec["kafka"], "authorization": {"type": "simple", "superUsers": bad}}
        with pytest.raises(ReconcileFailure, match=re.escape("invalid spec.kafka.authorization.superUsers")):
            desired_cluster(with_spec(kafka, kafka=spec), pools, MODEL)
    spec = {**kafka.spec["kafka"], "authorization": {"type": "custom", "authorizerClass": "x.Y"}}
    desired = desired_cluster(with_spec(kafka, kafka=spec), pools, MODEL)
    assert desired.authorization is None
    assert any("authorization of type custom is not supported" in (c.message or "") for c in desired.warnings)


def test_nodes_with_certificates_of_an_older_ca_generation_restart_and_unknown_ones_are_left() -> None:
    from dataclasses import replace

    from sparklink.operator.model.certificate_authority import Authorities, Authority

    kafka, pools = example()
    authority = Authority(b"cert", b"key", 1, 0)
    desired = replace(
        desired_cluster(kafka, pools, MODEL), cas=Authorities(authority, replace(authority, cert_generation=0))
    )
    running = running_nodes(desired)
    running[0] = replace(running[0], ca_generations=(0, 0))  # started before the cluster CA's renewal
    running[1] = replace(running[1], ca_generations=(1, 0))  # already renewed
    changes = {c.node_id: c for c in node_changes(desired, running, MODEL, "512m")}
    assert changes[0].reasons == {RestartReason.CA_CERT_HAS_OLD_GENERATION}
    assert {i: c.action for i, c in changes.items() if i != 0} == dict.fromkeys((1, 2, 3, 4, 5), "none")
