"""Whole pipelines on a local SparkSession: a chain of three transforms with predicates, converter round
trips, the SQL transform, and what errors.tolerance does with a failing record."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparklink.worker.transforms import errors
from sparklink.worker.transforms.pipeline import compile_pipeline
from tests.transforms.harness import JSON, PKG, SCHEMALESS, kafka_batch

CHAIN = {
    **SCHEMALESS,
    "transforms": "route,stamp,drop",
    "transforms.route.type": f"{PKG}.RegexRouter",
    "transforms.route.regex": "orders-(.*)",
    "transforms.route.replacement": "shop.$1",
    "transforms.stamp.type": f"{PKG}.InsertField$Value",
    "transforms.stamp.static.field": "source",
    "transforms.stamp.static.value": "web",
    "transforms.stamp.topic.field": "topic",
    "transforms.stamp.predicate": "routed",
    "transforms.drop.type": f"{PKG}.Filter",
    "transforms.drop.predicate": "tombstone",
    "transforms.drop.negate": "false",
    "predicates": "routed,tombstone",
    "predicates.routed.type": f"{PKG}.predicates.TopicNameMatches",
    "predicates.routed.pattern": r"shop\..*",
    "predicates.tombstone.type": f"{PKG}.predicates.RecordIsTombstone",
}


def values(frame: Any) -> list[tuple[str, Any]]:
    rows = frame.select("topic", F.to_json(F.col("value").cast("variant")).alias("v")).collect()
    return sorted((r["topic"], None if r["v"] is None else json.loads(r["v"])) for r in rows)


def test_chain_of_three_with_predicates(spark: Any) -> None:
    batch = kafka_batch(
        spark,
        [
            {"topic": "orders-eu", "value": {"id": 1}},
            {"topic": "payments", "value": {"id": 2}},
            {"topic": "orders-us", "value": None},
            {"topic": "payments", "value": None, "offset": 1},
        ],
    )
    out = compile_pipeline(CHAIN).run(batch)
    assert values(out.records) == [
        ("payments", {"id": 2}),
        ("shop.eu", {"id": 1, "source": "web", "topic": "shop.eu"}),
    ]
    negated = compile_pipeline({**CHAIN, "transforms.drop.negate": "true"}).run(batch)
    assert values(negated.records) == [("payments", None), ("shop.us", None)]


def test_json_converter_round_trip_keeps_values_and_schemas(spark: Any) -> None:
    schema = T.StructType([T.StructField("id", T.LongType(), False), T.StructField("name", T.StringType())])
    rows = spark.createDataFrame([(1, "ada"), (2, None)], schema)
    source = rows.select(F.lit("people").alias("topic"), F.struct("id", "name").alias("value"))
    with_schemas = {"value.converter": JSON, "value.converter.schemas.enable": "true"}
    written = compile_pipeline(with_schemas, {}, "source").run(source).records
    envelopes = [json.loads(r["value"]) for r in written.select(F.decode("value", "UTF-8").alias("value")).collect()]
    assert envelopes[0]["schema"] == {
        "type": "struct",
        "optional": False,
        "fields": [
            {"type": "int64", "optional": False, "field": "id"},
            {"type": "string", "optional": True, "field": "name"},
        ],
    }
    assert sorted(e["payload"]["id"] for e in envelopes) == [1, 2]
    read = compile_pipeline({**with_schemas, "key.converter": JSON}, {}, "sink").run(
        written.select("topic", "key", "value", F.lit(0).alias("partition"), F.lit(0).cast("bigint").alias("offset"))
        .withColumn("timestamp", F.current_timestamp())
        .withColumn("timestampType", F.lit(0))
        .withColumn("headers", F.array().cast("array<struct<key:string,value:binary>>"))
    )
    got = read.records.select(F.to_json("value").alias("v"), "value_schema").collect()
    assert sorted(json.loads(r["v"])["id"] for r in got) == [1, 2]
    assert json.loads(got[0]["value_schema"]) == envelopes[0]["schema"]


def test_string_and_byte_array_converters(spark: Any) -> None:
    batch = kafka_batch(spark, [{"key": b"k1", "value": b"caf\xc3\xa9"}])
    strings = {"key.converter": "org.apache.kafka.connect.storage.StringConverter"}
    strings["value.converter"] = strings["key.converter"]
    row = compile_pipeline(strings).run(batch).records.select("key", "value").first()
    assert (row["key"], row["value"]) == ("k1", "café")
    untouched = compile_pipeline({}).run(batch)
    assert untouched.records is batch
    source = spark.createDataFrame([("t", "line one")], "topic string, value string")
    as_json = {"value.converter": JSON, "value.converter.schemas.enable": "false"}
    (line,) = compile_pipeline(as_json, {}, "source").run(source).records.select("value").collect()
    assert bytes(line["value"]) == b'"line one"'


def test_a_floating_source_value_is_written_as_each_converter_writes_it(spark: Any) -> None:
    """JsonConverter (Jackson) quotes NaN and Infinity and StringConverter (Double.toString) does not."""
    source = spark.sql(
        "SELECT 't' AS topic, d AS value FROM VALUES (CAST('NaN' AS DOUBLE)), (CAST('-Infinity' AS DOUBLE)), "
        "(1.0E20D), (0.5D) AS v(d)"
    )
    as_json = {"value.converter": JSON, "value.converter.schemas.enable": "false"}
    as_text = {"value.converter": "org.apache.kafka.connect.storage.StringConverter"}
    for config, expected in (
        (as_json, [b'"NaN"', b'"-Infinity"', b"1.0E20", b"0.5"]),
        (as_text, [b"NaN", b"-Infinity", b"1.0E20", b"0.5"]),
    ):
        rows = compile_pipeline(config, {}, "source").run(source).records.select("value").collect()
        assert sorted(bytes(r["value"]) for r in rows) == sorted(expected), config


def test_json_converter_writes_a_source_string_with_invalid_utf8_as_java_would(spark: Any) -> None:
    """A Spark string may hold any bytes (a cast of raw bytes); Java's would hold U+FFFD for each invalid
    sequence, and JsonConverter writes that, in a string value and in a struct's field alike."""
    source = spark.sql(
        "SELECT 't' AS topic, CAST(X'6F6BFF20C3' AS STRING) AS key, named_struct('s', CAST(X'C328' AS STRING)) AS value"
    )
    config = {"key.converter": JSON, "key.converter.schemas.enable": "false", **SCHEMALESS}
    (row,) = compile_pipeline(config, {}, "source").run(source).records.select("key", "value").collect()
    assert bytes(row["key"]) == json.dumps("ok\ufffd \ufffd", ensure_ascii=False).encode()
    assert bytes(row["value"]) == json.dumps({"s": "\ufffd("}, ensure_ascii=False, separators=(",", ":")).encode()


