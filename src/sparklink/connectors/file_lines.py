"""A Spark streaming source that tails a text file line by line. Caller: the file source task.

Spark offers no streaming source for "new lines of one growing file" (its text source watches a
directory for new files), so this is a Python Data Source: its offsets are byte positions in the file.

- `latestOffset` runs in Spark's driver-side Python planner: it scans forward from the last position
  for at most `batch.size` complete lines and returns the position just after the last of them;
- `read` runs in a Python worker: it reads exactly that byte range and yields the lines with the
  position after each (`_position`), as Arrow batches, so the task can store the batch's end position.

The task hands over the file's resolved path, checked against the worker's rules (api/files.py); it
is opened without following a symlink (O_NOFOLLOW), so a link put in its place later leads nowhere.

Lines end with `\\n`, `\\r\\n` or `\\r`, as in Kafka's FileStreamSourceTask; a last line without an end
(still being written) waits for it. Bytes are decoded as UTF-8, an invalid sequence becoming U+FFFD.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows
from pyspark.sql.types import StructType

FORMAT = "sparklink_file_lines"
SCHEMA = "value string, _position long"
_CHUNK = 1 << 20
_ARROW_ROWS = 8192
_LINE_END = re.compile(rb"\r\n|\r|\n")


def split_lines(
    data: bytes, base: int = 0, limit: int | None = None, complete: bool = False
) -> tuple[list[bytes], list[int]]:
    """The complete lines at the start of `data` (read from byte `base`), at most `limit` of them.

    Returns the lines without their ends and, for each, the position just after its end. A `\\r` as the
    last byte is no end yet (the next byte may be the `\\n` of the same end) unless `complete` says
    that `data` is a range already known to end after a line.
    """
    lines: list[bytes] = []
    ends: list[int] = []
    start = 0
    for match in _LINE_END.finditer(data):
        if match.group() == b"\r" and match.end() == len(data) and not complete:
            break
        lines.append(data[start : match.start()])
        start = match.end()
        ends.append(base + start)
        if limit is not None and len(lines) >= limit:
            break
    return lines, ends


def end_of_lines(path: str, start: int, max_lines: int | None) -> int:
    """The position after the last of at most `max_lines` complete lines from `start` (`start` if none)."""
    try:
        handle = _open(path)
    except FileNotFoundError:  # a missing file is "no data yet"
        return start
    with handle:
        handle.seek(start)
        position, pending, found = start, b"", 0
        while max_lines is None or found < max_lines:
            chunk = handle.read(_CHUNK)
            if not chunk:
                break
            pending += chunk
            left = None if max_lines is None else max_lines - found
            lines, ends = split_lines(pending, position, left)
            if lines:
                found += len(lines)
                pending = pending[ends[-1] - position :]
                position = ends[-1]
        return position


def _open(path: str) -> BinaryIO:
    """The file for reading, never through a symlink at its own name (the path is already resolved)."""
    return os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb")


class FileLinesDataSource(DataSource):
    """Options: `path`, `position` (the byte to start at) and `batch.size` (lines per micro-batch at most)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return FileLinesReader(
            str(self.options["path"]), int(self.options.get("position", 0)), int(self.options["batch.size"])
        )


class _Range(InputPartition):
    def __init__(self, path: str, start: int, end: int) -> None:
        super().__init__((path, start, end))
        self.path, self.start, self.end = path, start, end


class FileLinesReader(DataSourceStreamReader):
    def __init__(self, path: str, position: int, batch_size: int) -> None:
        self.path = path
        self.position = position
        self.batch_size = batch_size

    def initialOffset(self) -> dict[str, Any]:
        return {"position": self.position}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.batch_size)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        max_lines = None if isinstance(limit, ReadAllAvailable) else getattr(limit, "max_rows", self.batch_size)
        return {"position": end_of_lines(self.path, int(start["position"]), max_lines)}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        # One partition keeps the lines in file order all the way to the topic partition.
        first, last = int(start["position"]), int(end["position"])
        return [_Range(self.path, first, last)] if last > first else []

    def read(self, partition: InputPartition) -> Iterator[Any]:
        import pyarrow as pa

        assert isinstance(partition, _Range)
        with _open(partition.path) as handle:
            handle.seek(partition.start)
            data = handle.read(partition.end - partition.start)
        lines, ends = split_lines(data, partition.start, complete=True)
        for at in range(0, len(lines), _ARROW_ROWS):
            values = [line.decode("utf-8", errors="replace") for line in lines[at : at + _ARROW_ROWS]]
            yield pa.RecordBatch.from_arrays(
                [pa.array(values, pa.string()), pa.array(ends[at : at + _ARROW_ROWS], pa.int64())],
                names=["value", "_position"],
            )
