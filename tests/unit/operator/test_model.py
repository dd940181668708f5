"""The pure model: resources -> desired connectors and worker settings, as Strimzi maps them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from sparklink.operator.hosting.kubernetes import desired_objects
from sparklink.operator.model import workers
from sparklink.operator.model.conditions import REASON_INVALID_RESOURCE, ReconcileFailure
from sparklink.operator.model.connectors import from_kafka_connector, from_mirror_maker_2
from sparklink.operator.model.resources import Resource

DATA = Path(__file__).parent.parent.parent / "data" / "strimzi"


def resource(path: str) -> Resource:
    body = yaml.safe_load((DATA / path).read_text())
    body["metadata"].update(namespace="ns", uid="uid-1", generation=1)
    return Resource.from_json(body)


def test_strimzis_example_connector_maps_to_connects_config() -> None:
    desired = from_kafka_connector(resource("source-connector.yaml"))
    assert desired.name == "my-source-connector"
    assert desired.connect_config() == {
        "file": "/opt/kafka/LICENSE",
        "topic": "my-topic",
        "tasks.max": "2",
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
    }
    assert desired.state is None and desired.target_state == "running"
    assert not desired.needs_reconfiguring({**desired.connect_config(), "name": "my-source-connector"})
    assert desired.needs_reconfiguring({**desired.connect_config(), "name": "my-source-connector", "extra": "1"})


def test_forbidden_connector_options_are_dropped_and_reported() -> None:
    r = Resource.from_json(
        {
            "kind": "KafkaConnector",
            "metadata": {"name": "c", "namespace": "ns"},
            "spec": {
                "class": "datagen",
                "tasksMax": 1,
                "config": {"tasks.max": 5, "Name": "x", "enabled": True, "rate": 1.0},
            },
        }
    )
    desired = from_kafka_connector(r)
    assert desired.ignored_options == ("tasks.max", "Name")
    assert desired.config == {"enabled": "true", "rate": "1.0"}


def test_strimzis_example_mirror_maker_2_gives_source_and_checkpoint_connectors() -> None:
    mm2 = resource("kafka-mirror-maker-2.yaml")
    source, checkpoint = from_mirror_maker_2(mm2)
    assert source.name == "cluster-a->cluster-b.MirrorSourceConnector"
    assert source.class_name == "org.apache.kafka.connect.mirror.MirrorSourceConnector"
    assert checkpoint.name == "cluster-a->cluster-b.MirrorCheckpointConnector"
    assert source.config["source.cluster.alias"] == "cluster-a"
    assert source.config["target.cluster.bootstrap.servers"] == "cluster-b-kafka-bootstrap:9092"
    assert source.config["target.cluster.security.protocol"] == "PLAINTEXT"
    assert source.config["topics"] == ".*" and source.config["groups"] == ".*"
    assert source.config["replication.factor"] == "-1"
    assert checkpoint.config["sync.group.offsets.enabled"] == "false"
    settings = workers.from_resource(mm2)
    assert (settings.group_id, settings.config_topic) == ("my-mirror-maker-2-group", "__my-mirror-maker-2-config")
    assert settings.config["plugin.discovery"] == "service_load"


def test_worker_settings_drop_strimzis_reserved_prefixes() -> None:
    connect = resource("kafka-connect.yaml")
    raw = dict(connect.spec)
    raw["config"] = {
        **raw["config"],
        "rest.port": 9,
        "ssl.protocol": "TLSv1.3",
        "ssl.keystore.location": "/x",
        "group.id": "g",
    }
    settings = workers.from_resource(
        Resource.from_json({"kind": "KafkaConnect", "metadata": {"name": "c"}, "spec": raw})
    )
    assert settings.ignored_options == ("rest.port", "ssl.keystore.location", "group.id")
    props = settings.properties()
    assert props["ssl.protocol"] == "TLSv1.3" and props["group.id"] == "my-connect-group"
    assert props["key.converter"] == "org.apache.kafka.connect.json.JsonConverter"


def test_kubernetes_objects_carry_strimzis_names_and_an_owner_reference() -> None:
    connect = resource("kafka-connect.yaml")
    objects = desired_objects(connect, workers.from_resource(connect), "img")
    assert objects["Deployment"]["metadata"]["name"] == "my-connect-cluster-connect"
    assert objects["Service"]["metadata"]["name"] == "my-connect-cluster-connect-api"
    assert objects["ConfigMap"]["metadata"]["name"] == "my-connect-cluster-connect-config"
    for obj in objects.values():
        assert obj["metadata"]["ownerReferences"] == [connect.owner_reference(controller=True)]
    assert objects["Deployment"]["spec"]["replicas"] == 1


def test_any_replica_count_makes_one_distributed_group_whose_pods_advertise_their_own_address() -> None:
    def scaled(replicas: int) -> Resource:
        spec = {**resource("kafka-connect.yaml").spec, "replicas": replicas}
        return dataclasses.replace(resource("kafka-connect.yaml"), spec=spec)

    one, connect = workers.from_resource(scaled(1)), scaled(3)
    settings = workers.from_resource(connect)
    assert one.properties()["sparklink.worker.mode"] == settings.properties()["sparklink.worker.mode"] == "distributed"
    # The replica count is no worker setting: scaling between one worker and more restarts none of them.
    assert one.properties() == settings.properties() and one.fingerprint() == settings.fingerprint()
    objects = desired_objects(connect, settings, "img")
    assert objects["Deployment"]["spec"]["replicas"] == 3
    assert "sparklink.worker.mode=distributed" in objects["ConfigMap"]["data"]["kafka-connect.properties"]
    container = objects["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}} in container["env"]
    assert "rest.advertised.host.name=$POD_IP" in container["command"][-1]


def test_negative_replicas_are_refused_before_any_worker_is_touched() -> None:
    connect = dataclasses.replace(
        resource("kafka-connect.yaml"), spec={**resource("kafka-connect.yaml").spec, "replicas": -1}
    )
    with pytest.raises(ReconcileFailure) as refused:
        workers.from_resource(connect)
    assert refused.value.reason == REASON_INVALID_RESOURCE
    assert "spec.replicas -1: it must be 0 or more" in str(refused.value)
