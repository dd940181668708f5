"""Spark SQL expression text for Connect data held as VARIANT. Caller: converters, SMTs, predicates.

Every expression of a chain is built as SQL text and handed to Spark once per step (`selectExpr`), so
compiling a chain costs a handful of JVM calls instead of one per sub-expression. Connect's
schemaless data (maps, lists, primitives) and the payload of its schema'd data are VARIANT values; a
transform reads and edits an object's fields in place with the jar's object functions (`object_get`,
`object_put`, `object_select`); only a transform that rewrites every key (Flatten) or builds a new
object (HoistField, ValueToKey's key) makes a `map<string,variant>`.

Every helper is exception-free at run time (try_* forms), because one record's bad data must become an
error value for that record, never a failed Spark job.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Collection
from typing import Any

VARIANT_MAP = "map<string,variant>"
HEADERS_TYPE = "array<struct<key:string,value:binary>>"
NULL_VARIANT = "CAST(NULL AS VARIANT)"
NULL_MAP = f"CAST(NULL AS {VARIANT_MAP})"
EMPTY_HEADERS = f"CAST(array() AS {HEADERS_TYPE})"
INTEGRAL = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_names = itertools.count()


def fresh(prefix: str = "x") -> str:
    """A lambda variable name no other lambda in the same expression uses."""
    return f"_{prefix}{next(_names)}"


def ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def text(value: str) -> str:
    """A SQL string literal. `$` is written as a unicode escape so that Spark's ${var} substitution
    never touches it."""
    escaped = value.replace("\\", "\\\\").replace("'", "\\'").replace("$", "\\u0024")
    escaped = escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return f"'{escaped}'"


def lit(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value}L"
    if isinstance(value, float):
        return f"CAST({value!r} AS DOUBLE)"
    return text(str(value))


UTF8_TEXT = "sparklink_utf8_text"
"""The SQL function `utf8_text` calls, registered on each worker session (execution/spark.py): Java's
decoder from our jar (jvm/sql/Utf8Text.java) where the session loaded it, else `UTF8_TEXT_IN_SQL`."""

UTF8_TEXT_IN_SQL = (
    f"CREATE OR REPLACE TEMPORARY FUNCTION {UTF8_TEXT}(bytes BINARY) RETURNS STRING"
    " RETURN make_valid_utf8(CAST(bytes AS STRING))"
)
"""The same function in Spark SQL alone, for a session without our jar. It checks each value byte by
byte (three times the cost of the cast for 1 KiB values) and reads an encoded surrogate (ED A0 80) as
three U+FFFD where Java reads one; other invalid sequences come out as Java's."""


def utf8_text(raw: str) -> str:
    """Bytes read as UTF-8 text the way Java's `new String(bytes, UTF_8)` reads them: each invalid
    sequence becomes U+FFFD. Spark's `decode` raises on such bytes (since 4.0), which would fail the
    whole batch over one record."""
    return f"{UTF8_TEXT}(CAST({raw} AS BINARY))"


def json_bytes(json: str) -> str:
    """The UTF-8 bytes of JSON text Spark wrote (`to_json`, or a cast of a number). Such text is valid UTF-8
    (Jackson writes through Java strings, which hold none of the invalid sequences `encode` replaces), so
    its bytes are the cast's, without `encode`'s check of every value: 6% of the JVM's samples for a source
    with JsonConverter and bench.transforms' chain (JFR)."""
    return f"binary({json})"  # the cast, in the form the parser reads without looking ahead (see `when`)


JSON_VARIANT = "sparklink_json_variant"
"""The SQL function `json_variant` calls, registered as `UTF8_TEXT` is: Java's parse from our jar
(jvm/sql/JsonVariant.java: one Jackson factory for all values, Spark's VARIANT builder), else
`JSON_VARIANT_IN_SQL`."""