def test_bytes_that_are_not_utf8_are_read_as_java_reads_them(spark: Any) -> None:
    """StringConverter replaces each invalid sequence with U+FFFD, as Java's `new String(bytes, UTF_8)`
    does, and never fails the batch; to JsonConverter such bytes are malformed input, an errant record
    like any other."""
    bad = b"ok \xff cut \xc3"
    batch = kafka_batch(spark, [{"key": b"k", "value": bad}, {"value": b"fine", "offset": 1}])
    strings = {"key.converter": "org.apache.kafka.connect.storage.StringConverter"}
    strings["value.converter"] = strings["key.converter"]
    rows = compile_pipeline(strings).run(batch).records.orderBy("offset").select("value").collect()
    assert [r["value"] for r in rows] == [bad.decode("utf-8", errors="replace"), "fine"]

    out = compile_pipeline(SCHEMALESS).run(kafka_batch(spark, [{"value": bad}, {"value": {"a": 1}, "offset": 1}]))
    assert values(out.records) == [("test", {"a": 1})]
    assert out.errant is not None
    (errant,) = out.errant.select("original.offset", "error.stage").collect()
    assert (errant["offset"], errant["stage"]) == (0, "VALUE_CONVERTER")
    out.release()


def test_sql_transform_filters_and_reshapes_records(spark: Any) -> None:
    config = {
        **SCHEMALESS,
        "transforms": "big,tag",
        "transforms.big.type": "sql",
        "transforms.big.statement": (
            "SELECT key, topic, to_variant_object(named_struct('id', value:id::int, 'name', upper(value:name::string)))"
            " AS value FROM records WHERE value:amount::int > 100"
        ),
        "transforms.tag.type": f"{PKG}.InsertField$Value",
        "transforms.tag.static.field": "tier",
        "transforms.tag.static.value": "gold",
    }
    batch = kafka_batch(
        spark,
        [
            {"value": {"id": 1, "name": "ada", "amount": 500}},
            {"value": {"id": 2, "name": "bob", "amount": 5}, "offset": 1},
            {"value": b"{not json", "offset": 2},
        ],
    )
    out = compile_pipeline(config).run(batch)
    assert values(out.records) == [("test", {"id": 1, "name": "ADA", "tier": "gold"})]
    (bad,) = out.errant.select("original.offset", "error.stage").collect() if out.errant else []
    assert (bad["offset"], bad["stage"]) == (2, "VALUE_CONVERTER")


