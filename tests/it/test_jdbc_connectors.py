"""The JDBC connectors against a real PostgreSQL server, through the REST API, on the real broker and Spark."""

from __future__ import annotations

import json
from typing import Any

import httpx
import psycopg
from confluent_kafka import Producer

from sparklink.clients.settings import client_config
from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.assembly import RunningWorker
from tests.conftest import WorkerFactory
from tests.helpers import create_topic, read_topic, task_states, unique, wait_for
from tests.it.postgres import Postgres, postgres_server  # noqa: F401 - the `postgres` fixture


def _connection(pg: Postgres) -> dict[str, str]:
    return {"connection.url": pg.jdbc_url, "connection.user": pg.user, "connection.password": pg.password}


def _create(worker: RunningWorker, name: str, config: dict[str, str]) -> None:
    response = httpx.post(f"{worker.url}/connectors", json={"name": name, "config": config}, timeout=60)
    assert response.status_code == 201, response.text
    wait_for(lambda: task_states(worker.url, name) == ["RUNNING"], 60, f"{name} RUNNING")


def _rows(pg: Postgres, sql: str) -> list[tuple[Any, ...]]:
    try:
        return pg.query(sql)
    except psycopg.errors.UndefinedTable:
        return []


def _produce(bootstrap: str, topic: str, values: list[dict[str, Any] | None]) -> None:
    producer = Producer(client_config(bootstrap))
    for value in values:
        producer.produce(topic, value=None if value is None else json.dumps(value).encode())
    assert producer.flush(30) == 0


def test_jdbc_sink_upserts_by_key_and_inserts_every_record(
    kafka: KafkaCluster, worker_factory: WorkerFactory, postgres: Postgres
) -> None:
    worker = worker_factory()
    topic = unique("accounts")
    create_topic(kafka.bootstrap_servers, topic)
    first = [
        {"id": 1, "name": "ada", "balance": 10.5},
        {"id": 2, "name": "bob", "balance": 20.0},
        None,  # a tombstone: skipped
        {"id": 1, "name": "ada", "balance": 11.5},
    ]
    _produce(kafka.bootstrap_servers, topic, first)
    sink = {"connector.class": "jdbc-sink", "topics": topic, **_connection(postgres)}
    sink["value.schema"] = "id BIGINT, name STRING, balance DOUBLE"
    _create(worker, "upsert", {**sink, "insert.mode": "upsert", "pk.fields": "id"})
    _create(worker, "insert", {**sink, "table.name.format": "log_${topic}"})

    upserted = f'SELECT id, name, balance FROM "{topic}" ORDER BY id'
    # The same key twice in one batch ends as one row with the later value ...
    wait_for(lambda: _rows(postgres, upserted) == [(1, "ada", 11.5), (2, "bob", 20.0)], 90, "the first upserts")
    _produce(kafka.bootstrap_servers, topic, [{"id": 2, "name": "bob", "balance": 25.0}])
    # ... and a later batch updates the existing row.
    wait_for(lambda: _rows(postgres, upserted) == [(1, "ada", 11.5), (2, "bob", 25.0)], 60, "the update of id 2")
    logged = f'SELECT id, balance FROM "log_{topic}" ORDER BY balance'
    wait_for(lambda: len(_rows(postgres, logged)) == 4, 60, "every record inserted")
    assert _rows(postgres, logged) == [(1, 10.5), (1, 11.5), (2, 20.0), (2, 25.0)]
    # auto.create made the key the table's primary key.
    key = postgres.query(
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
        f"WHERE i.indrelid = '\"{topic}\"'::regclass AND i.indisprimary"
    )
    assert key == [("id",)]


def test_jdbc_source_picks_up_rows_inserted_later(
    kafka: KafkaCluster, worker_factory: WorkerFactory, postgres: Postgres
) -> None:
    worker = worker_factory()
    table = unique("orders").replace("-", "_")
    postgres.execute(
        f"CREATE TABLE {table} (id SERIAL PRIMARY KEY, item TEXT NOT NULL, price NUMERIC(10, 2), "
        "updated TIMESTAMPTZ NOT NULL DEFAULT now() - interval '1 hour')"
    )
    postgres.execute(f"INSERT INTO {table} (item, price) VALUES ('apple', 1.25), ('pear', 2.50), ('fig', 0.75)")
    source = {
        "connector.class": "jdbc-source",
        "table.whitelist": table,
        "poll.interval.ms": "200",
        **_connection(postgres),
    }
    _create(
        worker, "by-id", {**source, "mode": "incrementing", "incrementing.column.name": "id", "topic.prefix": "id-"}
    )
    _create(worker, "by-ts", {**source, "mode": "timestamp", "timestamp.column.name": "updated", "topic.prefix": "ts-"})
    assert [json.loads(r.value())["item"] for r in read_topic(kafka.bootstrap_servers, f"id-{table}", 3)] == [
        "apple",
        "pear",
        "fig",
    ]

    postgres.execute(f"INSERT INTO {table} (item, price) VALUES ('kiwi', 3.00), ('plum', 1.10)")
    records = read_topic(kafka.bootstrap_servers, f"id-{table}", 5)
    values = [json.loads(r.value()) for r in records]
    assert [(v["id"], v["item"], v["price"]) for v in values] == [
        (1, "apple", 1.25),
        (2, "pear", 2.5),
        (3, "fig", 0.75),
        (4, "kiwi", 3.0),
        (5, "plum", 1.1),
    ]
    assert all(r.key() is None for r in records)
    offsets = worker.stores.offsets
    wait_for(lambda: offsets.get("by-id") == [({"table": table}, {"incrementing": 5})], 30, "the stored id offset")

    # Timestamp mode: every row once, and the offset is the last timestamp in Confluent's form.
    stamped = read_topic(kafka.bootstrap_servers, f"ts-{table}", 5)
    assert sorted(json.loads(r.value())["id"] for r in stamped) == [1, 2, 3, 4, 5]
    (last,) = postgres.query(f"SELECT (extract(epoch FROM max(updated)) * 1000000)::bigint FROM {table}")[0]
    expected = {"timestamp": last // 1000, "timestamp_nanos": last % 1_000_000 * 1000}
    wait_for(lambda: offsets.get("by-ts") == [({"table": table}, expected)], 30, "the stored timestamp offset")
