"""The Kafka offsets a sink micro-batch covers, read from its query's checkpoint instead of from its records.

Spark writes a micro-batch's end offsets to `<checkpoint>/offsets/<batch id>` before it runs the batch
(its write-ahead log), and the Kafka source writes the offsets a query starts from to `sources/0/0`
when the query begins. So a batch covers, per partition, from the end of the batch before it (or the
start, for the first) to its own end. Knowing that from two small local files spares the batch a Spark
job of its own: grouping the records by partition for their highest offset and count read the whole
batch from Kafka again, or cached it first, which cost a sink about half its time per batch.

Both files are Spark's checkpoint format ("v1", then JSON lines; the Kafka source's own file starts with
a zero byte), which Spark keeps readable across versions because queries restart from it. The driver
writes them, and the driver is the worker's own JVM, so they are on this machine even when the
executors are on a Spark cluster.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

TopicPartition = tuple[str, int]


class OffsetLogError(RuntimeError):
    """The checkpoint has no readable offsets for a batch (it was removed, or Spark changed its format)."""


@dataclass(frozen=True)
class BatchRange:
    """Per partition, the first offset a batch reads and the offset after its last."""

    start: dict[TopicPartition, int]
    end: dict[TopicPartition, int]

    @property
    def offsets(self) -> int:
        """How many offsets the batch spans: its records, plus any gaps (compaction, transaction markers)."""
        return sum(max(0, end - self.start.get(tp, end)) for tp, end in self.end.items())


def batch_range(checkpoint: Path, batch_id: int) -> BatchRange:
    end = _kafka_offsets(checkpoint / "offsets" / str(batch_id))
    previous = checkpoint / "offsets" / str(batch_id - 1)
    start = _kafka_offsets(previous if batch_id > 0 and previous.exists() else checkpoint / "sources" / "0" / "0")
    return BatchRange(start, end)


def _kafka_offsets(path: Path) -> dict[TopicPartition, int]:
    """The last JSON line of an offset file: {"topic": {"partition": offset}} for a single Kafka source."""
    try:
        lines = path.read_bytes().lstrip(b"\0").decode("utf-8").splitlines()
        found = json.loads(lines[-1])
    except (OSError, UnicodeDecodeError, IndexError, ValueError) as exc:
        raise OffsetLogError(f"cannot read the Kafka offsets in {path}: {exc}") from exc
    if not (isinstance(found, dict) and all(isinstance(v, dict) for v in found.values())):
        raise OffsetLogError(f"{path} does not hold one Kafka source's offsets: {lines[-1][:200]}")
    return {(topic, int(p)): int(o) for topic, partitions in found.items() for p, o in partitions.items()}
