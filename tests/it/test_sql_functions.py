"""The SQL functions the worker defines on its Spark sessions for transforms' expressions."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sparklink.api.text import VARIANT_TEXT, VARIANT_TEXT_IN_SQL, as_text
from sparklink.worker.execution.spark import register_functions
from sparklink.worker.transforms import exprs

# Valid text (ASCII and not), invalid UTF-8 (a lone byte, a cut character, an encoded surrogate, an
# overlong form), an empty value and a null.
_VALUES = [
    b"plain ascii, longer than eight bytes",
    "héllo wörld ✓ 🚀".encode(),
    b"bad \xff end",
    b"cut \xc3",
    b"surrogate \xed\xa0\x80 here",
    b"overlong \xc0\xaf slash",
    b"",
    None,
]


def _decoded(session: Any) -> list[str | None]:
    from pyspark.sql.types import BinaryType, StructField

    frame = session.createDataFrame([(i, v) for i, v in enumerate(_VALUES)], "i int, b binary")
    assert frame.schema["b"] == StructField("b", BinaryType())
    rows = frame.selectExpr("i", f"{exprs.utf8_text('b')} AS text").orderBy("i").collect()
    return [row["text"] for row in rows]


def _java(spark: Any, value: bytes | None) -> str | None:
    """`new String(value, UTF_8)` in the Spark JVM: how Kafka's StringConverter reads bytes."""
    if value is None:
        return None
    jvm = spark.sparkContext._jvm
    return str(jvm.java.lang.String(bytearray(value), jvm.java.nio.charset.StandardCharsets.UTF_8))


def test_utf8_text_from_the_jar_reads_bytes_exactly_as_java_does(spark: Any) -> None:
    session = spark.newSession()  # functions are per session: a new one has none
    assert "sparklink-sql.jar" in spark.conf.get("spark.jars"), "run the bootstrap: it builds jvm/sql"
    register_functions(session)
    described = [row[0] for row in session.sql(f"DESCRIBE FUNCTION EXTENDED {exprs.UTF8_TEXT}").collect()]
    assert not any(line.startswith("Body:") for line in described), described  # a JVM function, not SQL
    assert _decoded(session) == [_java(spark, v) for v in _VALUES]
    # Where Java and Unicode's "maximal subpart" practice part: an encoded surrogate is one U+FFFD.
    assert _decoded(session)[4] == "surrogate \ufffd here"


def test_utf8_text_in_sql_alone_differs_from_java_only_on_encoded_surrogates(spark: Any) -> None:
    session = spark.newSession()
    session.sql(exprs.UTF8_TEXT_IN_SQL)
    described = [row[0] for row in session.sql(f"DESCRIBE FUNCTION EXTENDED {exprs.UTF8_TEXT}").collect()]
    assert any(line.startswith("Body:") for line in described), described
    decoded = _decoded(session)
    assert decoded == [None if v is None else v.decode("utf-8", errors="replace") for v in _VALUES]
    java = [_java(spark, v) for v in _VALUES]
    assert [i for i, (a, b) in enumerate(zip(decoded, java, strict=True)) if a != b] == [4]


def test_a_session_without_the_functions_cannot_run_converter_expressions(spark: Any) -> None:
    """What register_functions guards against: the worker registers them on every session it runs."""
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match=exprs.UTF8_TEXT):
        _decoded(spark.newSession())


# JSON for the parse: values of each kind, then what is refused (a duplicate key, bad JSON, nothing at
# all, and valid JSON around bytes that are not UTF-8: a lone byte, an encoded surrogate, an overlong
# form, a code point past U+10FFFF, a cut character), and a null.
_JSON = [
    b'{"a":1,"b":[1,2.5,"x"],"c":{"d":null}}',
    b'"text"',
    b"12345678901234567890123",
    b"1.5e300",
    b"3.14159",
    b"[]",
    b"null",
    b'{"k":"line\\n\\u00e9"}',
    '{"u":"é🚀 and more than eight bytes"}'.encode(),
    b'{"a":1,"a":2}',
    b"{bad",
    b"",
    b'{"a":"\xff"}',
    b'{"a":"\xed\xa0\x80"}',
    b'{"a":"\xc0\xaf"}',
    b'{"a":"\xf4\x90\x80\x80"}',
    b'{"a":"cut \xc3"}',
    None,
]


