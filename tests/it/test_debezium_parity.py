"""Debezium's PostgreSQL connector on sparklink and on Apache Connect 4.3.1, record by record and offset by
offset (issue 30: "the same plugin jars on Apache Connect ... produce the same topics, keys, values and
headers" and "kill -9 ... the stored source offsets are the ones Apache Connect writes").

One Apache Connect worker (the reference peer, from the Maven jars) and one `sparklink worker` process serve
the module, both with the published Debezium 3.6.1.Final jars of `.cache/plugins` on their plugin.path. Each
test runs the same connector config (same connector name, same `topic.prefix`, JsonConverter with schemas)
on both at once against one table of the session's PostgreSQL. Only three settings differ between the two:
the replication slot and the publication (each run needs its own, or the two would take each other's
changes) and the replacement of a RegexRouter that sends each run to a topic of its own (the two share one
broker). Running both at once means both stream the very same WAL transactions, so a change event's
`source.lsn`, `source.txId`, `source.ts_ms` and `source.sequence` must match exactly; what may differ is
listed in `_comparable`, each with its reason.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, TopicPartition

from sparklink.clients.settings import client_config
from sparklink.platform.kafka import KafkaCluster
from tests.conftest import worker_props
from tests.helpers import read_topic, topic_size, unique, wait_for
from tests.it.postgres import Postgres, postgres_server  # noqa: F401 (the session fixture)
from tests.support.connect_peer import ConnectPeer
from tests.support.java_plugins import debezium_postgres_config, plugin_dir, plugins_root
from tests.worker_process import WorkerProcess

pytestmark = pytest.mark.kafka

# Both workers write offsets every second, so a test need not wait Connect's default minute for them.
FLUSH = {"offset.flush.interval.ms": "1000"}
RUN_ID = "__debezium.context.runId"


class Sparklink:
    """The module's sparklink worker, which the kill -9 test replaces with a new process on the same topics."""

    def __init__(self, props: dict[str, Any], base: Path) -> None:
        self.props, self.base = props, base
        self.started: list[WorkerProcess] = []

    @property
    def current(self) -> WorkerProcess:
        return self.started[-1]

    def start(self) -> WorkerProcess:
        worker = WorkerProcess({**self.props, "rest.port": 0}, self.base / f"run-{len(self.started)}", "INFO")
        self.started.append(worker)
        return worker.start()

    def offsets_topic(self) -> str:
        return str(self.props["offset.storage.topic"])


@pytest.fixture(scope="module")
def peer(kafka: KafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectPeer]:
    plugin_dir("debezium-connector-postgres")  # fail early, saying what to run
    # plugin.path: the directory that holds Debezium's plugin directory, as a user's Connect install has it.
    overrides = {"plugin.path": str(plugins_root()), **FLUSH}
    started = ConnectPeer(
        tmp_path_factory.mktemp("apache-connect"), kafka.bootstrap_servers, unique("apache"), overrides=overrides
    )
    try:
        yield started.start(timeout=240)
    finally:
        started.stop()


@pytest.fixture(scope="module")
def sparklink(kafka: KafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sparklink]:
    group = unique("sparklink-dbz")
    base = tmp_path_factory.mktemp(group)
    props = worker_props(kafka, group, base / "state", **{"plugin.path": str(plugins_root()), **FLUSH})
    workers = Sparklink(props, base)
    try:
        workers.start()
        yield workers
    finally:
        for worker in workers.started:
            worker.stop()


def _config(postgres: Postgres, prefix: str, table: str, run: str) -> dict[str, str]:
    """The connector config, the same on both workers but for the slot, the publication and the topic."""
    slot = f"{prefix.replace('-', '_')}_{run}"
    return {
        **debezium_postgres_config(postgres, prefix, table, slot=slot, schemas=True),
        # A header from Apache's InsertHeader (Debezium itself adds none), so headers are compared too.
        "transforms": "origin,route",
        "transforms.origin.type": "org.apache.kafka.connect.transforms.InsertHeader",
        "transforms.origin.header": "origin",
        "transforms.origin.value.literal": "debezium",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "(.*)",
        "transforms.route.replacement": f"$1.{run}",
    }


def _status(url: str, name: str) -> dict[str, Any]:
    response = httpx.get(f"{url}/connectors/{name}/status", timeout=30)
    return response.json() if response.status_code == 200 else {}


