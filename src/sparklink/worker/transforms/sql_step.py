"""Running sparklink's SQL transform inside a compiled pipeline. Caller: pipeline.

The statement reads `records`, a per-batch view of the records that have not failed (key, value,
headers, topic, partition, timestamp, offset for sinks, and the original record for the DLQ); its
result becomes the new set of records. Before anything runs, Spark's own parser reads the statement
and its plan is checked (sql_guard.spark_refusal): a statement stored before the rules, or one the
validator's parser read differently, fails the task's build instead of running.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from sparklink.worker.transforms import exprs as x
from sparklink.worker.transforms import sql_guard
from sparklink.worker.transforms.frames import (
    DROP,
    ERROR,
    ORIGINAL,
    Op,
    barrier,
    materialize,
    output,
    select_sql,
    sql_datum,
)
from sparklink.worker.transforms.record import NO_ERROR, Rec, Side, unify

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sparklink.worker.transforms.smt.sql import SqlTransform


class SqlStepError(ValueError):
    """The statement's result lacks a column the record needs; the message says what to select."""


def sql_step(frame: DataFrame, rec: Rec, alias: str, transform: SqlTransform, side: Side) -> tuple[Op, Rec]:
    """The operation of a SQL transform step, analysed against `frame` (the batch so far), and the Rec
    over its result. Records that already failed skip the statement and are appended after it."""
    view_columns = [
        f"{output(rec.key)} AS key",
        f"{output(rec.value)} AS value",
        f"{rec.headers} AS headers",
        f"{rec.topic} AS topic",
        f"{rec.partition} AS partition",
        f"{rec.timestamp} AS timestamp",
        *([f"{rec.offset} AS offset"] if side == "sink" else []),
        ORIGINAL,
    ]
    original_type = frame.schema[ORIGINAL].dataType.simpleString()
    refused = sql_guard.spark_refusal(frame.sparkSession, str(transform.config["statement"]))
    if refused:
        raise sql_guard.SqlRefused(f"The SQL statement of transform '{alias}' is refused: {refused}")

    def query(current: DataFrame) -> DataFrame:
        view = select_sql(barrier(current, f"{ERROR} IS NULL AND NOT {DROP}"), view_columns)
        view.createOrReplaceTempView(transform.view)
        out = view.sparkSession.sql(transform.query())
        if ORIGINAL not in out.columns:
            out = select_sql(out, ["*", f"CAST(NULL AS {original_type}) AS {ORIGINAL}"])
        return out

    sample = query(frame)
    missing = [c for c in ("topic", "value") if c not in sample.columns]
    if missing:
        raise SqlStepError(
            f"The SQL statement of transform '{alias}' must select the columns topic and value; its result "
            f"has {', '.join(sample.columns)}. Use SELECT *, ... to keep the record's columns."
        )
    types = {f.name: f.dataType for f in sample.schema.fields}

    def column(name: str, default: str) -> str:
        return x.ident(name) if name in types else default

    produced = Rec(
        "CAST(topic AS STRING)",
        f"CAST({column('partition', 'NULL')} AS INT)",
        f"CAST({column('offset', 'NULL')} AS BIGINT)",
        f"CAST({column('timestamp', 'NULL')} AS TIMESTAMP)",
        f"coalesce(CAST({column('headers', 'NULL')} AS {x.HEADERS_TYPE}), {x.EMPTY_HEADERS})",
        sql_datum(column("key", "CAST(NULL AS BINARY)"), types.get("key")),
        sql_datum("value", types["value"]),
        NO_ERROR,
        "false",
        rec.side,
    )
    produced_key, failed_key = unify(produced.key, rec.key)
    produced_value, failed_value = unify(produced.value, rec.value)
    left, after = materialize(replace(produced, key=produced_key, value=produced_value))
    right, _ = materialize(replace(rec, key=failed_key, value=failed_value))
    # The step's rows are the statement's and the records that failed before it: the error and drop
    # columns hold both, never the constants the statement's own rows would have.
    after = replace(after, error=ERROR, drop=DROP)

    def op(current: DataFrame) -> DataFrame:
        failed = right(barrier(current, f"{ERROR} IS NOT NULL AND NOT {DROP}"))
        return left(query(current)).unionByName(failed)

    return op, after