def _parsed(session: Any) -> list[tuple[bool, str | None, str | None]]:
    """Per value: whether the VARIANT is SQL NULL, its JSON text and its type."""
    frame = session.createDataFrame([(i, v) for i, v in enumerate(_JSON)], "i int, b binary")
    parsed = exprs.json_variant("b")
    rows = frame.selectExpr(
        "i", f"{parsed} IS NULL AS missing", f"CAST({parsed} AS STRING) AS text", f"schema_of_variant({parsed}) AS kind"
    )
    return [(row["missing"], row["text"], row["kind"]) for row in rows.orderBy("i").collect()]


def test_json_variant_from_the_jar_parses_as_spark_sql_does(spark: Any) -> None:
    jar = spark.newSession()
    register_functions(jar)
    described = [row[0] for row in jar.sql(f"DESCRIBE FUNCTION EXTENDED {exprs.JSON_VARIANT}").collect()]
    assert not any(line.startswith("Body:") for line in described), described  # a JVM function, not SQL
    in_sql = spark.newSession()
    in_sql.sql(exprs.JSON_VARIANT_IN_SQL)
    described = [row[0] for row in in_sql.sql(f"DESCRIBE FUNCTION EXTENDED {exprs.JSON_VARIANT}").collect()]
    assert any(line.startswith("Body:") for line in described), described

    parsed = _parsed(jar)
    assert parsed == _parsed(in_sql)
    assert [i for i, (missing, _, _) in enumerate(parsed) if missing] == [9, 10, 11, 12, 13, 14, 15, 16, 17]
    assert parsed[0] == (
        False,
        '{"a":1,"b":[1,2.5,"x"],"c":{"d":null}}',
        "OBJECT<a: BIGINT, b: ARRAY<VARIANT>, c: OBJECT<d: VOID>>",
    )
    assert parsed[2][2] == "DECIMAL(23,0)" and parsed[3][2] == "DOUBLE" and parsed[6] == (False, None, "VOID")
    assert parsed[8][1] == '{"u":"é🚀 and more than eight bytes"}'


def test_json_variant_from_the_jar_parses_values_with_ever_new_field_names(spark: Any) -> None:
    """The jar's parser shares one table of field names between values: 20,000 values with three new names
    each (past the point where the table starts afresh) all parse, each to its own names."""
    jar = spark.newSession()
    register_functions(jar)
    raw = "CAST(concat('{\"k', id, '\": ', id, ', \"n', id, '\": [\"x\"], \"same\": {\"m', id, '\": null}}') AS BINARY)"
    parsed = jar.range(20_000).selectExpr("id", f"CAST({exprs.JSON_VARIANT}({raw}) AS STRING) AS text")
    texts = {row["id"]: row["text"] for row in parsed.collect()}
    assert len(texts) == 20_000
    assert all(texts[i] == f'{{"k{i}":{i},"n{i}":["x"],"same":{{"m{i}":null}}}}' for i in texts), texts[0]


# For the parse that leaves fields out: objects where the left-out names sit at the top, deeper down and in
# arrays, are the only field, are duplicated, or hold what is not JSON; then every value of `_JSON`.
_WITHOUT = "payload"
_JSON_WITH_FIELDS = [
    b'{"task":0,"seq":12,"payload":"xxxx","ts":"t"}',
    b'{"payload":1}',
    b'{"a":{"payload":3},"payload":[1,{"b":2}],"c":[{"payload":4}]}',
    b'[{"payload":1},2]',
    b'{"payload":1,"payload":2}',
    b'{"payload":{"b":1,"b":2}}',
    b'{"payload":"bad \\q escape"}',
    b'{"payload":01}',
    b'{"payload":"\xff"}',
    b'{"x":1.5e3,"y":123456789012345678901234567890,"payload":true}',
    *_JSON,
]


def _parsed_without(session: Any) -> list[tuple[bool, str | None]]:
    """Per value: whether the VARIANT is SQL NULL, and its JSON text."""
    frame = session.createDataFrame([(i, v) for i, v in enumerate(_JSON_WITH_FIELDS)], "i int, b binary")
    parsed = exprs.json_variant("b", {_WITHOUT})
    rows = frame.selectExpr("i", f"{parsed} IS NULL AS missing", f"CAST({parsed} AS STRING) AS text").orderBy("i")
    return [(row["missing"], row["text"]) for row in rows.collect()]


