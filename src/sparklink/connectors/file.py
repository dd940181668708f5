"""`FileStreamSource` and `FileStreamSink`: Apache Kafka's file connectors, with the same configs and offsets.

The source tails one file (`file_lines`, a Spark Python Data Source) and writes one record per line to
`topic`: no key, the line as value. Its source partition is {"filename": <file>} and its offset
{"position": <byte position after the last line written>}, as in Kafka's FileStreamSourceTask, so
offsets move between the two runtimes. Unlike Kafka's, `file` is required (no stdin) and `batch.size`
bounds the lines of one micro-batch (Kafka: of one poll). A missing file is waited for; a file cut
below the stored position yields nothing until it grows past that position again.

The sink appends each record's value, decoded as UTF-8, as one line of `file` (a null value as `null`,
as Kafka's does, and each invalid UTF-8 sequence as U+FFFD, as Kafka's StringConverter does); a value
converted by the connector's value.converter is written as its text, an object as JSON (Kafka's writes
Java's toString() of it). Spark's own text writer writes directories of part files, not one appended
file, so the sink has two writers of its own, chosen per batch:

- **in the JVM** (`LINE_WRITER`, jvm/lines, built by the bootstrap) when Spark's tasks run in the
  worker's JVM (a local master): rows go from Spark's Kafka reader straight to the file. Bringing them
  to Python as Arrow first cost as much again as reading them (0.33 against 0.18 s per 20,000 1 KiB
  records);
- **in Python** on a Spark cluster, whose tasks run on other machines: the batch comes to the driver as
  Arrow (it is bounded, kafka_io.SINK_BATCH_RECORDS) and is written from there.

Both append whole lines in chunks of about 1 MiB, each chunk written whole before another writer's
(Python: an exclusive `flock`; the JVM: one chunk at a time per file), so tasks sharing the file never
interleave inside a line; the file is fsynced before `write_batch` returns, that is before the runtime
commits the batch's offsets.

Which files they touch follows the worker's rules (api/files.py, handed over as `Connector.files` and
`TaskContext.files`): the sink never writes into the worker's installation or Python path and never
creates a directory, and with `sparklink.file.allowed.paths` set both read and write only under those
directories. Each rule is checked when the config is validated (an error on `file`), when the task
starts (a config stored before the rule existed fails its task), and again by the writer before every
batch (the JVM writer checks for itself), so a symlink changed while the task runs leads nowhere else.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparklink.api import config as cfg
from sparklink.api.connector import (
    Connector,
    Offset,
    Partition,
    SinkConnector,
    SinkTask,
    SourceConnector,
    SourceTask,
    TaskContext,
)
from sparklink.api.text import as_text

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession

FILENAME_FIELD = "filename"
POSITION_FIELD = "position"
_CHUNK_BYTES = 1 << 20

SOURCE_CONFIG = (
    cfg.ConfigDef()
    .key("file", "STRING", "Source filename.", importance="HIGH", validator=cfg.non_empty)
    .key("topic", "STRING", "The topic to publish data to.", importance="HIGH", validator=cfg.non_empty)
    .key(
        "batch.size",
        "INT",
        "The maximum number of lines the source task reads from the file for one micro-batch.",
        default=2000,
        importance="LOW",
        validator=cfg.at_least(1),
    )
)
SINK_CONFIG = cfg.ConfigDef().key("file", "STRING", "Destination filename.", importance="HIGH", validator=cfg.non_empty)


def _check_file(connector: Connector, config: Mapping[str, str], write: bool) -> dict[str, list[str]]:
    """The ConfigDef's errors, plus the worker's file rules for `file` (api/files.py)."""
    errors = connector.config_def().validate(config)
    path = config.get("file")
    if path and path.strip() and not errors.get("file"):
        reason = connector.files.write_error(path) if write else connector.files.read_error(path)
        if reason:
            errors["file"].append(cfg.invalid("file", path, reason))
    return errors


class FileStreamSourceConnector(SourceConnector):
    @classmethod
    def config_def(cls) -> cfg.ConfigDef:
        return SOURCE_CONFIG

    def validate(self, config: Mapping[str, str]) -> dict[str, list[str]]:
        return _check_file(self, config, write=False)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # Only one reader of the file makes sense.
        return [dict(self.config)]

    def alter_offsets(self, config: Mapping[str, str], offsets: list[tuple[Partition, Offset | None]]) -> bool:
        """Check each entry's shape (Kafka's FileStreamSourceConnector rules); the task checks the value."""
        for partition, offset in offsets:
            if offset is None:
                # Tombstones are always allowed, so that stray partitions can be cleaned up.
                continue
            if POSITION_FIELD not in offset:
                raise ValueError(f"Offset objects should either be null or contain the key '{POSITION_FIELD}'")
            position = offset[POSITION_FIELD]
            if isinstance(position, bool) or not isinstance(position, int):
                raise ValueError(f"The value for the '{POSITION_FIELD}' key in the offset is expected to be an integer")
            if position < 0:
                raise ValueError(
                    f"The value for the '{POSITION_FIELD}' key in the offset should be a non-negative value"
                )
            if partition is None:
                raise ValueError("Partition objects cannot be null")
            if not isinstance(partition.get(FILENAME_FIELD), str):
                raise ValueError(f"Partition objects should contain the key '{FILENAME_FIELD}' with a string value")
        return True


class FileStreamSourceTask(SourceTask):
    def stream(self, ctx: TaskContext) -> DataFrame:
        from pyspark.sql import functions as F

        from sparklink.connectors import file_lines

        parsed = SOURCE_CONFIG.parse(ctx.config)
        path = str(parsed["file"])
        readable = ctx.files.readable(path)  # the worker's allow-list; raises naming the rule
        self._partition: Partition = {FILENAME_FIELD: path}
        ctx.use_data_source(file_lines.FileLinesDataSource)
        lines = (
            ctx.spark.readStream.format(file_lines.FORMAT)
            .option("path", str(readable))
            .option("position", str(resume_position(path, ctx.resume)))
            .option("batch.size", str(parsed["batch.size"]))
            .load()
        )
        return lines.select(
            F.lit(parsed["topic"]).alias("topic"),
            F.lit(None).cast("string").alias("key"),
            F.col("value"),
            F.col("_position"),
        )

    def batch_offsets(self, batch: DataFrame) -> list[tuple[Partition, Offset]]:
        from pyspark.sql import functions as F

        top = batch.agg(F.max("_position")).first()
        if top is None or top[0] is None:
            return []
        return [(self._partition, {POSITION_FIELD: int(top[0])})]

    def batch_metrics(self) -> dict[str, Column] | None:
        """The batch's furthest file position, observed while it is written: one Spark job a batch."""
        from pyspark.sql import functions as F

        return {"end": F.max("_position")}

    def observed_offsets(self, metrics: Mapping[str, Any]) -> list[tuple[Partition, Offset]]:
        end = metrics.get("end")
        return [] if end is None else [(self._partition, {POSITION_FIELD: int(end)})]

    def topics(self, ctx: TaskContext) -> list[str] | None:
        return [ctx.config["topic"]]


