"""Run table-driven transform cases through real pipelines on the local SparkSession.

Each `Case` is one Kafka record (key/value given as Python values, serialised as JSON, or as raw
bytes) plus a connector config.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparklink.worker.transforms.pipeline import compile_pipeline

JSON = "org.apache.kafka.connect.json.JsonConverter"
PKG = "org.apache.kafka.connect.transforms"
HEADERS = T.ArrayType(T.StructType([T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())]))
KAFKA = T.StructType(
    [
        T.StructField("key", T.BinaryType()),
        T.StructField("value", T.BinaryType()),
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("offset", T.LongType()),
        T.StructField("timestamp", T.TimestampType()),
        T.StructField("timestampType", T.IntegerType()),
        T.StructField("headers", HEADERS),
    ]
)
SCHEMALESS = {
    "key.converter": JSON,
    "key.converter.schemas.enable": "false",
    "value.converter": JSON,
    "value.converter.schemas.enable": "false",
    "errors.tolerance": "all",
}
UNSET = object()


@dataclass
class Case:
    name: str
    config: dict[str, str]
    value: Any = None
    key: Any = None
    expect: dict[str, Any] = field(default_factory=dict)
    topic: str = "test"
    partition: int = 0
    offset: int = 0
    timestamp: int | None = 1483425001864
    headers: list[tuple[str, bytes]] = field(default_factory=list)

    def __str__(self) -> str:
        return self.name


def encode(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    return json.dumps(value).encode()


def kafka_batch(spark: SparkSession, records: list[dict[str, Any]]) -> DataFrame:
    """A batch shaped like Spark's Kafka source (timestamps given as epoch ms, or None)."""
    schema = T.StructType([f if f.name != "timestamp" else T.StructField("millis", T.LongType()) for f in KAFKA.fields])
    rows = [
        (
            encode(r.get("key")),
            encode(r.get("value")),
            r.get("topic", "test"),
            r.get("partition", 0),
            r.get("offset", 0),
            r.get("timestamp"),
            0,
            list(r.get("headers", [])),
        )
        for r in records
    ]
    frame = spark.createDataFrame(rows, schema)
    return frame.select(*[F.timestamp_millis("millis").alias(c) if c == "timestamp" else F.col(c) for c in KAFKA.names])


RESULT_COLUMNS = ("offset", "topic", "key", "value", "headers", "key_schema", "value_schema", "error")


def normalize(records: DataFrame) -> DataFrame:
    """A pipeline's records with key, value, headers and schemas as JSON text."""
    cols = set(records.columns)

    def as_json(column: str) -> Any:
        return F.to_json(F.col(column).cast("variant"))

    pairs = F.transform("headers", lambda h: F.array(h.getField("key"), F.decode(h.getField("value"), "UTF-8")))
    return records.select(
        F.col("offset"),
        F.col("topic"),
        as_json("key").alias("key"),
        as_json("value").alias("value"),
        F.to_json(pairs).alias("headers"),
        (F.col("key_schema") if "key_schema" in cols else F.lit(None).cast("string")).alias("key_schema"),
        (F.col("value_schema") if "value_schema" in cols else F.lit(None).cast("string")).alias("value_schema"),
        F.lit(None).cast("string").alias("error"),
    )


def run_cases(spark: SparkSession, cases: list[Case], base: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """Results by case name: topic, key, value, headers, key_schema, value_schema, error (None if dropped).

    Cases with the same config share one pipeline and one batch (a record's offset says which case it
    is); each pipeline is collected on its own (one small job each, see conftest.py)."""
    groups: dict[str, list[Case]] = {}
    for case in cases:
        config = {**(SCHEMALESS if base is None else base), **case.config}
        groups.setdefault(json.dumps(config, sort_keys=True), []).append(case)
    out: dict[str, dict[str, Any]] = {}
    for key, group in groups.items():
        out.update(_run_group(spark, json.loads(key), group))
    return out


def _run_group(spark: SparkSession, config: dict[str, str], group: list[Case]) -> dict[str, dict[str, Any]]:
    pipeline = compile_pipeline(config, {}, "sink", "test-connector", 0)
    pipeline.cache_split = False
    records = [
        {
            "key": case.key,
            "value": case.value,
            "topic": case.topic,
            "partition": case.partition,
            # The offset tells the cases apart; a case asks for its own only when it is alone.
            "offset": case.offset if len(group) == 1 else i,
            "timestamp": case.timestamp,
            "headers": case.headers,
        }
        for i, case in enumerate(group)
    ]
    outcome = pipeline.run(kafka_batch(spark, records).coalesce(1))
    frames = [normalize(outcome.records)]
    if outcome.errant is not None:
        frames.append(
            outcome.errant.select(
                F.col("original.offset").alias("offset"),
                *[F.lit(None).cast("string").alias(c) for c in RESULT_COLUMNS if c not in ("offset", "error")],
                F.col("error.message").alias("error"),
            )
        )
    rows = reduce(lambda a, b: a.unionByName(b), frames).collect()
    outcome.release()
    by_offset = {r["offset"]: case for r, case in zip(records, group, strict=True)}
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        result = row.asDict()
        for column in ("key", "value", "headers", "key_schema", "value_schema"):
            result[column] = None if result[column] is None else json.loads(result[column])
        out[by_offset[row["offset"]].name] = result
    return out


def check(case: Case, results: dict[str, dict[str, Any]]) -> None:
    got = results.get(case.name)
    if case.expect.get("dropped"):
        assert got is None, f"{case.name}: expected the record to be dropped, got {got}"
        return
    assert got is not None, f"{case.name}: the record was dropped"
    if "error" in case.expect:
        assert got["error"] is not None and case.expect["error"] in got["error"], f"{case.name}: {got}"
        return
    assert got["error"] is None, f"{case.name}: failed with {got['error']}"
    for key, expected in case.expect.items():
        if key == "headers":
            assert [tuple(h) for h in got["headers"]] == expected, f"{case.name}: headers {got['headers']}"
        else:
            assert got[key] == expected, f"{case.name}: {key} is {got[key]!r}, expected {expected!r}"
