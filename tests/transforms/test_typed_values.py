"""A source's typed struct value through a chain: routing and header transforms leave it alone, and
InsertField / ReplaceField edit the struct itself, so the compiled plan builds no VARIANT; what is
written matches Connect's JsonConverter for a Struct (schema order, nulls kept) and the general
VARIANT path, byte for byte, wherever the two can agree on field order."""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparklink.worker.transforms.pipeline import compile_pipeline
from tests.transforms.harness import JSON, PKG

VALUE_JSON = {"value.converter": JSON, "value.converter.schemas.enable": "false", "errors.tolerance": "all"}
ROUTING = {
    **VALUE_JSON,
    "transforms": "route,stamp,strip,drop",
    "transforms.route.type": f"{PKG}.RegexRouter",
    "transforms.route.regex": "orders-(.*)",
    "transforms.route.replacement": "shop.$1",
    "transforms.stamp.type": f"{PKG}.InsertHeader",
    "transforms.stamp.header": "via",
    "transforms.stamp.value.literal": "sparklink",
    "transforms.strip.type": f"{PKG}.DropHeaders",
    "transforms.strip.headers": "trace",
    "transforms.drop.type": f"{PKG}.Filter",
    "transforms.drop.predicate": "internal",
    "predicates": "internal",
    "predicates.internal.type": f"{PKG}.predicates.TopicNameMatches",
    "predicates.internal.pattern": "internal-.*",
}
FIELDS = {
    **VALUE_JSON,
    "transforms": "insert,replace",
    "transforms.insert.type": f"{PKG}.InsertField$Value",
    "transforms.insert.static.field": "z_origin",
    "transforms.insert.static.value": "bench",
    "transforms.insert.topic.field": "y_topic",
    "transforms.replace.type": f"{PKG}.ReplaceField$Value",
    "transforms.replace.exclude": "c_dropped",
    "transforms.replace.renames": "a:b_renamed",
}
TRICKY = [
    "plain",
    "unicode: héllo ☃ 😀 中文",
    'escapes: quote " backslash \\ slash / tab \t newline \n return \r',
    "controls: \u0001\u001f\u007f\u2028",
    "",
]


def optimized(frame: DataFrame) -> str:
    return str(frame._jdf.queryExecution().optimizedPlan().toString())


def written(frame: DataFrame) -> list[bytes | None]:
    rows = frame.select("value").collect()
    return [None if r["value"] is None else bytes(r["value"]) for r in rows]


def tricky_batch(spark: Any) -> DataFrame:
    """One struct per tricky case; field names in alphabetical order, so that the VARIANT path (whose
    objects keep their keys sorted) and the struct path agree on order."""
    rows = [(i, s) for i, s in enumerate(TRICKY)]
    base = spark.createDataFrame(rows, "i int, s string")
    value = F.struct(
        F.col("s").alias("a"),
        (F.lit(9223372036854775807) - F.col("i")).alias("b_big"),
        F.lit("gone").alias("c_dropped"),
        F.struct(F.lit(None).cast("string").alias("m_null"), F.lit(-0.1).alias("n_double")).alias("d_nested"),
        F.array(F.col("s"), F.lit(None).cast("string")).alias("e_list"),
        F.lit(None).cast("bigint").alias("f_null"),
    )
    return base.select(F.lit("orders-eu").alias("topic"), value.alias("value"))


def test_a_routing_only_chain_never_turns_the_value_into_a_variant(spark: Any) -> None:
    batch = tricky_batch(spark)
    plain = compile_pipeline(VALUE_JSON, {}, "source").run(batch).records
    routed = compile_pipeline(ROUTING, {}, "source").run(batch).records
    assert "variant" not in optimized(routed).lower()
    assert written(routed) == written(plain)
    assert {r["topic"] for r in routed.select("topic").collect()} == {"shop.eu"}