def _running(url: str, name: str) -> bool:
    status = _status(url, name)
    states = [status.get("connector", {}).get("state"), *(t["state"] for t in status.get("tasks", []))]
    if "FAILED" in states:
        raise AssertionError(f"{name} on {url} failed: {json.dumps(status)[:3000]}")
    return states == ["RUNNING", "RUNNING"]


def _start(urls: dict[str, str], name: str, configs: dict[str, dict[str, str]]) -> None:
    for run, url in urls.items():
        response = httpx.put(f"{url}/connectors/{name}/config", json=configs[run], timeout=120)
        assert response.status_code == 201, response.text
    for run, url in urls.items():
        wait_for(lambda: _running(url, name), 240, f"the Debezium connector and its task RUNNING on {run}")  # noqa: B023


def _cleanup(postgres: Postgres, urls: dict[str, str], name: str, prefix: str) -> None:
    """Delete the connector on both workers, then drop the slots (which would hold WAL for the session) and
    the publications Debezium created."""
    for url in urls.values():
        httpx.delete(f"{url}/connectors/{name}", timeout=60)
    for run in urls:
        ident = f"{prefix.replace('-', '_')}_{run}"
        wait_for(lambda: postgres.drop_slot(ident), 120, f"the replication slot {ident} dropped")  # noqa: B023
        postgres.execute(f"DROP PUBLICATION IF EXISTS {ident}")


def _records(kafka: KafkaCluster, topic: str, count: int) -> list[Any]:
    records = read_topic(kafka.bootstrap_servers, topic, count, timeout=180)
    return sorted(records, key=lambda r: (r.partition(), r.offset()))


def _comparable(record: Any) -> tuple[Any, Any, list[tuple[str, bytes | None]]]:
    """A record's key, value and headers as JSON, without the fields that legitimately differ between the two
    runs of the same connector:

    - the envelope's `ts_ms`, `ts_us`, `ts_ns`: when Debezium handled the event, a clock reading of each run;
    - for snapshot reads (`op` "r") only, `source.ts_ms|ts_us|ts_ns`, `source.txId`, `source.lsn`,
      `source.sequence`: each run snapshots in a transaction of its own, started at its own time at the WAL
      position where its own slot was created. Change events (c, u, d) come from the one WAL both runs
      stream, so their source block is compared whole.
    - the header `__debezium.context.runId`: a UUID Debezium draws each time a task starts (its
      CdcSourceTaskContext), so it differs between any two runs; it must be there and be a UUID.
    The schemas (JsonConverter with schemas.enable) and every other header are compared whole.
    """
    key = json.loads(record.key()) if record.key() is not None else None
    value = json.loads(record.value()) if record.value() is not None else None
    if value is not None:
        payload = value["payload"]
        for field in ("ts_ms", "ts_us", "ts_ns"):
            payload.pop(field, None)
        if payload["op"] == "r":
            for field in ("ts_ms", "ts_us", "ts_ns", "txId", "lsn", "sequence"):
                payload["source"].pop(field, None)
    headers: list[tuple[str, bytes | None]] = []
    for name, raw in record.headers() or []:
        if name == RUN_ID:
            uuid.UUID(raw.decode())  # present and well formed; its value is each task start's own
            raw = b"<a run id>"
        headers.append((name, raw))
    return key, value, headers


def _offsets(kafka: KafkaCluster, topic: str, name: str) -> list[tuple[bytes, Any]]:
    """Every record of the worker's offsets topic whose key names connector `name`, in write order per
    partition: (the raw key, the value as JSON)."""
    consumer = Consumer(client_config(kafka.bootstrap_servers, **{"group.id": unique("offsets")}))
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        assigned = [TopicPartition(topic, p, 0) for p in partitions]
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in partitions}
        consumer.assign(assigned)
        out: list[tuple[bytes, Any]] = []
        positions = {p: 0 for p in partitions}

        def caught_up() -> bool:
            for message in consumer.consume(500, timeout=1):
                if message.error() is None:
                    positions[message.partition()] = message.offset() + 1
                    key = message.key()
                    if key is not None and json.loads(key)[0] == name:
                        out.append((key, json.loads(message.value()) if message.value() is not None else None))
            return all(positions[p] >= ends[p] for p in partitions)

        wait_for(caught_up, 60, f"the offsets topic {topic} read to its end")
        return out
    finally:
        consumer.close()