def test_json_variant_without_fields_from_the_jar_leaves_out_only_top_level_ones(spark: Any) -> None:
    """The jar's parse without a field answers as the whole parse with that field then dropped from a
    top-level object (other values whole), and refuses exactly what the whole parse refuses, even where
    the refused part is the left-out field. In SQL alone it is the whole parse."""
    jar = spark.newSession()
    register_functions(jar)
    frame = jar.createDataFrame([(i, v) for i, v in enumerate(_JSON_WITH_FIELDS)], "i int, b binary")
    whole = exprs.json_variant("b")
    dropped = f"coalesce({exprs.object_select(whole, [_WITHOUT], [], {})}, {whole})"
    rows = frame.selectExpr("i", f"{whole} IS NULL AS missing", f"CAST({dropped} AS STRING) AS text").orderBy("i")
    expected = [(row["missing"], row["text"]) for row in rows.collect()]

    without = _parsed_without(jar)
    assert without == expected
    assert without[0] == (False, '{"seq":12,"task":0,"ts":"t"}')
    assert without[1] == (False, "{}")
    assert without[2] == (False, '{"a":{"payload":3},"c":[{"payload":4}]}')
    assert without[3] == (False, '[{"payload":1},2]')
    assert [i for i, (missing, _) in enumerate(without[:10]) if missing] == [4, 5, 6, 7, 8]

    in_sql = spark.newSession()
    in_sql.sql(exprs.JSON_VARIANT_IN_SQL)
    in_sql.sql(exprs.JSON_VARIANT_WITHOUT_IN_SQL)
    rows = frame.selectExpr("i", f"{whole} IS NULL AS missing", f"CAST({whole} AS STRING) AS text").orderBy("i")
    assert _parsed_without(in_sql) == [(row["missing"], row["text"]) for row in rows.collect()]


# VARIANTs of every kind, nested and at the top (where a scalar is Spark's cast alone), a string holding
# every ASCII character (the control ones escaped) and some beyond, time values in two time zones, and
# integers of each sign and size.
_EVERY_CHARACTER = "".join(chr(c) for c in range(0x80)) + "é🚀\u2028\ufffd"
_VARIANTS = [
    """parse_json('{"a":1,"b":[1,2.5,"x",null,true,false],"c":{"d":null,"e":{}},"f":[]}')""",
    """parse_json('"top string"')""",
    "parse_json('null')",
    "parse_json('12345678901234567890123')",
    "parse_json('1.5e300')",
    "parse_json('-0.0')",
    "CAST(CAST(0.1 AS FLOAT) AS VARIANT)",
    "CAST(TIMESTAMP'2026-11-27 10:11:12.345678' AS VARIANT)",
    "CAST(TIMESTAMP_NTZ'2026-11-27 10:11:12' AS VARIANT)",
    "CAST(DATE'2026-11-27' AS VARIANT)",
    "CAST(X'00FF10' AS VARIANT)",
    "to_variant_object(named_struct('t', TIMESTAMP'2026-01-01 00:00:00', 'n', TIMESTAMP_NTZ'2026-01-01 00:00:00',"
    " 'b', X'0102', 'd', DATE'2026-01-01', 'x', CAST(1.5 AS DECIMAL(5,2)), 'f', CAST(2.5 AS FLOAT), 'l', 7L))",
    f"to_variant_object(map({exprs.text(_EVERY_CHARACTER)}, array({exprs.text(_EVERY_CHARACTER)}, 'a', NULL)))",
    f"CAST({exprs.text(_EVERY_CHARACTER)} AS VARIANT)",
    "CAST(NULL AS VARIANT)",
    """parse_json('[-9223372036854775808,-12,0,9,10,-100,9223372036854775807]')""",
]


def _as_text(session: Any) -> list[tuple[str | None, str | None]]:
    """Per VARIANT: `as_text` of it and Spark's cast."""
    union = " UNION ALL ".join(f"SELECT {i} AS i, {v} AS v" for i, v in enumerate(_VARIANTS))
    rows = session.sql(f"SELECT i, {as_text('v', 'variant')} AS mine, CAST(v AS STRING) AS spark FROM ({union})")
    return [(row["mine"], row["spark"]) for row in rows.orderBy("i").collect()]


