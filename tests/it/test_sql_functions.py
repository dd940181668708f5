"""The SQL functions the worker defines on its Spark sessions for transforms' expressions."""

from __future__ import annotations

from typing import Any

import pytest

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


# For the UTF-8 check: the values above, plus a bad byte after whole eight-byte words (the check's
# last, byte-wise stretch), a code point past U+10FFFF and a valid four-byte character.
_CHECKED = [*_VALUES, b"sixteen bytes ok\xff", b"past max \xf4\x90\x80\x80", "emoji 🚀 ok".encode()]


def _checked(session: Any) -> list[str | None]:
    frame = session.createDataFrame([(i, v) for i, v in enumerate(_CHECKED)], "i int, b binary")
    rows = frame.selectExpr("i", f"{exprs.utf8_or_null('b')} AS text").orderBy("i").collect()
    return [row["text"] for row in rows]


def _strict(value: bytes | None) -> str | None:
    """The text of valid UTF-8, else None (what a JSON parser is then told: malformed)."""
    try:
        return None if value is None else value.decode("utf-8")
    except UnicodeDecodeError:
        return None


def test_utf8_or_null_from_the_jar_keeps_valid_utf8_and_refuses_the_rest(spark: Any) -> None:
    session = spark.newSession()
    register_functions(session)
    described = [row[0] for row in session.sql(f"DESCRIBE FUNCTION EXTENDED {exprs.UTF8_OR_NULL}").collect()]
    assert not any(line.startswith("Body:") for line in described), described  # a JVM function, not SQL
    expected = [_strict(v) for v in _CHECKED]
    assert expected.count(None) == 7  # the null, the four invalid values above and the two new ones
    assert _checked(session) == expected


def test_utf8_or_null_in_sql_alone_gives_the_same_answers(spark: Any) -> None:
    session = spark.newSession()
    session.sql(exprs.UTF8_OR_NULL_IN_SQL)
    described = [row[0] for row in session.sql(f"DESCRIBE FUNCTION EXTENDED {exprs.UTF8_OR_NULL}").collect()]
    assert any(line.startswith("Body:") for line in described), described
    assert _checked(session) == [_strict(v) for v in _CHECKED]
