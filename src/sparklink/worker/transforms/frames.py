"""The named columns a compiled pipeline passes from step to step, how Spark values become Connect
data, and the select that sends a step's expressions to the JVM at once (`select_sql`). Caller: pipeline
and sql_step; `select_sql` also kafka_io.

Each step selects the record's expressions under the fixed names below, so the next step builds on
names instead of ever-growing expressions and Spark keeps one plan of collapsible projections.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from sparklink.worker.transforms import exprs as x
from sparklink.worker.transforms import spark_types
from sparklink.worker.transforms.record import NO_ERROR, Datum, Rec, Shape

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import DataType

TOPIC, PARTITION, OFFSET, TIMESTAMP, HEADERS = "__sl_topic", "__sl_partition", "__sl_offset", "__sl_ts", "__sl_headers"
KEY, VALUE, KEY_SCHEMA, VALUE_SCHEMA = "__sl_key", "__sl_value", "__sl_key_schema", "__sl_value_schema"
KEY_JSON, VALUE_JSON = "__sl_key_json", "__sl_value_json"
ERROR, DROP, ORIGINAL, BARRIER = "__sl_error", "__sl_drop", "__sl_original", "__sl_barrier"
Op = Callable[["DataFrame"], "DataFrame"]


def materialize(rec: Rec, original: str = ORIGINAL, carry: tuple[str, ...] = ()) -> tuple[Op, Rec]:
    """The step's operation (select the record's expressions under fixed names, and the columns named in
    `carry` as they are) and a Rec that refers to those names, so the next step builds on names. Dropped
    records are only marked (`drop`) and removed once at the end: a filter here would be pushed down
    through the earlier projections and copy their expressions into its condition, step after step."""
    cols = [
        f"{rec.topic} AS {TOPIC}",
        f"{rec.partition} AS {PARTITION}",
        f"{rec.offset} AS {OFFSET}",
        f"{rec.timestamp} AS {TIMESTAMP}",
        f"{rec.headers} AS {HEADERS}",
        f"{rec.error} AS {ERROR}",
        f"{rec.drop} AS {DROP}",
        f"{original} AS {ORIGINAL}",
    ]
    key, key_cols = _named(rec.key, KEY, KEY_SCHEMA, KEY_JSON)
    value, value_cols = _named(rec.value, VALUE, VALUE_SCHEMA, VALUE_JSON)
    cols += key_cols + value_cols + list(carry)

    def op(frame: DataFrame) -> DataFrame:
        return select_sql(frame, cols)

    # A chain whose steps cannot fail or drop keeps the constants, so that its end needs no error
    # barrier, no split into good and errant records and no cached copy of the batch.
    error = NO_ERROR if rec.error == NO_ERROR else ERROR
    drop = "false" if rec.drop == "false" else DROP
    named = Rec(TOPIC, PARTITION, OFFSET, TIMESTAMP, HEADERS, key, value, error, drop, rec.side)
    return op, named


def _named(datum: Datum, name: str, schema_name: str, json_name: str) -> tuple[Datum, list[str]]:
    """A Datum under fixed column names, and the columns that hold it. A typed struct is passed on as
    the struct, and a JSON text form beside the value as that text: the next steps (and the converter)
    read whichever form they need, and Spark prunes the others, so a chain that does not edit the
    value never turns it into a VARIANT."""
    schema = schema_name if datum.schema is not None else None
    cols = [f"{datum.schema} AS {schema_name}"] if datum.schema is not None else []
    if datum.shape is not None and schema is not None:
        cols.append(f"{datum.shape.struct} AS {name}")
        return Datum.of_shape(Shape(name, datum.shape.connect, datum.shape.nullable), schema), cols
    cols.append(f"{datum.col} AS {name}")
    if datum.json is not None:
        cols.append(f"{datum.json} AS {json_name}")
        return Datum(name, datum.kind, schema, json_name), cols
    return Datum(name, datum.kind, schema), cols


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
    if schema is not None and schema_col is not None and schema.get("type") == "struct":
        return Datum.of_shape(Shape(payload, schema, nullable), schema_col)
    if name in ("float", "double"):
        # No one text form: JsonConverter (Jackson) writes NaN and Infinity quoted, StringConverter bare,
        # so the converters read them from the VARIANT as they do on every other path.
        return Datum(to_variant(col, data_type), "variant", schema_col)
    json = f"to_json({payload})" if name in ("struct", "map", "array") else f"CAST({payload} AS STRING)"
    return Datum(to_variant(col, data_type), "variant", schema_col, json=json)


SEPARATOR = "\x00"
"""What `select_sql` joins expressions with: no SQL text of ours holds it, and one that does is sent apart."""


def select_sql(frame: DataFrame, exprs: Sequence[str]) -> DataFrame:
    """`frame.selectExpr(*exprs)`, with the expressions sent to the JVM as one string and split there.

    PySpark hands a list to the JVM an element at a time, a py4j round trip each: a pipeline step of 9
    expressions took 14 round trips, the select of the columns Spark's Kafka sink reads 21, and a task's
    start makes several such steps (a source that writes in batches, one for every batch). Here it is
    three. An expression that holds the separator (a string literal with a NUL in it) would be cut in
    two, so such a list, and any on a session without a JVM of its own, takes PySpark's way."""
    session = frame.sparkSession
    jvm = getattr(session, "_jvm", None)
    if jvm is None or not exprs or any(SEPARATOR in expr for expr in exprs):
        return frame.selectExpr(*exprs)
    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

    split = _splitter(jvm)(SEPARATOR.join(exprs), SEPARATOR)
    return ClassicDataFrame(frame._jdf.selectExpr(split), session)  # type: ignore[attr-defined]


@functools.cache
def _splitter(jvm: Any) -> Any:
    """The JVM's split that keeps empty pieces (so N expressions are N strings), looked up once per JVM:
    each step of a class's name is a round trip."""
    return jvm.org.apache.commons.lang3.StringUtils.splitByWholeSeparatorPreserveAllTokens
