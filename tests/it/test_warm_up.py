"""A worker's warm-up (execution/warm_up.py): it runs Spark's write path through a task pipeline (the
worker's converters and a transform) without sending a record, a sink's side of a pipeline (JSON values
parsed, transformed and rendered) without writing anything, reads the config topic once it exists, opens
a producer that sends nothing, and never fails the worker; and the Kafka sink input (columns, options) it
shares with a task's query."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.execution import kafka_io, warm_up
from tests.helpers import create_topic, topic_size, unique


@pytest.mark.parametrize(
    "converters",
    [
        {},
        {
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
        },
    ],
    ids=["default-converters", "worker-converters"],
)
def test_the_write_path_encodes_its_rows_through_a_task_pipeline_sends_none_and_begins_anew(
    spark: Any, kafka: KafkaCluster, tmp_path: Path, converters: dict[str, str]
) -> None:
    topic = unique("warm-write")
    create_topic(kafka.bootstrap_servers, topic)
    checkpoint = tmp_path / "warm-up"
    (checkpoint / "offsets").mkdir(parents=True)  # left by a start killed during its warm-up
    (checkpoint / "offsets" / "0").write_text("not an offset log entry")
    clients = KafkaClientSettings(kafka.bootstrap_servers)
    encoded = warm_up.write_path(spark, clients, topic, checkpoint, converters)
    assert encoded == warm_up.WRITE_ROWS
    assert topic_size(kafka.bootstrap_servers, topic) == 0
    assert not checkpoint.exists()


def test_the_sink_side_parses_transforms_and_renders_every_json_value(spark: Any) -> None:
    rendered = [json.loads(row.value) for row in warm_up.sink_rows(spark, 3).collect()]
    assert [(v["id"], v["name"], v["flag"], v["warmed"]) for v in rendered] == [
        (0, "name-0", True, "up"),
        (1, "name-1", False, "up"),
        (2, "name-2", True, "up"),
    ]
    assert all(len(v["payload"]) == 960 for v in rendered)
    assert warm_up.sink_path(spark) == warm_up.SINK_ROWS


def test_the_producer_path_finds_the_topics_partitions_and_sends_nothing(spark: Any, kafka: KafkaCluster) -> None:
    topic = unique("warm-produce")
    create_topic(kafka.bootstrap_servers, topic, partitions=3)
    clients = KafkaClientSettings(kafka.bootstrap_servers)
    assert warm_up.producer_path(spark, clients, topic) == 3
    assert topic_size(kafka.bootstrap_servers, topic) == 0


def test_the_reader_waits_for_the_config_topic_to_appear(
    spark: Any, kafka: KafkaCluster, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """On a fresh cluster the config store creates the topic while the warm-up runs."""
    topic = unique("warm-read")
    clients = KafkaClientSettings(kafka.bootstrap_servers)
    with caplog.at_level("INFO", logger="sparklink.worker.execution"):
        warming = warm_up.WarmUp(spark, clients, topic, tmp_path, kafka_io.Metadata(clients))
        create_topic(kafka.bootstrap_servers, topic)
        assert warming.wait()
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith(f"Spark's Kafka reader warmed up on {topic}") for m in messages), messages
    assert any(m.startswith("a sink's converter path warmed up") for m in messages), messages
    assert any(m.startswith("Spark's Kafka writer warmed up") for m in messages), messages
    assert any(m.startswith("the worker's Spark session is warmed up") for m in messages), messages


def test_a_topic_that_never_appears_ends_the_warm_up_without_an_error(
    spark: Any, kafka: KafkaCluster, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warm_up, "TOPIC_WAIT_S", 0.5)
    topic = unique("warm-absent")
    clients = KafkaClientSettings(kafka.bootstrap_servers)
    with caplog.at_level("INFO", logger="sparklink.worker.execution"):
        assert warm_up.WarmUp(spark, clients, topic, tmp_path, kafka_io.Metadata(clients)).wait()
    messages = [r.getMessage() for r in caplog.records]
    assert any(f"topic {topic} did not appear" in m for m in messages), messages
    assert not any(r.levelname in ("WARNING", "ERROR") for r in caplog.records), messages


def test_the_kafka_sink_gets_its_columns_in_order_and_headers_only_when_a_record_has_them(spark: Any) -> None:
    """`kafka_io.sink_input`, which the warm-up, a task's query and a batch write share."""
    framed = spark.sql(
        "SELECT 'x' AS extra, 1 AS partition, array() AS headers, 'v' AS value, 'k' AS key, 't' AS topic, 2 AS seq"
    )
    rows, options = kafka_io.sink_input(framed)
    assert rows.columns == ["topic", "key", "value", "headers", "partition"]
    assert options == {"includeHeaders": "true"}
    rows, options = kafka_io.sink_input(framed.drop("headers"), leave_out=("topic",))
    assert rows.columns == ["key", "value", "partition"]
    assert options == {}
