"""`JdbcSourceConnector` (`jdbc-source`): new rows of PostgreSQL tables, or of one query, as JSON records.

A subset of Confluent's JDBC source: `mode` is `incrementing` (a strictly increasing column, e.g. a
serial id) or `timestamp` (a last-modified column); bulk and timestamp+incrementing are not offered.
Each table (`table.whitelist`, split over up to `tasks.max` tasks) or the one `query` is polled every
`poll.interval.ms` by a Python Data Source (`stream`), and each row becomes a record on
`topic.prefix` + table name (the query's topic is `topic.prefix` itself): no key, the row as a Connect
Struct (`struct(*)`), which the value.converter writes: a JSON object by default and with JsonConverter
(timestamps as epoch milliseconds, as Connect's JsonConverter writes them), with its schema when
schemas.enable=true.

Offsets follow Confluent's layout, so they read the same in both runtimes: source partition
{"table": <name>} (or {"query": "query"}), offset {"incrementing": <last id>} or
{"timestamp": <epoch ms>, "timestamp_nanos": <nanoseconds within the second>}. A task starts after its
stored offset, or from the beginning (ids above -1, timestamps after the epoch) without one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import reduce
from typing import TYPE_CHECKING, Any

from sparklink.api import config as cfg
from sparklink.api.connector import Offset, Partition, SourceConnector, SourceTask, TaskContext
from sparklink.connectors.jdbc.common import CONNECTION_CONFIG, Connection, quote_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

QUERY_PARTITION: Partition = {"query": "query"}

CONFIG = CONNECTION_CONFIG.merged(
    cfg.ConfigDef()
    .key("table.whitelist", "LIST", "Tables to copy (`schema.table` or `table`).", default="")
    .key("query", "STRING", "A SELECT to poll instead of tables.", default="")
    .key(
        "mode",
        "STRING",
        "`incrementing`: new rows by a strictly increasing column; `timestamp`: new or changed rows by a "
        "timestamp column.",
        importance="HIGH",
        choices=("incrementing", "timestamp"),
    )
    .key("incrementing.column.name", "STRING", "The strictly increasing column.", default="")
    .key("timestamp.column.name", "STRING", "The last-modified timestamp column.", default="")
    .key(
        "topic.prefix",
        "STRING",
        "Prefix of each table's topic name; the whole topic name for a query.",
        importance="HIGH",
    )
    .key(
        "poll.interval.ms",
        "INT",
        "How often each table is polled for new rows.",
        default=5000,
        validator=cfg.at_least(1),
    )
    .key(
        "batch.max.rows",
        "INT",
        "The most rows of one table in one micro-batch (rows sharing the last value come along).",
        default=10000,
        validator=cfg.at_least(1),
    )
)


class JdbcSourceConnector(SourceConnector):
    @classmethod
    def config_def(cls) -> cfg.ConfigDef:
        return CONFIG

    def validate(self, config: Mapping[str, str]) -> dict[str, list[str]]:
        errors = super().validate(config)
        if any(errors.values()):
            return errors
        parsed = CONFIG.parse(config)
        if bool(parsed["table.whitelist"]) == bool(parsed["query"].strip()):
            errors["query"].append(
                cfg.invalid("query", parsed["query"], "set exactly one of table.whitelist and query")
            )
        column = _column_key(parsed["mode"])
        if not parsed[column].strip():
            errors[column].append(cfg.invalid(column, "", f"mode {parsed['mode']} needs this column"))
        return errors

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        tables: list[str] = CONFIG.parse(self.config)["table.whitelist"]
        if not tables:
            return [dict(self.config)]
        count = max(1, min(max_tasks, len(tables)))
        return [{**self.config, "tables": ",".join(tables[n::count])} for n in range(count)]

    def alter_offsets(self, config: Mapping[str, str], offsets: list[tuple[Partition, Offset | None]]) -> bool:
        """Check each entry's shape: a table or query partition and an offset of this mode's form."""
        mode = CONFIG.parse(config)["mode"]
        for partition, offset in offsets:
            if not isinstance(partition.get("table"), str) and partition != QUERY_PARTITION:
                raise ValueError('Partition objects should be {"table": <name>} or {"query": "query"}')
            if offset is None:
                continue
            fields = ("incrementing",) if mode == "incrementing" else ("timestamp", "timestamp_nanos")
            for name in fields:
                value = offset.get(name)
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ValueError(f"Offset objects should contain the integer key '{name}' in {mode} mode")
            if mode == "timestamp" and not 0 <= offset["timestamp_nanos"] < 1_000_000_000:
                raise ValueError("The 'timestamp_nanos' offset value must be within 0 and 999999999")
        return True


class JdbcSourceTask(SourceTask):
    def stream(self, ctx: TaskContext) -> DataFrame:
        from pyspark.sql import functions as F

        from sparklink.connectors.jdbc import stream

        parsed = CONFIG.parse(ctx.config)
        mode: str = parsed["mode"]
        prefix: str = parsed["topic.prefix"]
        tables = [t.strip() for t in ctx.config.get("tables", ",".join(parsed["table.whitelist"])).split(",")]
        if parsed["query"].strip():
            sources = [("query", QUERY_PARTITION, f"({parsed['query']}) AS sparklink_query", prefix)]
        else:
            sources = [(t, {"table": t}, quote_name(t), prefix + t) for t in tables if t]
        libpq = Connection.from_config(ctx.config).libpq()
        # The password goes in an option of its own, which Spark redacts in plans and logs.
        password = libpq.pop("password", "")
        conninfo = json.dumps(libpq)
        ctx.use_data_source(stream.JdbcPollDataSource)
        self._mode = mode
        self._partitions: dict[str, Partition] = {}
        frames = []
        for key, partition, relation, topic in sources:
            self._partitions[key] = partition
            rows = (
                ctx.spark.readStream.format(stream.FORMAT)
                .option("conninfo", conninfo)
                .option("password", password)
                .option("relation", relation)
                .option("column", parsed[_column_key(mode)].strip())
                .option("mode", mode)
                .option("start", str(start_value(mode, partition, ctx.resume)))
                .option("batch.max.rows", str(parsed["batch.max.rows"]))
                .option("poll.interval.ms", str(parsed["poll.interval.ms"]))
                .load()
            )
            columns = [rows[c] for c in rows.columns if c != stream.OFFSET_COLUMN]
            frames.append(
                rows.select(
                    F.lit(topic).alias("topic"),
                    F.lit(None).cast("string").alias("key"),
                    F.struct(*columns).alias("value"),
                    F.lit(key).alias("_source"),
                    rows[stream.OFFSET_COLUMN].alias("_offset"),
                )
            )
        return reduce(lambda a, b: a.unionByName(b), frames)

    def batch_offsets(self, batch: DataFrame) -> list[tuple[Partition, Offset]]:
        from pyspark.sql import functions as F

        ends = batch.groupBy("_source").agg(F.max("_offset").alias("end")).collect()
        return [(self._partitions[r["_source"]], offset_of(self._mode, int(r["end"]))) for r in ends]


def _column_key(mode: str) -> str:
    return "incrementing.column.name" if mode == "incrementing" else "timestamp.column.name"


def offset_of(mode: str, value: int) -> Offset:
    """The stored offset for a tracked value (an id, or epoch microseconds in timestamp mode)."""
    if mode == "incrementing":
        return {"incrementing": value}
    return {"timestamp": value // 1000, "timestamp_nanos": (value % 1_000_000) * 1000}


def start_value(mode: str, partition: Partition, resume: list[tuple[Partition, Offset]]) -> int:
    """The tracked value to read after: the stored offset's, or the beginning."""
    stored: dict[str, Any] | None = next((o for p, o in resume if p == partition and o is not None), None)
    if mode == "incrementing":
        return int(stored["incrementing"]) if stored and "incrementing" in stored else -1
    if not stored or "timestamp" not in stored:
        return 0
    millis, nanos = int(stored["timestamp"]), int(stored.get("timestamp_nanos", 0))
    return (millis // 1000) * 1_000_000 + nanos // 1000


JdbcSourceConnector.task_class = JdbcSourceTask