JSON_VARIANT_IN_SQL = (
    f"CREATE OR REPLACE TEMPORARY FUNCTION {JSON_VARIANT}(bytes BINARY) RETURNS VARIANT"
    " RETURN try_parse_json(try_validate_utf8(CAST(bytes AS STRING)))"
)
"""The same function in Spark SQL alone: the same VARIANTs for more CPU (a Jackson factory per value, each
byte checked for UTF-8 one by one; a converter-only JSON sink's batch took 1.25x as long)."""


JSON_VARIANT_WITHOUT = "sparklink_json_variant_without"
"""The SQL function `json_variant` calls with fields to leave out: Java's parse from our jar
(jvm/sql/JsonVariantWithout.java, which skips them), else `JSON_VARIANT_WITHOUT_IN_SQL`."""

JSON_VARIANT_WITHOUT_IN_SQL = (
    f"CREATE OR REPLACE TEMPORARY FUNCTION {JSON_VARIANT_WITHOUT}(bytes BINARY, lists STRING) RETURNS VARIANT"
    " RETURN try_parse_json(try_validate_utf8(CAST(bytes AS STRING)))"
)
"""The same function in Spark SQL alone: the whole value, as nothing reads the fields it could leave out."""


def json_variant(raw: str, unread: Collection[str] = ()) -> str:
    """JSON bytes as a VARIANT, or NULL where they are not valid UTF-8 or not JSON (for the converter to
    report as malformed). Top-level object fields named in `unread`, which nothing after reads, may be left
    out: the parse passes over their text (they are still checked as JSON)."""
    if not unread:
        return f"{JSON_VARIANT}(CAST({raw} AS BINARY))"
    return f"{JSON_VARIANT_WITHOUT}(CAST({raw} AS BINARY), {_select_lists(sorted(unread), [], {})})"


OBJECT_PUT = "sparklink_object_put"
"""The SQL function `object_put` calls, registered as `UTF8_TEXT` is: Java's edit from our jar
(jvm/sql/ObjectPut.java, Spark's VARIANT builder), else `OBJECT_PUT_IN_SQL`."""

OBJECT_PUT_IN_SQL = (
    f"CREATE OR REPLACE TEMPORARY FUNCTION {OBJECT_PUT}(obj VARIANT, field STRING, val VARIANT) RETURNS VARIANT"
    f" RETURN to_variant_object(map_concat(map_filter(try_variant_get(obj, '$', '{VARIANT_MAP}'),"
    " (k, v) -> k != field), map(field, val)))"
)
"""The same function in Spark SQL alone: the object read as a map and written back, through map functions
Spark evaluates without code generation."""

OBJECT_SELECT = "sparklink_object_select"
"""The SQL function `object_select` calls: Java's edit from our jar (jvm/sql/ObjectSelect.java), else
`OBJECT_SELECT_IN_SQL`."""

_SELECT_LISTS = "from_json(lists, 'array<array<string>>')"
"""`object_select`'s lists text read as its four arrays (folded once where the text is a literal)."""

OBJECT_SELECT_IN_SQL = (
    f"CREATE OR REPLACE TEMPORARY FUNCTION {OBJECT_SELECT}(obj VARIANT, lists STRING) RETURNS VARIANT"
    f" RETURN to_variant_object(transform_keys(map_filter(try_variant_get(obj, '$', '{VARIANT_MAP}'),"
    f" (k, v) -> NOT array_contains({_SELECT_LISTS}[0], k)"
    f" AND (size({_SELECT_LISTS}[1]) = 0 OR array_contains({_SELECT_LISTS}[1], k))),"
    f" (k, v) -> coalesce(try_element_at(map_from_arrays({_SELECT_LISTS}[2], {_SELECT_LISTS}[3]), k), k)))"
)
"""The same function in Spark SQL alone: the object read as a map, filtered, renamed and written back."""

OBJECT_GET = "sparklink_object_get"
"""The SQL function `object_get` calls: Java's lookup from our jar (jvm/sql/ObjectGet.java), else
`OBJECT_GET_IN_SQL`."""

