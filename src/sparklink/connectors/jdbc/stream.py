"""A Spark streaming source over one PostgreSQL table or query, by incrementing id or timestamp.

Why Python and psycopg rather than Spark's JDBC reader: a `DataSourceStreamReader` runs outside the
Spark session (a planner process on the driver, Python workers on executors) and cannot start a Spark
read, and Spark's own JDBC source is batch only. So the rows pass through one Python worker per table
and micro-batch, as tuples; everything after (JSON values, the Kafka write) happens in the JVM. That
bounds a table's throughput to one Python process, which suits change polling, not bulk copies.

- `latestOffset` (driver): at most once per `poll.interval.ms`, the highest column value among the next
  `batch.max.rows` rows after the start, `SELECT max(c) FROM (... WHERE c > start ORDER BY c LIMIT n)`;
  in timestamp mode only rows older than the database's `CURRENT_TIMESTAMP` count, so that a row
  committed later with an earlier timestamp is less likely to be skipped (Confluent's caveat holds:
  timestamp mode alone misses rows that share the last timestamp seen but commit after it was read);
- `read` (executor): `WHERE c > start AND c <= end ORDER BY c` through a server-side cursor, each row
  with `_sparklink_offset`, the column value as an integer (epoch microseconds for timestamps).

Columns become Spark types by PostgreSQL type; other types (uuid, json, arrays, ...) are read as text.
Sessions run in UTC: a `timestamp without time zone` value is taken as UTC.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

FORMAT = "sparklink_jdbc_poll"
OFFSET_COLUMN = "_sparklink_offset"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
TIMESTAMP_OID, TIMESTAMPTZ_OID = 1114, 1184
# PostgreSQL type OID -> Spark type; numeric is apart (decimal when it has a precision).
SPARK_TYPES: dict[int, DataType] = {
    16: BooleanType(),
    17: BinaryType(),
    20: LongType(),
    21: ShortType(),
    23: IntegerType(),
    25: StringType(),
    700: FloatType(),
    701: DoubleType(),
    1042: StringType(),
    1043: StringType(),
    1082: DateType(),
    TIMESTAMP_OID: TimestampNTZType(),
    TIMESTAMPTZ_OID: TimestampType(),
}
NUMERIC_OID = 1700


def micros_of(value: datetime) -> int:
    """Epoch microseconds of a timestamp; a naive one is UTC."""
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    delta = aware - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def timestamp_of(micros: int, aware: bool) -> datetime:
    value = EPOCH + timedelta(microseconds=micros)
    return value if aware else value.replace(tzinfo=None)


class JdbcPollDataSource(DataSource):
    """Options: `conninfo` (JSON of psycopg.connect arguments but the `password`), `relation` (a quoted table name or
    `(query) AS q`), `column` (the tracked column's name), `mode`, `start` (the value to read after),
    `batch.max.rows`, `poll.interval.ms`."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        import psycopg

        with psycopg.connect(**_conninfo(self.options)) as conn:
            cursor = conn.execute(f"SELECT * FROM {self.options['relation']} LIMIT 0")  # type: ignore[arg-type]
            fields = [
                StructField(d.name, _spark_type(d.type_code, d.precision, d.scale)) for d in cursor.description or []
            ]
        return StructType([*fields, StructField(OFFSET_COLUMN, LongType(), False)])

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return JdbcPollReader(dict(self.options), schema)


def _conninfo(options: Mapping[str, str]) -> dict[str, Any]:
    conninfo: dict[str, Any] = json.loads(options["conninfo"])
    if options.get("password"):
        conninfo["password"] = options["password"]
    return conninfo


def _spark_type(oid: int, precision: int | None, scale: int | None) -> DataType:
    if oid == NUMERIC_OID:
        return DecimalType(precision, scale or 0) if precision and precision <= 38 else StringType()
    return SPARK_TYPES.get(oid, StringType())


class _Range(InputPartition):
    def __init__(self, start: int, end: int) -> None:
        super().__init__((start, end))
        self.start, self.end = start, end


class JdbcPollReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.conninfo = _conninfo(options)
        self.relation = options["relation"]
        self.column = _quote(options["column"])
        self.timestamps = options["mode"] == "timestamp"
        self.start = int(options["start"])
        self.batch_rows = int(options["batch.max.rows"])
        self.poll_seconds = int(options["poll.interval.ms"]) / 1000
        self.fields = [f for f in schema.fields if f.name != OFFSET_COLUMN]
        tracked = next((f for f in self.fields if f.name == options["column"]), None)
        if tracked is None:
            raise ValueError(f"column {options['column']!r} is not a column of {self.relation}")
        # A timestamptz column compares with aware datetimes, a timestamp column with naive (UTC) ones.
        self.aware = isinstance(tracked.dataType, TimestampType)
        self._last_poll = float("-inf")
        self._conn: Any = None

    def initialOffset(self) -> dict[str, Any]:
        return {"value": self.start}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.batch_rows)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        if time.monotonic() - self._last_poll < self.poll_seconds:
            return start
        self._last_poll = time.monotonic()
        rows = None if isinstance(limit, ReadAllAvailable) else getattr(limit, "max_rows", self.batch_rows)
        where = f"{self.column} > %s"
        if self.timestamps:
            where += f" AND {self.column} < CURRENT_TIMESTAMP"
        sql = f"SELECT {self.column} AS c FROM {self.relation} WHERE {where} ORDER BY {self.column}"
        params: list[Any] = [self._param(int(start["value"]))]
        if rows is not None:
            sql += " LIMIT %s"
            params.append(rows)
        found = self._connection().execute(f"SELECT max(c) FROM ({sql}) AS batch", params).fetchone()
        if found is None or found[0] is None:
            return start
        return {"value": micros_of(found[0]) if self.timestamps else int(found[0])}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        # One partition per micro-batch keeps the rows in column order up to the topic.
        first, last = int(start["value"]), int(end["value"])
        return [_Range(first, last)] if last > first else []

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        import psycopg

        assert isinstance(partition, _Range)
        # Types without a Spark twin come as text, so every value fits its Spark field.
        select = ", ".join(_quote(f.name) + ("::text" if f.dataType == StringType() else "") for f in self.fields)
        if self.timestamps:
            offset = f"(extract(epoch FROM {self.column}) * 1000000)::bigint"
        else:
            offset = f"{self.column}::bigint"
        # Ordered by the alias: the tracked column's own name may be ambiguous among the outputs.
        sql = (
            f"SELECT {select}, {offset} AS {_quote(OFFSET_COLUMN)} FROM {self.relation} "
            f"WHERE {self.column} > %s AND {self.column} <= %s ORDER BY {_quote(OFFSET_COLUMN)}"
        )
        with psycopg.connect(**self.conninfo) as conn, conn.cursor(name="sparklink_poll") as cursor:
            cursor.itersize = 2000
            cursor.execute(sql, [self._param(partition.start), self._param(partition.end)])  # type: ignore[arg-type]
            yield from cursor

    def stop(self) -> None:
        if self._conn is not None:
            self._conn.close()

    def _connection(self) -> Any:
        import psycopg

        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(autocommit=True, **self.conninfo)
        return self._conn

    def _param(self, value: int) -> Any:
        return timestamp_of(value, self.aware) if self.timestamps else value


def _quote(ident: str) -> str:
    return '"' + ident.replace('"', '""') + '"'