@pytest.mark.parametrize("zone", ["UTC", "America/New_York"])
def test_variant_text_from_the_jar_writes_what_spark_s_cast_writes(spark: Any, zone: str) -> None:
    session = spark.newSession()
    register_functions(session)
    session.conf.set("spark.sql.session.timeZone", zone)
    described = [row[0] for row in session.sql(f"DESCRIBE FUNCTION EXTENDED {VARIANT_TEXT}").collect()]
    assert not any(line.startswith("Body:") for line in described), described  # a JVM function, not SQL
    rendered = _as_text(session)
    assert [mine for mine, _ in rendered] == [cast for _, cast in rendered]
    # The jar's function wrote the objects and arrays (scalars are left to the cast).
    drawn = session.sql(
        f"SELECT CAST({VARIANT_TEXT}({_VARIANTS[0]}, 'UTC') AS STRING) AS a, {VARIANT_TEXT}({_VARIANTS[1]}, 'UTC') AS s"
    )
    assert drawn.collect()[0].asDict() == {
        "a": '{"a":1,"b":[1,2.5,"x",null,true,false],"c":{"d":null,"e":{}},"f":[]}',
        "s": None,
    }
    assert json.loads(rendered[12][0]) == {_EVERY_CHARACTER: [_EVERY_CHARACTER, "a", None]}


def test_variant_text_in_sql_alone_is_spark_s_cast(spark: Any) -> None:
    session = spark.newSession()
    session.sql(VARIANT_TEXT_IN_SQL)
    rendered = _as_text(session)
    assert [mine for mine, _ in rendered] == [cast for _, cast in rendered]


# Objects to edit (nested values, a JSON null field, keys that sort apart from their order, one with every
# character), values that are not objects (each edit answers NULL), and SQL NULL.
_OBJECTS = [
    """parse_json('{"z":1,"a":{"n":[1,{"m":null}]},"seq":7,"payload":"xxxxxxxx","é🚀":null}')""",
    """parse_json('{"seq":1,"sequence":2}')""",
    """parse_json('{}')""",
    f"to_variant_object(map({exprs.text(_EVERY_CHARACTER)}, 1, 'seq', 2))",
    """parse_json('[1,2]')""",
    """parse_json('"text"')""",
    "parse_json('null')",
    "CAST(NULL AS VARIANT)",
]
_EDITS = [
    exprs.object_put("v", "origin", exprs.variant_of("bench")),
    exprs.object_put("v", "z", "parse_json('[true,{\"q\":2}]')"),
    exprs.object_put("v", "seq", exprs.NULL_VARIANT),
    exprs.object_put("v", _EVERY_CHARACTER, "parse_json('3')"),
    exprs.object_select("v", ["payload"], [], {"seq": "sequence"}),  # a rename onto a field that exists
    exprs.object_select("v", [], ["a", "seq", "nothing"], {}),
    exprs.object_select("v", ["a"], ["a", "z"], {}),  # excluded and included: excluded
    exprs.object_select("v", [], [], {"z": "a", "seq": "a"}),  # two renamed onto a third
    exprs.object_select("v", [], [], {}),
    exprs.object_without("v", "array('seq', 'nothing', IF(i = 0, 'z', 'a'))"),  # names known per record
    exprs.object_select("v", ["absent"], [], {"missing": "seq"}),  # lists that change no field here
]
_READS = [
    exprs.object_get("v", "seq"),
    exprs.object_get("v", "é🚀"),  # a JSON null field
    exprs.object_get(exprs.object_get("v", "a"), "n"),
    exprs.object_get("v", "absent"),
    exprs.object_size("v"),
]


def _shown(expr: str) -> str:
    """An expression's value as text that tells SQL NULL from a JSON null."""
    return (
        f"CASE WHEN {expr} IS NULL THEN 'SQL NULL' WHEN is_variant_null({expr}) THEN 'JSON null'"
        f" ELSE CAST({expr} AS STRING) END"
    )