OBJECT_GET_IN_SQL = (
    f"CREATE OR REPLACE TEMPORARY FUNCTION {OBJECT_GET}(obj VARIANT, field STRING) RETURNS VARIANT"
    f" RETURN try_element_at(try_variant_get(obj, '$', '{VARIANT_MAP}'), field)"
)
"""The same function in Spark SQL alone: the whole object read as a map to find one field."""

OBJECT_SIZE = "sparklink_object_size"
"""The SQL function `object_size` calls: Java's count from our jar (jvm/sql/ObjectSize.java), else
`OBJECT_SIZE_IN_SQL`."""

OBJECT_SIZE_IN_SQL = (
    f"CREATE OR REPLACE TEMPORARY FUNCTION {OBJECT_SIZE}(obj VARIANT) RETURNS INT"
    f" RETURN CASE WHEN try_variant_get(obj, '$', '{VARIANT_MAP}') IS NOT NULL"
    f" THEN size(try_variant_get(obj, '$', '{VARIANT_MAP}')) END"
)
"""The same function in Spark SQL alone: the whole object read as a map to count its fields."""


def object_get(v: str, name: str) -> str:
    """Field `name` of the object in VARIANT `v` (a JSON null field as VARIANT null); NULL when `v` is not
    an object or has no such field."""
    return f"{OBJECT_GET}({v}, {text(name)})"


def object_size(v: str) -> str:
    """How many fields the object in VARIANT `v` has; NULL when `v` is not an object."""
    return f"{OBJECT_SIZE}({v})"


def object_put(v: str, name: str, value: str) -> str:
    """The object in VARIANT `v` with field `name` set to VARIANT `value` (SQL NULL as JSON null),
    replacing a field of that name; NULL when `v` is not an object."""
    return f"{OBJECT_PUT}({v}, {text(name)}, {value})"


def object_select(v: str, exclude: list[str], include: list[str], renames: dict[str, str]) -> str:
    """The object in VARIANT `v` with only the fields not excluded and, if `include` is not empty, included,
    renamed by `renames` (the last of two fields renamed to one name wins); NULL when `v` is not an object.
    The four lists go as one JSON text, which the function reads once (jvm/sql/ObjectSelect.java says why)."""
    return f"{OBJECT_SELECT}({v}, {_select_lists(exclude, include, renames)})"


def _select_lists(exclude: list[str], include: list[str], renames: dict[str, str]) -> str:
    """`object_select`'s four name lists as its one JSON text, an SQL literal."""
    return text(json.dumps([exclude, include, list(renames), list(renames.values())]))


def object_without(v: str, names: str) -> str:
    """The object in VARIANT `v` without the fields named in `names`, an SQL array<string> known only per
    record (a constant list goes to `object_select`, whose text is read once)."""
    empty = string_array([])
    return f"{OBJECT_SELECT}({v}, to_json(array({names}, {empty}, {empty}, {empty})))"


def string_array(values: list[str]) -> str:
    """Strings as an SQL array<string> (typed even when empty)."""
    return f"CAST(array({', '.join(text(v) for v in values)}) AS ARRAY<STRING>)"


def is_object(v: str) -> str:
    """VARIANT `v` holds an object (false for SQL NULL), without reading its fields: only an object casts to
    a struct, and one without fields reads none."""
    return f"(try_variant_get({v}, '$', 'struct<>') IS NOT NULL)"


def variant_of(value: Any) -> str:
    """A constant VARIANT holding a Python value (JSON-compatible)."""
    return f"parse_json({text(json.dumps(value))})"


def to_variant(expr: str) -> str:
    return f"CAST({expr} AS VARIANT)"


def case(*branches: tuple[str, str], otherwise: str | None = None) -> str:
    """The first branch's value whose condition holds, else `otherwise` (else NULL). One branch is written
    as `when` writes it; several stay a CASE, which Spark's code generation splits into methods: a nest of
    `if` calls is generated inline and could make a method too large for the JIT (not measured here)."""
    if len(branches) == 1:
        return when(*branches[0], otherwise=otherwise)
    body = " ".join(f"WHEN {cond} THEN {value}" for cond, value in branches)
    tail = f" ELSE {otherwise}" if otherwise is not None else ""
    return f"CASE {body}{tail} END"


