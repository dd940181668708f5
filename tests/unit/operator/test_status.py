"""Typed statuses render to the JSON Strimzi writes: its field names, absent fields left out, NON_EMPTY lists
left out when empty, and a previous Kafka or KafkaNodePool status reads back as it was written."""

from __future__ import annotations

from datetime import UTC, datetime

from sparklink.operator.model.autorestart import AutoRestartStatus
from sparklink.operator.model.conditions import not_ready, ready, warning
from sparklink.operator.model.rendering import render
from sparklink.operator.model.status import (
    ConnectorPlugin,
    KafkaConnectorStatus,
    KafkaConnectStatus,
    KafkaMirrorMaker2Status,
    KafkaNodePoolStatus,
    KafkaStatus,
    ListenerAddress,
    ListenerStatus,
    UsedNodePoolStatus,
)

T0 = datetime(2026, 11, 22, 10, 0, 0, tzinfo=UTC)


def test_a_connect_status_renders_with_strimzis_names_and_leaves_out_what_is_absent() -> None:
    status = KafkaConnectStatus(
        conditions=[ready()],
        observed_generation=3,
        url="http://127.0.0.1:8083",
        connector_plugins=[ConnectorPlugin.from_json({"class": "a.B", "type": "source", "version": "1.0"})],
        replicas=1,
        label_selector="strimzi.io/cluster=c",
    )
    assert render(status) == {
        "conditions": [{"type": "Ready", "status": "True"}],
        "observedGeneration": 3,
        "url": "http://127.0.0.1:8083",
        "connectorPlugins": [{"class": "a.B", "type": "source", "version": "1.0"}],
        "replicas": 1,
        "labelSelector": "strimzi.io/cluster=c",
    }
    bare = KafkaConnectStatus(conditions=[not_ready("Creating", "starting")], label_selector="s")
    assert render(bare) == {
        "conditions": [{"type": "NotReady", "status": "True", "reason": "Creating", "message": "starting"}],
        "labelSelector": "s",
    }


def test_an_empty_plugin_list_stays_but_empty_mirror_maker_lists_go_as_in_strimzi() -> None:
    assert render(KafkaConnectStatus(connector_plugins=[])) == {"conditions": [], "connectorPlugins": []}
    assert render(KafkaMirrorMaker2Status(connectors=[], auto_restart_statuses=[])) == {"conditions": []}
    mm2 = KafkaMirrorMaker2Status(
        connectors=[{"name": "a->b.MirrorSourceConnector", "connector": {"state": "RUNNING"}}],
        auto_restart_statuses=[AutoRestartStatus(2, T0, "a->b.MirrorSourceConnector")],
    )
    assert render(mm2) == {
        "conditions": [],
        "connectors": [{"name": "a->b.MirrorSourceConnector", "connector": {"state": "RUNNING"}}],
        "autoRestartStatuses": [
            {
                "count": 2,
                "lastRestartTimestamp": "2026-11-22T10:00:00.000Z",
                "connectorName": "a->b.MirrorSourceConnector",
            }
        ],
    }


def test_a_connector_status_keeps_connects_json_as_sent() -> None:
    connect_json = {"name": "c", "connector": {"state": "RUNNING", "worker_id": "w"}, "tasks": [], "type": "source"}
    status = KafkaConnectorStatus(
        conditions=[ready(), warning("ForbiddenConfigOption", "ignored")],
        observed_generation=1,
        auto_restart=AutoRestartStatus(1, T0),
        connector_status=connect_json,
        tasks_max=1,
        topics=[],
    )
    assert render(status) == {
        "conditions": [
            {"type": "Ready", "status": "True"},
            {"type": "Warning", "status": "True", "reason": "ForbiddenConfigOption", "message": "ignored"},
        ],
        "observedGeneration": 1,
        "autoRestart": {"count": 1, "lastRestartTimestamp": "2026-11-22T10:00:00.000Z"},
        "connectorStatus": connect_json,
        "tasksMax": 1,
        "topics": [],
    }


def test_a_kafka_and_a_pool_status_read_back_as_they_were_written() -> None:
    kafka = KafkaStatus(
        observed_generation=2,
        listeners=[ListenerStatus("plain", [ListenerAddress("127.0.0.1", 9092)], "127.0.0.1:9092")],
        kafka_node_pools=[UsedNodePoolStatus("dual")],
        cluster_id="abc",
        operator_last_successful_version="sparklink-0.1",
        kafka_version="4.3.1",
        kafka_metadata_version="4.3-IV0",
    )
    written = render(kafka)
    assert written["listeners"] == [
        {"name": "plain", "addresses": [{"host": "127.0.0.1", "port": 9092}], "bootstrapServers": "127.0.0.1:9092"}
    ]
    assert render(KafkaStatus.from_json(written)) == written
    assert "listeners" not in render(KafkaStatus(listeners=[]))

    pool = KafkaNodePoolStatus(
        observed_generation=1, node_ids=[0, 1], cluster_id="abc", roles=["broker"], replicas=2, label_selector="s"
    )
    assert render(KafkaNodePoolStatus.from_json(render(pool))) == render(pool)
