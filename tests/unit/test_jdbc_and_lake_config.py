"""JDBC and lake connectors without a database or Spark: URLs, validation, offsets, statements, roll cadence."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sparklink.connectors.jdbc.common import libpq_params, quote_name
from sparklink.connectors.jdbc.sink import JdbcSinkConnector, upsert_statement
from sparklink.connectors.jdbc.source import JdbcSourceConnector, offset_of, start_value
from sparklink.connectors.jdbc.stream import micros_of, timestamp_of
from sparklink.connectors.lake import ParquetSinkConnector

URL = "jdbc:postgresql://db.example:5433/shop?user=u&password=p%40ss&sslmode=require&prepareThreshold=0"


def test_jdbc_urls_become_libpq_parameters() -> None:
    assert libpq_params(URL) == {
        "host": "db.example",
        "port": "5433",
        "dbname": "shop",
        "user": "u",
        "password": "p@ss",
        "sslmode": "require",
    }
    assert libpq_params("jdbc:postgresql:shop") == {"host": "localhost", "port": "5432", "dbname": "shop"}
    assert libpq_params("jdbc:postgresql://[::1],h2:6000/d")["host"] == "::1,h2"
    with pytest.raises(ValueError, match="jdbc:postgresql:"):
        libpq_params("jdbc:mysql://h/d")


def test_table_names_are_quoted_per_part() -> None:
    assert quote_name("sales.orders-v1") == '"sales"."orders-v1"'
    assert quote_name('we"ird') == '"we""ird"'


def test_upsert_needs_key_fields() -> None:
    config = {
        "connector.class": "jdbc-sink",
        "connection.url": "jdbc:postgresql://h/d",
        "value.schema": "id INT, v STRING",
        "insert.mode": "upsert",
    }
    assert JdbcSinkConnector().validate(config)["pk.fields"]
    assert not JdbcSinkConnector().validate({**config, "pk.fields": "id"})["pk.fields"]


def test_upsert_statement_keeps_the_last_record_per_key() -> None:
    sql = upsert_statement("t", "t__stg", ["id", "name"], ["id"])
    assert sql == (
        'INSERT INTO "t" ("id", "name") SELECT DISTINCT ON ("id") "id", "name" FROM "t__stg" '
        'ORDER BY "id", "__kafka_offset" DESC ON CONFLICT ("id") DO UPDATE SET "name" = EXCLUDED."name"'
    )
    assert upsert_statement("t", "s", ["id"], ["id"]).endswith("DO NOTHING")


def test_source_needs_one_of_tables_and_query_and_the_mode_column() -> None:
    base = {"connector.class": "jdbc-source", "connection.url": "jdbc:postgresql://h/d", "topic.prefix": "p-"}
    both = JdbcSourceConnector().validate({**base, "mode": "incrementing", "table.whitelist": "a", "query": "SELECT 1"})
    assert both["query"] and both["incrementing.column.name"]
    fine = {**base, "mode": "timestamp", "table.whitelist": "a", "timestamp.column.name": "ts"}
    assert not any(JdbcSourceConnector().validate(fine).values())


def test_source_tables_are_split_over_tasks() -> None:
    connector = JdbcSourceConnector()
    connector.start({"table.whitelist": "a,b,c", "mode": "incrementing", "topic.prefix": "", "connection.url": URL})
    assert [t["tables"] for t in connector.task_configs(2)] == ["a,c", "b"]
    assert [t["tables"] for t in connector.task_configs(10)] == ["a", "b", "c"]


def test_source_offsets_follow_confluents_form() -> None:
    stamp = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    micros = micros_of(stamp)
    assert offset_of("timestamp", micros) == {"timestamp": 1714979289123, "timestamp_nanos": 123456000}
    assert offset_of("incrementing", 41) == {"incrementing": 41}
    resume = [({"table": "t"}, offset_of("timestamp", micros))]
    assert start_value("timestamp", {"table": "t"}, resume) == micros
    assert timestamp_of(micros, aware=True) == stamp
    assert timestamp_of(micros, aware=False) == stamp.replace(tzinfo=None)
    assert start_value("incrementing", {"table": "t"}, []) == -1
    assert start_value("timestamp", {"table": "other"}, resume) == 0
    before_epoch = micros_of(datetime(1969, 12, 31, 23, 59, 59, 999000))
    assert offset_of("timestamp", before_epoch) == {"timestamp": -1, "timestamp_nanos": 999000000}
    assert start_value("timestamp", {"table": "t"}, [({"table": "t"}, offset_of("timestamp", before_epoch))]) == (
        before_epoch
    )


def test_source_offset_alterations_are_checked() -> None:
    config = {"mode": "incrementing", "topic.prefix": "", "connection.url": URL}
    connector = JdbcSourceConnector()
    assert connector.alter_offsets(config, [({"table": "t"}, {"incrementing": 7}), ({"query": "query"}, None)])
    with pytest.raises(ValueError, match="incrementing"):
        connector.alter_offsets(config, [({"table": "t"}, {"incrementing": "7"})])
    with pytest.raises(ValueError, match="Partition"):
        connector.alter_offsets(config, [({"tbl": "t"}, {"incrementing": 7})])
    with pytest.raises(ValueError, match="timestamp_nanos"):
        connector.alter_offsets({**config, "mode": "timestamp"}, [({"table": "t"}, {"timestamp": 1})])


def test_lake_roll_interval_sets_the_batch_cadence_of_one_task() -> None:
    connector = ParquetSinkConnector()
    connector.start({"topics": "t", "path": "/lake", "roll.interval.seconds": "30"})
    (task,) = connector.task_configs(4)
    assert task["sparklink.max.batch.delay.ms"] == "30000"
    assert int(task["sparklink.min.records.per.batch"]) == 2**63 - 1
    connector.start({"topics": "t", "path": "/lake", "roll.interval.seconds": "0"})
    assert "sparklink.max.batch.delay.ms" not in connector.task_configs(1)[0]
    capped = {"topics": "t", "path": "/lake", "sparklink.max.records.per.batch": "500"}
    connector.start(capped)
    assert connector.task_configs(1)[0]["sparklink.min.records.per.batch"] == "500"


def test_lake_partition_levels_are_checked() -> None:
    errors = ParquetSinkConnector().validate({"path": "/lake", "partition.by": "topic,day"})
    assert "unknown partition level(s) day" in errors["partition.by"][0]
    assert ParquetSinkConnector().validate({"path": "/lake", "timezone": "Mars/Olympus"})["timezone"]
