"""`JdbcSinkConnector` (`jdbc-sink`): JSON record values into PostgreSQL tables, inserted or upserted.

Per micro-batch and topic, all in the JVM until the last step:
1. the values are parsed with `from_json` against `value.schema` (a Spark DDL string; a malformed value
   fails the task) and null values (tombstones) are skipped;
2. `insert.mode=insert`: Spark's JDBC writer appends the rows to the target table;
   `insert.mode=upsert`: it appends them, with their Kafka offset, to this task's unlogged staging
   table, then psycopg runs in one transaction
   `INSERT INTO target SELECT DISTINCT ON (pk) ... FROM staging ORDER BY pk, offset DESC
   ON CONFLICT (pk) DO UPDATE ...` and `TRUNCATE staging`, so the last record of a key in a Kafka
   partition wins (across partitions no order exists; keep a key in one partition).
The runtime commits the batch's offsets after this returns: at least once, and an upsert replayed after
a crash is idempotent.

`table.name.format` maps a topic to its table (`${topic}`; a dot separates a schema). With `auto.create`
the target is created from `value.schema`, with `pk.fields` as its primary key; columns are not
evolved afterwards. The staging table (`<target>__stg_<hash>`, per task) is recreated when the task starts.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sparklink.api import config as cfg
from sparklink.api.connector import SinkConnector, SinkTask, TaskContext
from sparklink.connectors.jdbc.common import CONNECTION_CONFIG, Connection, name_parts, quote_ident, quote_name

if TYPE_CHECKING:
    import psycopg
    from pyspark.sql import DataFrame
    from pyspark.sql.types import DataType, StructType

OFFSET_COLUMN = "__kafka_offset"
# Spark type (simpleString) -> PostgreSQL column type for auto.create; decimals are handled apart.
PG_TYPES = {
    "string": "TEXT",
    "boolean": "BOOLEAN",
    "tinyint": "SMALLINT",
    "smallint": "SMALLINT",
    "int": "INTEGER",
    "bigint": "BIGINT",
    "float": "REAL",
    "double": "DOUBLE PRECISION",
    "date": "DATE",
    "timestamp": "TIMESTAMPTZ",
    "timestamp_ntz": "TIMESTAMP",
    "binary": "BYTEA",
}

CONFIG = CONNECTION_CONFIG.merged(
    cfg.ConfigDef()
    .key(
        "table.name.format",
        "STRING",
        "Destination table name; ${topic} is replaced by the record's topic.",
        default="${topic}",
        validator=cfg.non_empty,
    )
    .key(
        "insert.mode",
        "STRING",
        "`insert` appends every record; `upsert` inserts or updates the row with the record's pk.fields.",
        default="insert",
        choices=("insert", "upsert"),
    )
    .key("pk.fields", "LIST", "Value fields forming the primary key (required for upsert).", default="")
    .key(
        "value.schema",
        "STRING",
        "Spark DDL of the JSON record values, e.g. `id BIGINT, name STRING, amount DOUBLE`.",
        importance="HIGH",
        validator=cfg.non_empty,
    )
    .key("auto.create", "BOOLEAN", "Create a missing destination table from value.schema.", default=True)
)


class JdbcSinkConnector(SinkConnector):
    @classmethod
    def config_def(cls) -> cfg.ConfigDef:
        return CONFIG

    def validate(self, config: Mapping[str, str]) -> dict[str, list[str]]:
        errors = super().validate(config)
        if not any(errors.values()):
            parsed = CONFIG.parse(config)
            if parsed["insert.mode"] == "upsert" and not parsed["pk.fields"]:
                errors["pk.fields"].append(cfg.invalid("pk.fields", "", "upsert needs at least one key field"))
        return errors

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config) for _ in range(max_tasks)]


class JdbcSinkTask(SinkTask):
    def __init__(self) -> None:
        self._conn: psycopg.Connection[Any] | None = None
        self._ready: set[str] = set()

    def write_batch(self, batch: DataFrame, batch_id: int, ctx: TaskContext) -> None:
        from pyspark.sql import functions as F
        from pyspark.sql.types import DataType, StructType

        parsed = CONFIG.parse(ctx.config)
        schema = DataType.fromDDL(parsed["value.schema"])
        assert isinstance(schema, StructType)
        keys: list[str] = parsed["pk.fields"]
        missing = [k for k in keys if k not in schema.fieldNames()]
        if missing:
            raise ValueError(f"pk.fields {', '.join(missing)} are not fields of value.schema")
        connection = Connection.from_config(ctx.config)
        values = batch.where(F.col("value").isNotNull()).select(
            "topic",
            F.col("offset").alias(OFFSET_COLUMN),
            F.from_json(F.col("value").cast("string"), schema, {"mode": "FAILFAST"}).alias("v"),
        )
        configured = [t.strip() for t in ctx.config.get("topics", "").split(",") if t.strip()]
        topics = configured if len(configured) == 1 else [r[0] for r in batch.select("topic").distinct().collect()]
        for topic in topics:
            rows = values if len(configured) == 1 else values.where(F.col("topic") == topic)
            table = str(parsed["table.name.format"]).replace("${topic}", topic)
            upsert = parsed["insert.mode"] == "upsert"
            staging = _staging_name(table, ctx) if upsert else None
            self._prepare(connection, table, staging, schema, keys, bool(parsed["auto.create"]))
            columns = [F.col(f"v.{quote_field(n)}").alias(n) for n in schema.fieldNames()]
            if staging is None:
                _append(rows.select(*columns), connection, table)
            else:
                _append(rows.select(*columns, F.col(OFFSET_COLUMN)), connection, staging)
                self._merge(connection, table, staging, schema.fieldNames(), keys)

    def stop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # ------------------------------------------------------------------ control statements (psycopg)
    def _connection(self, connection: Connection) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = connection.connect(autocommit=True)
        return self._conn

    def _prepare(
        self,
        connection: Connection,
        table: str,
        staging: str | None,
        schema: StructType,
        keys: list[str],
        auto_create: bool,
    ) -> None:
        """Create the target (auto.create) and recreate the staging table, once per table and task run."""
        if table in self._ready:
            return
        import psycopg

        conn = self._connection(connection)
        columns = [f"{quote_ident(f.name)} {pg_type(f.dataType)}" for f in schema.fields]
        if auto_create:
            key = f", PRIMARY KEY ({', '.join(quote_ident(k) for k in keys)})" if keys else ""
            # Tasks of one connector may race to create the table: the loser's error means it exists.
            with contextlib.suppress(psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable):
                conn.execute(f"CREATE TABLE IF NOT EXISTS {quote_name(table)} ({', '.join(columns)}{key})")  # type: ignore[arg-type]
        if staging is not None:
            with conn.transaction():
                conn.execute(f"DROP TABLE IF EXISTS {quote_name(staging)}")  # type: ignore[arg-type]
                offset = f"{quote_ident(OFFSET_COLUMN)} BIGINT"
                conn.execute(f"CREATE UNLOGGED TABLE {quote_name(staging)} ({', '.join([*columns, offset])})")  # type: ignore[arg-type]
        self._ready.add(table)

    def _merge(self, connection: Connection, table: str, staging: str, fields: list[str], keys: list[str]) -> None:
        conn = self._connection(connection)
        with conn.transaction():
            conn.execute(upsert_statement(table, staging, fields, keys))  # type: ignore[arg-type]
            conn.execute(f"TRUNCATE {quote_name(staging)}")  # type: ignore[arg-type]


def upsert_statement(table: str, staging: str, fields: list[str], keys: list[str]) -> str:
    """The one statement that folds a staged batch into the target: last record per key wins."""
    columns = ", ".join(quote_ident(f) for f in fields)
    key = ", ".join(quote_ident(k) for k in keys)
    others = [f for f in fields if f not in keys]
    action = (
        "DO UPDATE SET " + ", ".join(f"{quote_ident(f)} = EXCLUDED.{quote_ident(f)}" for f in others)
        if others
        else "DO NOTHING"
    )
    return (
        f"INSERT INTO {quote_name(table)} ({columns}) "
        f"SELECT DISTINCT ON ({key}) {columns} FROM {quote_name(staging)} "
        f"ORDER BY {key}, {quote_ident(OFFSET_COLUMN)} DESC "
        f"ON CONFLICT ({key}) {action}"
    )


def pg_type(data_type: DataType) -> str:
    from pyspark.sql.types import DecimalType

    if isinstance(data_type, DecimalType):
        return f"NUMERIC({data_type.precision},{data_type.scale})"
    name = data_type.simpleString()
    if name not in PG_TYPES:
        raise ValueError(f"value.schema type {name} has no PostgreSQL column type; use {', '.join(PG_TYPES)}")
    return PG_TYPES[name]


def quote_field(name: str) -> str:
    """A struct field reference for Spark SQL (backticks), whatever characters the name has."""
    return "`" + name.replace("`", "``") + "`"


def _staging_name(table: str, ctx: TaskContext) -> str:
    digest = hashlib.sha1(f"{ctx.connector}/{ctx.task_id}/{table}".encode()).hexdigest()[:12]
    *schema, name = name_parts(table)
    # PostgreSQL truncates identifiers at 63 bytes; the hash keeps truncated names distinct.
    return ".".join([*schema, f"{name[:40]}__stg_{digest}"])


def _append(rows: DataFrame, connection: Connection, table: str) -> None:
    writer = rows.write.format("jdbc").mode("append").option("dbtable", quote_name(table))
    for key, value in connection.spark_options().items():
        writer = writer.option(key, value)
    writer.save()


JdbcSinkConnector.task_class = JdbcSinkTask
