"""The lake sink on the real stack: records from Kafka land as Parquet in topic/date/hour directories."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import Producer

from sparklink.clients.settings import client_config
from sparklink.platform.kafka import KafkaCluster
from tests.conftest import WorkerFactory
from tests.helpers import create_topic, task_states, unique, wait_for

TEN = int(datetime(2024, 3, 1, 10, 15, tzinfo=UTC).timestamp() * 1000)
ELEVEN = int(datetime(2024, 3, 1, 11, 45, tzinfo=UTC).timestamp() * 1000)


def _produce(bootstrap: str, topic: str, records: list[tuple[str, str, int]]) -> None:
    producer = Producer(client_config(bootstrap))
    for key, value, timestamp in records:
        producer.produce(topic, value=value.encode(), key=key.encode(), timestamp=timestamp)
    assert producer.flush(30) == 0


def _count(spark: Any, path: Path) -> int:
    if not (path / "_SUCCESS").exists():  # the first batch's files are committed
        return 0
    return int(spark.read.parquet(str(path)).count())


def test_lake_sink_writes_partitioned_parquet(
    kafka: KafkaCluster, spark: Any, worker_factory: WorkerFactory, tmp_path: Path
) -> None:
    worker = worker_factory()
    topic, lake = unique("events"), tmp_path / "lake"
    create_topic(kafka.bootstrap_servers, topic, partitions=2)
    records = [(f"k{n}", f"v{n}", TEN if n % 3 else ELEVEN) for n in range(60)]
    _produce(kafka.bootstrap_servers, topic, records)
    config = {
        "connector.class": "lake-sink",
        "topics": topic,
        "path": str(lake),
        "partition.by": "topic,date,hour",
        "roll.interval.seconds": "1",
        "value.format": "string",
        "tasks.max": "3",
    }
    response = httpx.post(f"{worker.url}/connectors", json={"name": "lake", "config": config}, timeout=60)
    assert response.status_code == 201, response.text
    # One task whatever tasks.max says: it alone appends into the directory.
    wait_for(lambda: task_states(worker.url, "lake") == ["RUNNING"], 60, "the lake task")
    wait_for(lambda: _count(spark, lake) >= 60, 90, "60 rows in the lake")
    assert _count(spark, lake) == 60

    hours = {p.relative_to(lake).as_posix() for p in lake.glob("*/*/*") if p.is_dir()}
    assert hours == {f"topic={topic}/date=2024-03-01/hour=10", f"topic={topic}/date=2024-03-01/hour=11"}
    # The records were all waiting when the query started: one roll, so one file per directory.
    assert all(len(list((lake / h).glob("*.parquet"))) == 1 for h in hours)
    rows = spark.read.parquet(str(lake)).collect()
    assert sorted((r["key"].decode(), r["value"], r["hour"]) for r in rows) == sorted(
        (k, v, 10 if ts == TEN else 11) for k, v, ts in records
    )
    assert {r["topic"] for r in rows} == {topic}
    assert sorted((r["partition"], r["offset"]) for r in rows) == sorted(
        (p, o) for p in (0, 1) for o in range(sum(1 for r in rows if r["partition"] == p))
    )
