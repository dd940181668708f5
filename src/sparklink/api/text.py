"""A sink record's key or value as text, in SQL. Caller: sink tasks that write text (the file sink).

Keys and values arrive as bytes, text or VARIANT (see `connector.SinkTask`). Spark's `CAST(... AS STRING)`
renders any of them, but it writes each object key and string of a VARIANT through a new JSON generator:
a tenth to a fifth of a JSON sink's CPU. The worker defines `VARIANT_TEXT` on every task's session (Java from
its jar, jvm/sql/VariantText.java) to render objects and arrays directly, with the same text, as the UTF-8
bytes Spark keeps text in; `as_text` uses it and falls back to the cast for everything else.
"""

from __future__ import annotations

VARIANT_TEXT = "sparklink_variant_text"
"""(VARIANT, time zone) -> BINARY: an object or array as `CAST(v AS STRING)` writes it, in UTF-8 (read as
text without a copy); NULL otherwise."""

VARIANT_TEXT_IN_SQL = (
    f"CREATE OR REPLACE TEMPORARY FUNCTION {VARIANT_TEXT}(v VARIANT, zone STRING) RETURNS BINARY"
    " RETURN CAST(NULL AS BINARY)"
)
"""The function on a session without the worker's jar: NULL always, so that `as_text` is Spark's cast."""


def as_text(column: str, type_name: str) -> str:
    """SQL for `column` (a Spark type named `type_name`) as text: a string as itself, bytes read as UTF-8,
    a VARIANT's objects and arrays as JSON and its scalars as Spark casts them (a JSON null as NULL)."""
    if type_name == "variant":
        return f"coalesce(CAST({VARIANT_TEXT}({column}, current_timezone()) AS STRING), CAST({column} AS STRING))"
    return f"CAST({column} AS STRING)"