def test_a_field_only_chain_edits_the_struct_in_schema_order(spark: Any) -> None:
    out = compile_pipeline(FIELDS, {}, "source").run(tricky_batch(spark))
    assert out.errant is None, "a struct cannot fail InsertField or ReplaceField"
    assert "variant" not in optimized(out.records).lower()
    first = written(out.records)[0]
    assert first is not None
    # Connect's InsertField and ReplaceField on a Struct: schema order, renamed in place, inserted
    # fields last; JsonConverter writes null fields.
    assert first.decode() == (
        '{"b_renamed":"plain","b_big":9223372036854775807,"d_nested":{"m_null":null,"n_double":-0.1},'
        '"e_list":["plain",null],"f_null":null,"y_topic":"orders-eu","z_origin":"bench"}'
    )


def test_the_struct_path_writes_what_the_variant_path_writes(spark: Any) -> None:
    """The same values as a VARIANT column take the general path (parse, map edits, to_json)."""
    batch = tricky_batch(spark)
    as_variant = batch.select("topic", F.expr("to_variant_object(value)").alias("value"))
    config = {**FIELDS, "transforms.replace.renames": "a:b_a"}  # keeps alphabetical order
    fast = compile_pipeline(config, {}, "source").run(batch).records
    general = compile_pipeline(config, {}, "source").run(as_variant).records
    assert "variant" in optimized(general).lower()
    assert written(fast) == written(general)
    assert [json.loads(v or b"null")["b_a"] for v in written(fast)] == TRICKY


def test_null_values_stay_null_and_keep_their_schema(spark: Any) -> None:
    base = spark.createDataFrame([(1, "x"), (None, None)], "id int, name string")
    value = F.when(F.col("id").isNotNull(), F.struct("id", "name"))
    batch = base.select(F.lit("t").alias("topic"), value.alias("value"))
    config = {**FIELDS, "value.converter.schemas.enable": "true", "transforms.replace.renames": "id:key"}
    rows = written(compile_pipeline(config, {}, "source").run(batch).records)
    envelopes = sorted((json.loads(v) for v in rows if v is not None), key=lambda e: e["payload"] is None)
    assert envelopes[0]["payload"] == {"key": 1, "name": "x", "y_topic": "t", "z_origin": "bench"}
    assert [f["field"] for f in envelopes[0]["schema"]["fields"]] == ["key", "name", "y_topic", "z_origin"]
    # Connect returns a record with a null value unchanged: its schema too.
    assert envelopes[1]["payload"] is None
    assert [f["field"] for f in envelopes[1]["schema"]["fields"]] == ["id", "name"]


def test_values_that_are_not_structs_still_fail_as_in_connect(spark: Any) -> None:
    batch = spark.createDataFrame([("t", "text")], "topic string, value string")
    out = compile_pipeline(FIELDS, {}, "source").run(batch)
    assert out.errant is not None
    (bad,) = out.errant.select("error.message").collect()
    assert bad["message"] == "Only Struct objects supported for [field insertion], found: java.lang.String"
    out.release()


def test_a_name_the_struct_already_has_takes_the_general_path(spark: Any) -> None:
    batch = spark.createDataFrame([("t", 1)], "topic string, n int").select("topic", F.struct("n").alias("value"))
    config = {**FIELDS, "transforms.insert.static.field": "n"}
    out = compile_pipeline(config, {}, "source").run(batch)
    assert "variant" in optimized(out.records).lower()


def test_string_keys_are_written_as_the_variant_path_writes_them(spark: Any) -> None:
    batch = spark.createDataFrame([(t,) for t in [*TRICKY, None]], "key string").select(
        F.lit("t").alias("topic"), "key", F.lit(1).alias("value")
    )
    config = {"key.converter": JSON, "key.converter.schemas.enable": "false"}
    out = compile_pipeline(config, {}, "source").run(batch).records
    assert "variant" not in optimized(out).lower()
    got = [None if r["key"] is None else bytes(r["key"]) for r in out.select("key").collect()]
    general = batch.selectExpr("to_json(CAST(key AS VARIANT)) AS key").collect()
    assert got == [None if r["key"] is None else r["key"].encode() for r in general]