def _same_last_offsets(
    kafka: KafkaCluster, peer: ConnectPeer, sparklink: Sparklink, name: str
) -> tuple[tuple[bytes, Any], tuple[bytes, Any]]:
    """The last offset record of connector `name` in Apache Connect's and in sparklink's offsets topic, once
    the two values are equal (each worker commits its task's offsets every second)."""
    last: dict[str, list[tuple[bytes, Any]]] = {}

    def same() -> bool:
        last["apache"] = _offsets(kafka, f"{peer.group_id}-offsets", name)
        last["sparklink"] = _offsets(kafka, sparklink.offsets_topic(), name)
        return bool(last["apache"] and last["sparklink"] and last["apache"][-1] == last["sparklink"][-1])

    def explain() -> str:
        return "; ".join(f"{run}: {records[-3:]}" for run, records in last.items())

    wait_for(same, 120, "the same last source offset in both offsets topics", interval=1, explain=explain)
    return last["apache"][-1], last["sparklink"][-1]


def _table(postgres: Postgres, table: str) -> None:
    # Types whose JSON forms differ in shape (a decimal as base64 bytes, a timestamp as micros, a boolean).
    postgres.execute(
        f"CREATE TABLE {table} (id INT PRIMARY KEY, name TEXT NOT NULL, qty INT, price NUMERIC(8,2),"
        " ok BOOLEAN, at TIMESTAMP)"
    )
    postgres.execute(f"ALTER TABLE {table} REPLICA IDENTITY FULL")  # whole rows before updates and deletes


def test_debezium_on_sparklink_writes_the_records_and_offsets_apache_connect_writes(
    kafka: KafkaCluster, peer: ConnectPeer, sparklink: Sparklink, postgres: Postgres
) -> None:
    table, prefix, name = unique("parity").replace("-", "_"), unique("dbzp"), unique("inventory")
    _table(postgres, table)
    postgres.execute(
        f"INSERT INTO {table} VALUES (1, 'apple', 3, 1.25, true, '2026-01-02 03:04:05.123456'),"
        " (2, 'pear', 5, 0.50, false, NULL), (3, 'plum', NULL, NULL, NULL, '1999-12-31 23:59:59')"
    )
    urls = {"apache": peer.url, "sparklink": sparklink.current.url}
    configs = {run: _config(postgres, prefix, table, run) for run in urls}
    topics = {run: f"{prefix}.public.{table}.{run}" for run in urls}
    try:
        _start(urls, name, configs)
        for run in urls:
            wait_for(lambda: topic_size(kafka.bootstrap_servers, topics[run]) >= 3, 180, f"{run}'s snapshot")  # noqa: B023
        # Streaming starts once each snapshot is done; both runs read these transactions from the WAL.
        postgres.execute(f"INSERT INTO {table} VALUES (4, 'fig', 9, 12.00, true, now())")
        postgres.execute(f"UPDATE {table} SET qty = 4, price = 1.30 WHERE id = 1")
        postgres.execute(f"DELETE FROM {table} WHERE id = 2")  # a delete event, then a tombstone
        postgres.execute(
            f"BEGIN; INSERT INTO {table} VALUES (5, 'kiwi', 1, 0.99, false, NULL);"
            f" UPDATE {table} SET name = 'damson' WHERE id = 3; COMMIT"
        )
        expected = 3 + 1 + 1 + 2 + 2
        records = {run: _records(kafka, topics[run], expected) for run in urls}
        assert [len(r) for r in records.values()] == [expected, expected]
        apache = [_comparable(r) for r in records["apache"]]
        ours = [_comparable(r) for r in records["sparklink"]]
        ops = [v["payload"]["op"] if v else None for _, v, _ in apache]
        assert ops == ["r", "r", "r", "c", "u", "d", None, "c", "u"], ops  # the scenario happened as intended
        # Headers are compared too: Debezium's own context headers and the one InsertHeader adds.
        assert ("origin", b"debezium") in ours[0][2]
        assert ("__debezium.context.connectorName", b"postgresql") in ours[0][2], ours[0][2]
        for index, (theirs, mine) in enumerate(zip(apache, ours, strict=True)):
            assert mine == theirs, f"record {index} differs:\napache:    {theirs}\nsparklink: {mine}"
        # The change events' WAL positions and transaction ids are compared, not ignored: both runs read one WAL.
        assert ours[3][1]["payload"]["source"]["lsn"] == apache[3][1]["payload"]["source"]["lsn"]

        # The stored source offsets: the same key bytes and, once both have committed the last change, the
        # same value (Debezium's lsn, lsn_proc, lsn_commit, txId, ts_usec, messageType).
        (their_key, their_value), (my_key, my_value) = _same_last_offsets(kafka, peer, sparklink, name)
        assert my_key == their_key == json.dumps([name, {"server": prefix}], separators=(",", ":")).encode()
        assert my_value == their_value
        assert {"lsn", "lsn_proc", "lsn_commit", "txId", "ts_usec"} <= set(my_value), my_value
    finally:
        _cleanup(postgres, urls, name, prefix)