def resume_position(path: str, resume: list[tuple[Partition, Offset]]) -> int:
    """The stored position for this file, 0 without one; a malformed one fails the task, as in Kafka."""
    for partition, offset in resume:
        if partition.get(FILENAME_FIELD) == path and offset is not None:
            position = offset.get(POSITION_FIELD)
            if position is None:
                return 0
            if isinstance(position, bool) or not isinstance(position, int) or position < 0:
                raise ValueError(f"Offset position is the incorrect type: {position!r} for file {path}")
            return position
    return 0


class FileStreamSinkConnector(SinkConnector):
    @classmethod
    def config_def(cls) -> cfg.ConfigDef:
        return SINK_CONFIG

    def validate(self, config: Mapping[str, str]) -> dict[str, list[str]]:
        return _check_file(self, config, write=True)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config) for _ in range(max_tasks)]

    def alter_offsets(self, config: Mapping[str, str], offsets: list[tuple[Partition, Offset | None]]) -> bool:
        # The sink keeps no offsets of its own and has nothing to check (as Kafka's FileStreamSinkConnector).
        return True


class FileStreamSinkTask(SinkTask):
    reads_batch_once = True
    value_as_text = True

    def start(self, ctx: TaskContext) -> None:
        ctx.files.writable(ctx.config["file"])  # raises naming the rule the file breaks

    def holds_batch(self, ctx: TaskContext) -> bool:
        return not _writes_in_jvm(ctx.spark)

    def write_batch(self, batch: DataFrame, batch_id: int, ctx: TaskContext) -> None:
        # Values converted by a StringConverter or JsonConverter arrive as text or VARIANT, rendered as
        # text by `as_text` (objects as JSON); raw values arrive as bytes and are cast as they are.
        # Checked again before every batch: a symlink or directory changed since the start must not
        # lead the writer anywhere the rules forbid.
        path = ctx.files.writable(ctx.config["file"])
        value_type = batch.schema["value"].dataType.typeName()
        if _writes_in_jvm(batch.sparkSession):
            text = batch.selectExpr(f"{as_text('value', value_type)} AS value")
            writer = text.write.format(LINE_WRITER).option("path", str(path))
            writer = writer.option(JVM_PROTECTED, _NUL.join(map(str, ctx.files.protected)))
            if ctx.files.allowed is not None:
                writer = writer.option(JVM_ALLOWED, _NUL.join(map(str, ctx.files.allowed)))
            writer.mode("append").save()
            return
        column = "value" if value_type == "binary" else f"{as_text('value', value_type)} AS value"
        # Arrow brings the values over as columns, not as one pickled Row per record: the batch is
        # bounded (kafka_io.SINK_BATCH_RECORDS), so holding it whole is fine.
        values = batch.selectExpr(column).toArrow().column(0)
        append_lines(path, _lines(values))


