"""The named columns a compiled pipeline passes from step to step, and how Spark values become Connect
data. Caller: pipeline and sql_step.

Each step selects the record's expressions under the fixed names below, so the next step builds on
names instead of ever-growing expressions and Spark keeps one plan of collapsible projections.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sparklink.worker.transforms import exprs as x
from sparklink.worker.transforms import spark_types
from sparklink.worker.transforms.record import Datum, Rec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import DataType

TOPIC, PARTITION, OFFSET, TIMESTAMP, HEADERS = "__sl_topic", "__sl_partition", "__sl_offset", "__sl_ts", "__sl_headers"
KEY, VALUE, KEY_SCHEMA, VALUE_SCHEMA = "__sl_key", "__sl_value", "__sl_key_schema", "__sl_value_schema"
ERROR, DROP, ORIGINAL, BARRIER = "__sl_error", "__sl_drop", "__sl_original", "__sl_barrier"
Op = Callable[["DataFrame"], "DataFrame"]


def materialize(rec: Rec, original: str = ORIGINAL) -> tuple[Op, Rec]:
    """The step's operation (select the record's expressions under fixed names) and a Rec that refers
    to those names, so the next step builds on names. Dropped records are only marked (`drop`) and
    removed once at the end: a filter here would be pushed down through the earlier projections and
    copy their expressions into its condition, step after step."""
    cols = [
        f"{rec.topic} AS {TOPIC}",
        f"{rec.partition} AS {PARTITION}",
        f"{rec.offset} AS {OFFSET}",
        f"{rec.timestamp} AS {TIMESTAMP}",
        f"{rec.headers} AS {HEADERS}",
        f"{rec.key.col} AS {KEY}",
        f"{rec.value.col} AS {VALUE}",
        f"{rec.error} AS {ERROR}",
        f"{rec.drop} AS {DROP}",
        f"{original} AS {ORIGINAL}",
    ]
    if rec.key.schema is not None:
        cols.append(f"{rec.key.schema} AS {KEY_SCHEMA}")
    if rec.value.schema is not None:
        cols.append(f"{rec.value.schema} AS {VALUE_SCHEMA}")

    def op(frame: DataFrame) -> DataFrame:
        return frame.selectExpr(*cols)

    named = Rec(
        TOPIC,
        PARTITION,
        OFFSET,
        TIMESTAMP,
        HEADERS,
        Datum(KEY, rec.key.kind, KEY_SCHEMA if rec.key.schema is not None else None),
        Datum(VALUE, rec.value.kind, VALUE_SCHEMA if rec.value.schema is not None else None),
        ERROR,
        DROP,
        rec.side,
    )
    return op, named


def barrier(frame: DataFrame, condition: str) -> DataFrame:
    """`frame` filtered by `condition` evaluated on its computed columns, never pushed below them.

    Spark pushes a filter through a projection by substituting the projected expressions into it,
    which copies a chain's whole expression tree into the filter (generated code too large to
    compile). A non-deterministic column stops that, but only while the filter refers to it: an
    unreferenced one is pruned away first. It is OR-ed in (it is never negative), so a condition that
    is constant false (a Filter without a predicate) still leaves a filter to run: folded to `false`,
    Spark would replace the whole plan below it by an empty relation, observed metrics included."""
    guarded = frame.selectExpr("*", f"spark_partition_id() AS {BARRIER}")
    return guarded.where(f"({condition}) OR {BARRIER} < 0").drop(BARRIER)


def output(datum: Datum) -> str:
    """A Datum as the column a SinkTask (or the SQL view) sees: objects become VARIANT."""
    return x.from_map(datum.col) if datum.kind == "map" else datum.col


def sql_datum(col: str, data_type: DataType | None) -> Datum:
    if data_type is None:
        return Datum(col, "binary")
    name = data_type.typeName()
    if name == "binary":
        return Datum(col, "binary")
    if name == "string":
        return Datum(col, "string")
    if name == "variant":
        return Datum.of_variant(col)
    if name == "void":
        return Datum(f"CAST({col} AS BINARY)", "binary")
    return Datum.of_variant(to_variant(col, data_type))


def to_variant(col: str, data_type: DataType) -> str:
    payload = spark_types.payload_of(col, data_type)
    if data_type.typeName() in ("struct", "map", "array"):
        return f"to_variant_object({payload})"
    return x.to_variant(payload)


def source_datum(col: str, data_type: DataType, nullable: bool) -> Datum:
    """A source column as Connect data, with the Connect schema its Spark type implies."""
    name = data_type.typeName()
    schema = spark_types.of_spark_type(data_type, nullable)
    schema_col = x.variant_of(schema) if schema is not None else None
    if name == "binary":
        return Datum(col, "binary", schema_col)
    if name == "string":
        return Datum(col, "string", schema_col)
    if name == "void":
        return Datum(f"CAST({col} AS BINARY)", "binary")
    if name == "variant":
        return Datum.of_variant(col)
    payload = spark_types.payload_of(col, data_type)
    json = f"to_json({payload})" if name in ("struct", "map", "array") else f"CAST({payload} AS STRING)"
    return Datum(to_variant(col, data_type), "variant", schema_col, json=json)