class Writer(threading.Thread):
    """Inserts rows 100, 101, ... each in a transaction of its own until stopped (or `limit` rows)."""

    def __init__(self, postgres: Postgres, table: str, limit: int = 3000) -> None:
        super().__init__(daemon=True)
        self.postgres, self.table, self.limit = postgres, table, limit
        self.inserted: list[int] = []
        self.halt = threading.Event()

    def run(self) -> None:
        with self.postgres.connect() as conn:
            for key in range(100, 100 + self.limit):
                if self.halt.is_set():
                    return
                conn.execute(f"INSERT INTO {self.table} VALUES ({key}, 'row', {key}, NULL, NULL, NULL)".encode())
                self.inserted.append(key)

    def stop(self) -> list[int]:
        self.halt.set()
        self.join(60)
        return self.inserted


def test_kill_9_of_sparklink_mid_stream_loses_no_change_event_and_its_offsets_are_apache_connects(
    kafka: KafkaCluster, peer: ConnectPeer, sparklink: Sparklink, postgres: Postgres
) -> None:
    table, prefix, name = unique("crash").replace("-", "_"), unique("dbzk"), unique("orders")
    _table(postgres, table)
    postgres.execute(
        f"INSERT INTO {table} VALUES (1, 'first', 1, NULL, NULL, NULL), (2, 'second', 2, NULL, NULL, NULL)"
    )
    urls = {"apache": peer.url, "sparklink": sparklink.current.url}
    configs = {run: _config(postgres, prefix, table, run) for run in urls}
    topics = {run: f"{prefix}.public.{table}.{run}" for run in urls}
    writer = Writer(postgres, table)
    try:
        _start(urls, name, configs)
        wait_for(lambda: topic_size(kafka.bootstrap_servers, topics["sparklink"]) >= 2, 180, "the snapshot")
        # Kill in the middle of the stream: sparklink has written some change events and the writer goes on.
        writer.start()
        wait_for(lambda: topic_size(kafka.bootstrap_servers, topics["sparklink"]) >= 2 + 50, 180, "changes flowing")
        sparklink.current.kill()
        at_kill = topic_size(kafka.bootstrap_servers, topics["sparklink"])
        inserted = writer.stop()
        assert at_kill < 2 + len(inserted), "the worker had caught up before the kill: not mid-stream"

        # A new worker process on the same internal topics resumes the connector from its stored offsets.
        restarted = sparklink.start()
        urls["sparklink"] = restarted.url
        wait_for(lambda: _running(restarted.url, name), 240, "the connector RUNNING on the new worker")
        records: list[Any] = []

        def keys(op: str) -> list[int]:
            values = [json.loads(r.value())["payload"] for r in records if r.value() is not None]
            return [v["after"]["id"] for v in values if v["op"] == op]

        def complete() -> bool:
            nonlocal records
            records = _records(kafka, topics["sparklink"], 2 + len(inserted))
            return set(keys("c")) >= set(inserted)

        wait_for(complete, 180, "every inserted row's change event in Kafka", explain=lambda: len(set(keys("c"))))
        assert sorted(keys("r")) == [1, 2]  # resumed from its offsets: no second snapshot
        assert set(keys("c")) == set(inserted)  # at least once: each row, duplicates allowed after the crash
        assert len(records) > at_kill  # the new worker wrote the rest

        # The offsets sparklink stored across the crash are the ones Apache Connect stored for the same WAL.
        (their_key, their_value), (my_key, my_value) = _same_last_offsets(kafka, peer, sparklink, name)
        assert my_key == their_key
        assert my_value == their_value and my_value["lsn_proc"] > 0, my_value
    finally:
        writer.stop()
        _cleanup(postgres, urls, name, prefix)
