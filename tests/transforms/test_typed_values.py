"""A source's typed struct value through a chain: routing and header transforms leave it alone, and
InsertField / ReplaceField edit the struct itself, so the compiled plan builds no VARIANT; what is
written matches Connect's JsonConverter for a Struct (schema order, nulls kept) and the general
VARIANT path, byte for byte, wherever the two can agree on field order."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparklink.worker.transforms.pipeline import compile_pipeline
from sparklink.worker.transforms.smt.base import Transformation
from sparklink.worker.transforms.smt.fields import ExtractField, ReplaceField
from sparklink.worker.transforms.smt.mask import MaskField
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


# ---------------------------------------------------------------- ExtractField, MaskField on a struct

STRING, BYTES = (
    "org.apache.kafka.connect.storage.StringConverter",
    "org.apache.kafka.connect.converters.ByteArrayConverter",
)
SCHEMAS = "value.converter.schemas.enable"
CONVERTERS = [  # (key converter, value converter): each run checks two
    {"key.converter": JSON, "key.converter.schemas.enable": "false", **VALUE_JSON, SCHEMAS: "true"},
    {"key.converter": STRING, **VALUE_JSON, "value.converter": BYTES},
]  # fmt: skip
DOUBLES = [-0.1, 0.0, -0.0, 1e20, 0.5, 1.5e-7, 123456789.125, 1e300, float("inf"), float("nan"), -float("inf"), 2 / 3]
FLOATS = [0.1, 3.4e38, -1.0e-8, 1e7, 0.5, 16777216.0, 0.0, float("-inf"), 1.1, float("nan"), float("inf"), 1e10]
BLANK = 4  # the row whose value has only null fields


def varied_batch(spark: Any) -> DataFrame:
    """Structs with a field of each Connect type a typed source makes (names in alphabetical order, as
    in `tricky_batch`), nulls among them, and one value per tricky string and tricky number."""
    rows = [
        (i, TRICKY[i % len(TRICKY)], DOUBLES[i], FLOATS[i], i % 2 == 0, (-1) ** i * (2**62 + i), i == BLANK)
        for i in range(len(DOUBLES))
    ]
    base = spark.createDataFrame(rows, "i int, s string, d double, f float, b boolean, n bigint, blank boolean")
    value = F.struct(
        F.col("s").alias("a_string"),
        F.col("b").alias("b_bool"),
        F.col("i").cast("tinyint").alias("c_int8"),
        (F.col("i") * 1000).cast("smallint").alias("d_int16"),
        (F.col("i") * -70000).alias("e_int32"),
        F.col("n").alias("f_int64"),
        F.col("f").alias("g_float"),
        F.col("d").alias("h_double"),
        F.expr("timestamp_millis(1700000000123 + i)").alias("i_timestamp"),
        F.expr("date_add(DATE'1969-12-25', i)").alias("j_date"),
        F.expr("CAST(i AS DECIMAL(10,3)) / 8").alias("k_decimal"),
        F.struct(F.col("s").alias("x_text"), F.lit(None).cast("int").alias("y_null")).alias("l_struct"),
        F.array(F.col("s"), F.lit(None).cast("string")).alias("m_list"),
        F.create_map(F.lit("only"), F.col("n")).alias("n_map"),
        F.lit(None).cast("bigint").alias("o_null"),
        F.array(F.struct(F.col("d").alias("p"), F.lit(None).cast("string").alias("q"))).alias("p_structs"),
        F.expr("encode(s, 'UTF-8')").alias("q_bytes"),
    )
    nulls = F.struct(*[F.lit(None).cast(f.dataType).alias(f.name) for f in base.select(value).schema[0].dataType])
    value = F.when(F.col("blank"), nulls).otherwise(value)
    return base.select(F.lit("t").alias("topic"), value.alias("key"), value.alias("value"))


TYPED_FIELDS = [
    "a_string", "b_bool", "c_int8", "d_int16", "e_int32", "f_int64", "i_timestamp", "j_date", "l_struct",
    "m_list", "n_map", "o_null", "p_structs",
]  # fmt: skip
GENERAL_FIELDS = ["g_float", "h_double", "k_decimal", "q_bytes"]
"""Floats and doubles (a decimal is a double) keep the general path: see `field_datum`."""


def extract(field: str, converters: dict[str, str]) -> dict[str, str]:
    return {
        **converters,
        "transforms": "key,value",
        "transforms.key.type": f"{PKG}.ExtractField$Key",
        "transforms.key.field": field,
        "transforms.value.type": f"{PKG}.ExtractField$Value",
        "transforms.value.field": field,
    }


def written_both(frame: DataFrame) -> list[tuple[bytes | None, bytes | None]]:
    rows = frame.select("key", "value").collect()
    return [tuple(None if r[c] is None else bytes(r[c]) for c in ("key", "value")) for r in rows]  # type: ignore[misc]


def general_path(monkeypatch: pytest.MonkeyPatch, cls: type[Transformation]) -> None:
    """From here on `cls` declines every struct, so a chain takes the VARIANT path on the same input."""
    monkeypatch.setattr(cls, "_on_struct", lambda *_args: None)


def test_extract_field_on_a_struct_writes_what_the_variant_path_writes(spark: Any, monkeypatch: Any) -> None:
    batch = varied_batch(spark)
    fast: dict[tuple[str, int], list[tuple[bytes | None, bytes | None]]] = {}
    for field in TYPED_FIELDS:
        for i, converters in enumerate(CONVERTERS):
            out = compile_pipeline(extract(field, converters), {}, "source").run(batch)
            assert out.errant is None
            fast[field, i] = written_both(out.records)
            if i == 1:  # without a schema (a VARIANT constant) in the output
                assert "variant" not in optimized(out.records).lower(), field
    general_path(monkeypatch, ExtractField)
    for (field, i), got in fast.items():
        records = compile_pipeline(extract(field, CONVERTERS[i]), {}, "source").run(batch).records
        assert "variant" in optimized(records).lower()
        assert got == written_both(records), field
    # The struct field stays a struct: Connect's Struct under its own schema.
    envelope = json.loads(fast["l_struct", 0][1][1] or b"null")
    assert envelope == {
        "schema": {
            "type": "struct",
            "optional": True,
            "fields": [
                {"type": "string", "optional": True, "field": "x_text"},
                {"type": "int32", "optional": True, "field": "y_null"},
            ],
        },
        "payload": {"x_text": TRICKY[1], "y_null": None},
    }


def test_extract_field_takes_the_general_path_for_floats_bytes_and_nested_paths(spark: Any) -> None:
    batch = varied_batch(spark)
    nested = {**extract("l_struct.x_text", VALUE_JSON), "transforms.value.field.syntax.version": "V2"}
    for config in [*(extract(f, VALUE_JSON) for f in GENERAL_FIELDS), nested]:
        records = compile_pipeline({**config, "transforms": "value"}, {}, "source").run(batch).records
        assert "variant" in optimized(records).lower(), config["transforms.value.field"]
    records = compile_pipeline({**nested, "transforms": "value"}, {}, "source").run(batch).records
    assert json.loads(written(records)[1] or b"null") == TRICKY[1]


def test_extract_field_of_a_null_struct_is_null_with_the_field_schema(spark: Any, monkeypatch: Any) -> None:
    base = spark.createDataFrame([(1, "x"), (None, None)], "id int, name string")
    value = F.when(F.col("id").isNotNull(), F.struct("id", "name"))
    batch = base.select(F.lit("t").alias("topic"), value.alias("value"))
    chain = {
        **VALUE_JSON,
        "value.converter.schemas.enable": "true",
        "transforms": "replace,extract",
        "transforms.replace.type": f"{PKG}.ReplaceField$Value",
        "transforms.replace.renames": "id:key",
        "transforms.extract.type": f"{PKG}.ExtractField$Value",
    }
    outcomes = {}
    for field in ("name", "key"):
        out = compile_pipeline({**chain, "transforms.extract.field": field}, {}, "source").run(batch)
        failed = [] if out.errant is None else [r["message"] for r in out.errant.select("error.message").collect()]
        outcomes[field] = (sorted(written(out.records), key=str), failed)
    assert outcomes["name"][0] == sorted(
        [b'{"schema":{"optional":true,"type":"string"},"payload":"x"}',
         b'{"schema":{"optional":true,"type":"string"},"payload":null}'], key=str,
    )  # fmt: skip
    # Connect leaves a null value's record unchanged in ReplaceField: its schema has no field "key".
    assert outcomes["key"][1] == ["Unknown field: key"]
    general_path(monkeypatch, ExtractField)
    general_path(monkeypatch, ReplaceField)
    for field, (records, failed) in outcomes.items():
        out = compile_pipeline({**chain, "transforms.extract.field": field}, {}, "source").run(batch)
        general_failed = (
            [] if out.errant is None else [r["message"] for r in out.errant.select("error.message").collect()]
        )
        assert (sorted(written(out.records), key=str), general_failed) == (records, failed)


def mask(fields: list[str], converters: dict[str, str], replacement: str | None = None) -> dict[str, str]:
    config = {
        **converters,
        "transforms": "key,value",
        "transforms.key.type": f"{PKG}.MaskField$Key",
        "transforms.key.fields": ",".join(fields),
        "transforms.value.type": f"{PKG}.MaskField$Value",
        "transforms.value.fields": ",".join(fields),
    }
    if replacement is not None:
        config["transforms.key.replacement"] = config["transforms.value.replacement"] = replacement
    return config


MASKABLE = [f for f in TYPED_FIELDS if f != "l_struct"] + ["g_float", "h_double", "k_decimal"]
NUMBERS = ["c_int8", "f_int64", "g_float", "h_double", "i_timestamp", "j_date", "k_decimal", "o_null"]
MASKED = [  # (fields, replacement): Connect's empty values, then replacements for strings and numbers
    (MASKABLE, None),
    (["a_string", *NUMBERS, "not_a_field"], "300"),  # 300 is 44 as an int8, as Connect's Values narrows it
    (["a_string", "h_double", "g_float"], "-1.5e3"),
]
DECLINED = [  # what the general path fails the record for (Connect: "Cannot mask value ...", "Unable to convert")
    (["q_bytes"], None),
    (["b_bool"], "42"),
    (["m_list"], "42"),
    (["c_int8"], "abc"),
]


def test_mask_field_on_a_struct_writes_what_the_variant_path_writes(spark: Any, monkeypatch: Any) -> None:
    batch = varied_batch(spark)
    fast = {}
    for case, (fields, replacement) in enumerate(MASKED):
        for i, converters in enumerate(CONVERTERS):
            out = compile_pipeline(mask(fields, converters, replacement), {}, "source").run(batch)
            assert out.errant is None
            fast[case, i] = written_both(out.records)
            if i == 1:
                assert "variant" not in optimized(out.records).lower(), case
    masked = json.loads(fast[0, 0][1][1] or b"null")  # record 1 (not blank): its value, with its schema
    assert masked["payload"]["a_string"] == "" and masked["payload"]["m_list"] == []
    assert masked["payload"]["l_struct"] == {"x_text": TRICKY[1], "y_null": None}
    general_path(monkeypatch, MaskField)
    for (case, i), got in fast.items():
        fields, replacement = MASKED[case]
        records = compile_pipeline(mask(fields, CONVERTERS[i], replacement), {}, "source").run(batch).records
        assert "variant" in optimized(records).lower()
        assert got == written_both(records), (case, i)


def errors(out: Any) -> list[str]:
    return [] if out.errant is None else sorted(r["message"] for r in out.errant.select("error.message").collect())


def test_mask_field_takes_the_general_path_where_connect_fails_the_record(spark: Any) -> None:
    batch = varied_batch(spark)
    for fields, replacement in DECLINED:
        out = compile_pipeline(mask(fields, VALUE_JSON, replacement), {}, "source").run(batch)
        assert "variant" in optimized(out.records).lower(), fields
        assert errors(out), fields
        out.release()
    # A struct field: the struct path leaves it to the general path, which fails the record as Connect does
    # (the all-null row's struct is null: null stays null).
    out = compile_pipeline({**mask(["l_struct"], VALUE_JSON), "transforms": "value"}, {}, "source").run(batch)
    assert "variant" in optimized(out.records).lower()
    struct_errors = errors(out)
    assert struct_errors and set(struct_errors) == {
        "Cannot mask value of type: class org.apache.kafka.connect.data.Struct"
    }, struct_errors
    out.release()
    # A struct that may be null: MaskField fails a null value (requireStruct).
    base = spark.createDataFrame([(1,), (None,)], "id int")
    value = F.when(F.col("id").isNotNull(), F.struct("id"))
    nullable = base.select(F.lit("t").alias("topic"), value.alias("value"))
    out = compile_pipeline({**mask(["id"], VALUE_JSON), "transforms": "value"}, {}, "source").run(nullable)
    assert errors(out) == ["Only Struct objects supported for [mask fields], found: null"]
    assert written(out.records) == [b'{"id":0}']
    out.release()
