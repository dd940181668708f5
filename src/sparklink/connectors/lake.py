"""`ParquetSinkConnector` (`lake-sink`): Kafka records as Parquet files under `path`, in Hive-style partitions.

Each micro-batch is written by Spark's Parquet writer (`partitionBy(...).parquet(path)`, mode append), so
records never leave the JVM. The columns are the Kafka ones: key, value (binary, or UTF-8 text with
`value.format=string`), topic, partition, offset, timestamp, headers. `partition.by` picks the directory
levels among `topic`, `partition`, `date` (yyyy-MM-dd) and `hour` (HH); date and hour are the record
timestamp's, in `timezone`. A partition column lives in the directory name, not in the files, as usual.

Roll interval, exactly: one micro-batch is one roll, and each roll adds exactly one file to each partition
directory that received records in it (the batch is repartitioned by the partition columns first). With
`roll.interval.seconds` = N > 0 the task asks Spark's Kafka source to start a batch only once N seconds
have passed since it last started one (`minOffsetsPerTrigger` unreachable, `maxTriggerDelay` = N), so
files roll at most once every N seconds, and a record waits at most about N seconds plus the worker's
trigger interval before it is in a file and its offset committed. N = 0 rolls at every trigger that
finds records. Offsets are committed only after the files are in place: at least once, and a crash
between the two leaves a file whose records are written again by the next batch.

The connector runs one task whatever `tasks.max` says: Spark already writes a batch with one Spark task
per partition, while concurrent Spark jobs appending into one directory race on Hadoop's `_temporary`
directory (the first to finish deletes it under the others).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparklink.api import config as cfg
from sparklink.api.connector import SinkConnector, SinkTask, TaskContext

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

PARTITION_LEVELS = ("topic", "partition", "date", "hour")
# Reached never: Spark's Kafka source then starts a batch on the delay alone.
_NO_MIN_RECORDS = str(2**63 - 1)


def _levels(_name: str, value: Any) -> str | None:
    unknown = [v for v in value if v not in PARTITION_LEVELS]
    if unknown:
        return f"unknown partition level(s) {', '.join(unknown)}; use {', '.join(PARTITION_LEVELS)}"
    if len(set(value)) != len(value):
        return "a partition level is listed twice"
    return None


def _timezone(_name: str, value: Any) -> str | None:
    from zoneinfo import ZoneInfo

    try:
        ZoneInfo(str(value))
    except (ValueError, KeyError, OSError):
        return "not a time-zone id (e.g. UTC, Europe/Paris)"
    return None


CONFIG = (
    cfg.ConfigDef()
    .key(
        "path",
        "STRING",
        "Directory (or Hadoop URI) the Parquet files are written under.",
        importance="HIGH",
        validator=cfg.non_empty,
    )
    .key(
        "partition.by",
        "LIST",
        "Directory levels, in order, among topic, partition, date and hour (of the record timestamp).",
        default=["topic", "date", "hour"],
        validator=_levels,
    )
    .key(
        "roll.interval.seconds",
        "INT",
        "Start a micro-batch (one new file per partition directory) at most once every N seconds; 0 "
        "writes at every trigger that finds records.",
        default=60,
        validator=cfg.at_least(0),
    )
    .key(
        "value.format",
        "STRING",
        "`binary` keeps the value bytes; `string` stores them as UTF-8 text.",
        default="binary",
        choices=("binary", "string"),
    )
    .key(
        "timezone",
        "STRING",
        "Time zone of the date and hour partition levels.",
        default="UTC",
        importance="LOW",
        validator=_timezone,
    )
)


class ParquetSinkConnector(SinkConnector):
    @classmethod
    def config_def(cls) -> cfg.ConfigDef:
        return CONFIG

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        task = dict(self.config)
        seconds = int(CONFIG.parse(self.config)["roll.interval.seconds"])
        if seconds > 0:
            # minOffsetsPerTrigger may not exceed maxOffsetsPerTrigger when both are set.
            task["sparklink.min.records.per.batch"] = task.get("sparklink.max.records.per.batch", _NO_MIN_RECORDS)
            task["sparklink.max.batch.delay.ms"] = str(seconds * 1000)
        return [task]


class ParquetSinkTask(SinkTask):
    reads_batch_once = True

    def write_batch(self, batch: DataFrame, batch_id: int, ctx: TaskContext) -> None:
        from pyspark.sql import functions as F

        parsed = CONFIG.parse(ctx.config)
        levels: list[str] = parsed["partition.by"]
        value = F.col("value").cast("string") if parsed["value.format"] == "string" else F.col("value")
        columns: list[Column | str] = ["key", value.alias("value"), "topic", "partition", "offset", "timestamp"]
        if "headers" in batch.columns:
            columns.append("headers")
        local = _local_time(batch, str(parsed["timezone"]))
        if "date" in levels:
            columns.append(F.date_format(local, "yyyy-MM-dd").alias("date"))
        if "hour" in levels:
            columns.append(F.date_format(local, "HH").alias("hour"))
        rows = batch.select(*columns)
        if levels:
            # One file per partition directory per batch: all of a directory's rows go to one writer.
            rows = rows.repartition(*levels)
        rows.write.mode("append").partitionBy(*levels).parquet(str(parsed["path"]))


def _local_time(batch: DataFrame, timezone: str) -> Column:
    """The record timestamp as wall-clock time in `timezone`, whatever the session's time zone."""
    from pyspark.sql import functions as F

    session_zone = batch.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"
    return F.from_utc_timestamp(F.to_utc_timestamp(F.col("timestamp"), session_zone), timezone)


ParquetSinkConnector.task_class = ParquetSinkTask