def _edited(session: Any) -> list[list[str | None]]:
    """Per object, the text of each edit of it (NULL: no object)."""
    union = " UNION ALL ".join(f"SELECT {i} AS i, {v} AS v" for i, v in enumerate(_OBJECTS))
    texts = [f"CAST({edit} AS STRING)" for edit in _EDITS] + [_shown(read) for read in _READS[:-1]]
    texts.append(f"CAST({_READS[-1]} AS STRING)")
    columns = ", ".join(f"{expr} AS e{j}" for j, expr in enumerate(texts))
    rows = session.sql(f"SELECT i, {columns} FROM ({union})").orderBy("i").collect()
    return [[row[f"e{j}"] for j in range(len(texts))] for row in rows]


def test_object_edits_and_reads_from_the_jar_answer_as_their_sql_forms(spark: Any) -> None:
    jar = spark.newSession()
    register_functions(jar)
    in_sql = spark.newSession()
    for name, definition in (
        (exprs.OBJECT_PUT, exprs.OBJECT_PUT_IN_SQL),
        (exprs.OBJECT_SELECT, exprs.OBJECT_SELECT_IN_SQL),
        (exprs.OBJECT_GET, exprs.OBJECT_GET_IN_SQL),
        (exprs.OBJECT_SIZE, exprs.OBJECT_SIZE_IN_SQL),
    ):
        described = [row[0] for row in jar.sql(f"DESCRIBE FUNCTION EXTENDED {name}").collect()]
        assert not any(line.startswith("Body:") for line in described), described  # a JVM function, not SQL
        in_sql.sql(definition)
    edited = _edited(jar)
    assert edited == _edited(in_sql)
    assert edited[0][0] == '{"a":{"n":[1,{"m":null}]},"origin":"bench","payload":"xxxxxxxx","seq":7,"z":1,"é🚀":null}'
    assert edited[0][2] == '{"a":{"n":[1,{"m":null}]},"payload":"xxxxxxxx","seq":null,"z":1,"é🚀":null}'
    # Fields are read in name order and the last one written under a name wins, as Spark's LAST_WIN maps.
    assert edited[1][4] == '{"sequence":2}'
    assert edited[0][5] == '{"a":{"n":[1,{"m":null}]},"seq":7}'
    assert edited[0][6] == '{"z":1}'
    assert edited[0][7] == '{"a":1,"payload":"xxxxxxxx","é🚀":null}'
    assert edited[0][9] == '{"a":{"n":[1,{"m":null}]},"payload":"xxxxxxxx","é🚀":null}'
    # An object the lists change nothing in comes back whole (the jar returns it as it is).
    assert edited[0][10] == '{"a":{"n":[1,{"m":null}]},"payload":"xxxxxxxx","seq":7,"z":1,"é🚀":null}'
    assert edited[1][10] == '{"seq":1,"sequence":2}'
    assert (
        edited[2][: len(_EDITS)]
        == ['{"origin":"bench"}', '{"z":[true,{"q":2}]}', '{"seq":null}', edited[2][3]] + ["{}"] * 7
    )
    assert json.loads(edited[3][3]) == {_EVERY_CHARACTER: 3, "seq": 2}
    assert edited[0][len(_EDITS) :] == ["7", "JSON null", '[1,{"m":null}]', "SQL NULL", "5"]
    assert edited[2][len(_EDITS) :] == ["SQL NULL"] * 4 + ["0"]
    assert all(text is None for row in edited[4:] for text in row[: len(_EDITS)]), edited[4:]
    assert all(row[len(_EDITS) :] == ["SQL NULL"] * 4 + [None] for row in edited[4:]), edited[4:]
    # A user's SQL step may pass no lists, or text that is not four lists of names: no object then,
    # rather than a failed Spark job.
    for lists in ("NULL", "'not json'", "'[[], []]'", "'[[1], [], [], []]'", "'{}'"):
        missing = jar.sql(f"SELECT {exprs.OBJECT_SELECT}(parse_json('{{\"a\": 1}}'), {lists}) AS v").first()
        assert missing is not None and missing["v"] is None, lists
    # The lists are read once and kept: a second call with other lists answers for those lists.
    both = 'parse_json(\'{"a": 1, "b": 2}\')'
    first = exprs.object_select(both, ["a"], [], {})
    second = exprs.object_select(both, ["b"], [], {"a": "c"})
    row = jar.sql(f"SELECT CAST({first} AS STRING) AS x, CAST({second} AS STRING) AS y").first()
    assert row is not None and (row["x"], row["y"]) == ('{"b":2}', '{"c":1}')