LINE_WRITER = "io.sparklink.spark.LinesFileWriter"
"""Spark's format name of the sink's JVM writer (jvm/lines/LinesFileWriter.java)."""
JVM_PROTECTED, JVM_ALLOWED = "sparklink.protected.paths", "sparklink.allowed.paths"
"""The JVM writer's options for the rules it checks itself: resolved paths separated by NUL, the one
character no path holds."""
_NUL = "\0"


def _writes_in_jvm(spark: SparkSession) -> bool:
    """Whether this session's Spark tasks run in the worker's own JVM (a local master), where the file
    is, and the session loaded the JVM writer's jar (the bootstrap builds it)."""
    master = spark.conf.get("spark.master", "") or ""
    jars = spark.conf.get("spark.jars", "") or ""
    return master.startswith("local") and "sparklink-lines.jar" in jars


def _lines(values: pa.ChunkedArray) -> Iterator[bytes | memoryview]:
    """The values as UTF-8 lines ("null" for none), one buffer per Arrow chunk: Arrow's kernels add
    the newlines, so no Python runs per record. A chunk whose values are not all UTF-8 goes value by
    value, each invalid sequence replaced (as `_line` does): raw bytes, or Spark strings, which Spark
    never checks (a StringConverter's text is the record's bytes cast)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    newline, nothing = pa.scalar("\n", pa.large_string()), pa.scalar("", pa.large_string())
    for chunk in values.chunks:
        if not len(chunk):
            continue
        raw = chunk.cast(pa.large_binary())
        try:
            text = raw.cast(pa.large_string())  # checks that the values are UTF-8
        except pa.ArrowInvalid:
            yield b"".join(_line(value) for value in raw.to_pylist())
            continue
        lines = pc.binary_join_element_wise(pc.fill_null(text, "null"), nothing, newline)
        # A large_string array is int64 offsets into one data buffer: the lines are its bytes between
        # the first and the last offset.
        offsets = pa.Array.from_buffers(pa.int64(), len(lines) + 1, [None, lines.buffers()[1]], offset=lines.offset)
        yield memoryview(lines.buffers()[2])[offsets[0].as_py() : offsets[-1].as_py()]


def _line(value: Any) -> bytes:
    if value is None:
        return b"null\n"
    text = value if isinstance(value, str) else bytes(value).decode("utf-8", errors="replace")
    return text.encode("utf-8") + b"\n"


def append_lines(path: Path, lines: Iterable[bytes | memoryview]) -> int:
    """Append whole lines to `path` (resolved and checked by the caller) in locked chunks, then fsync;
    returns the bytes written. Its directory must exist; a symlink put in its place since the check
    is not followed (O_NOFOLLOW)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    written = 0
    try:
        chunk: list[bytes | memoryview] = []
        size = 0
        for line in lines:
            chunk.append(line)
            size += len(line)
            if size >= _CHUNK_BYTES:
                written += _locked_append(fd, b"".join(chunk))
                chunk, size = [], 0
        if chunk:
            written += _locked_append(fd, b"".join(chunk))
        os.fsync(fd)
    finally:
        os.close(fd)
    return written


def _locked_append(fd: int, data: bytes) -> int:
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
    return len(data)


FileStreamSourceConnector.task_class = FileStreamSourceTask
FileStreamSinkConnector.task_class = FileStreamSinkTask