def when(cond: str, value: str, otherwise: str | None = None) -> str:
    """`value` where `cond` holds, else `otherwise` (else NULL), as an `if` call: Spark's parser reads a
    CASE, a CAST or a bare parenthesis to its end before it knows what it started, so each one wrapped
    around another re-reads all it holds. A MaskField of 16 fields, on the general path with a schema,
    took 15 s the first time a JVM parsed its 69 KB of SQL (ANTLR building its prediction cache for
    the 16,000 tokens it read ahead at a time), not 0.3 s; a function call is known by its name and `(`."""
    return f"if({cond}, {value}, {otherwise if otherwise is not None else 'NULL'})"


def concat(*parts: str) -> str:
    return f"concat({', '.join(parts)})"


def is_null(v: str) -> str:
    """Connect null: SQL NULL or a JSON null inside a VARIANT."""
    return f"if(isnull({v}), true, is_variant_null({v}))"  # never NULL: is_variant_null(NULL) is false


def kind(v: str) -> str:
    """The VARIANT's type name (STRING, BIGINT, DECIMAL(3,1), OBJECT<...>, ARRAY<...>, ...)."""
    return f"schema_of_variant({v})"


def as_map(v: str) -> str:
    """The object in `v` as map<string,variant>; NULL when `v` is not an object."""
    return f"try_variant_get({v}, '$', '{VARIANT_MAP}')"


def from_map(m: str) -> str:
    return f"to_variant_object({m})"


def in_list(expr: str, names: list[str]) -> str:
    return f"{expr} IN ({', '.join(text(n) for n in names)})" if names else "false"


def json_string(s: str) -> str:
    """A string as JSON text (a quoted, escaped string; NULL stays NULL), written by Jackson as
    Connect's JsonConverter writes it and as `to_json` of the string as VARIANT does, without building
    a VARIANT: the array brackets of `["..."]` come off, never a character of the string (it is quoted)."""
    return when(f"{s} IS NOT NULL", f"btrim(to_json(array({s})), '[]')")


def string_of(v: str) -> str:
    """Text of a VARIANT: a string as itself, anything else as its JSON (Spark's VARIANT to STRING cast)."""
    return f"string({v})"  # the cast, in the form the parser reads without looking ahead (see `when`)


def java_class(v: str) -> str:
    """The Java class Connect's schemaless data would hold for a VARIANT value (for error texts).

    Only evaluated for records that already failed, so the cost of schema_of_variant does not matter.
    """
    t = kind(v)
    return case(
        (is_null(v), "'null'"),
        (f"{t} = 'STRING'", "'java.lang.String'"),
        (f"{t} = 'BOOLEAN'", "'java.lang.Boolean'"),
        (f"{t} IN ('TINYINT', 'SMALLINT', 'INT', 'BIGINT')", "'java.lang.Long'"),
        (f"({t} LIKE 'DECIMAL%' OR {t} IN ('DOUBLE', 'FLOAT'))", "'java.lang.Double'"),
        (f"{t} LIKE 'ARRAY%'", "'java.util.ArrayList'"),
        (f"{t} LIKE 'OBJECT%'", "'java.util.HashMap'"),
        (f"{t} = 'BINARY'", "'[B'"),
        otherwise="'java.util.Date'",
    )


def utc_text(ts: str, pattern: str) -> str:
    """Format a TIMESTAMP with a date pattern in UTC, as Connect's SimpleDateFormat(UTC) does."""
    wall = f"convert_timezone(current_timezone(), 'UTC', CAST({ts} AS TIMESTAMP_NTZ))"
    return f"date_format({wall}, {text(pattern)})"


def parse_utc(value: str, pattern: str) -> str:
    """Parse text with a date pattern as a UTC wall-clock time; NULL when it does not match."""
    return f"from_utc_timestamp(try_to_timestamp({value}, {text(pattern)}), current_timezone())"