def test_tolerance_none_fails_the_batch_naming_the_record(spark: Any) -> None:
    config = {**SCHEMALESS, "errors.tolerance": "none"}
    batch = kafka_batch(
        spark, [{"value": {"ok": 1}}, {"topic": "orders", "partition": 3, "offset": 42, "value": b"{x"}]
    )
    out = compile_pipeline(config).run(batch)
    assert out.errant is None
    with pytest.raises(Exception, match=r"topic=orders, partition=3, offset=42") as failure:
        out.records.collect()
    assert "org.apache.kafka.connect.json.JsonConverter" in str(failure.value)


def test_tolerance_all_gives_dead_letters_with_connects_context_headers(spark: Any) -> None:
    config = {
        **SCHEMALESS,
        "errors.deadletterqueue.topic.name": "dlq",
        "errors.deadletterqueue.context.headers.enable": "true",
    }
    headers = [("trace", b"abc")]
    batch = kafka_batch(
        spark, [{"value": {"ok": 1}}, {"topic": "orders", "offset": 7, "value": b"{x", "headers": headers}]
    )
    pipeline = compile_pipeline(config, {}, "sink", "my-sink", 2)
    out = pipeline.run(batch)
    assert out.errant is not None
    (dead,) = errors.dlq_records(out.errant, pipeline.policy, "my-sink", 2).collect()
    assert bytes(dead["value"]) == b"{x"
    got = {h["key"]: bytes(h["value"]).decode() for h in dead["headers"]}
    assert got["trace"] == "abc"
    assert {k: v for k, v in got.items() if k != "__connect.errors.exception.stacktrace" and k != "trace"} == {
        "__connect.errors.topic": "orders",
        "__connect.errors.partition": "0",
        "__connect.errors.offset": "7",
        "__connect.errors.connector.name": "my-sink",
        "__connect.errors.task.id": "2",
        "__connect.errors.stage": "VALUE_CONVERTER",
        "__connect.errors.class.name": "org.apache.kafka.connect.json.JsonConverter",
        "__connect.errors.exception.class.name": "org.apache.kafka.connect.errors.DataException",
        "__connect.errors.exception.message": "Converting byte[] to Kafka Connect data failed due to serialization "
        "error: ",
    }
    assert got["__connect.errors.exception.stacktrace"].startswith("org.apache.kafka.connect.errors.DataException")
    out.release()


def test_source_records_cannot_insert_an_offset(spark: Any) -> None:
    config = {
        "value.converter": JSON,
        "value.converter.schemas.enable": "false",
        "errors.tolerance": "all",
        "transforms": "o",
        "transforms.o.type": f"{PKG}.InsertField$Value",
        "transforms.o.offset.field": "offset",
    }
    source = spark.createDataFrame([("t", 1)], "topic string, value int").select(
        "topic", F.struct(F.col("value").alias("n")).alias("value")
    )
    out = compile_pipeline(config, {}, "source").run(source)
    assert out.errant is not None
    (bad,) = out.errant.select("error.message").collect()
    assert bad["message"] == (
        "Only SinkRecord supported for [field insertion], found: org.apache.kafka.connect.source.SourceRecord"
    )
