"""What a source task offers so that Spark's Kafka sink writes its stream itself, with no Python per batch.

Every SourceTask can run on the batch path: a batch function per micro-batch writes the records and
asks the task for the batch's offsets (`batch_offsets`, or `batch_metrics` and `observed_offsets`),
then calls `batch_written`. That path is always there because the runtime takes it whenever records
go through transforms or errors.tolerance=all. A source task that also implements `DirectSource`
(MirrorSource, datagen) is, when its records need converters only, written by Spark's Kafka sink
directly: the runtime sets `ctx.direct` before calling `stream`, and the task's offsets come from the
query's progress (`progress_offsets`) and, where the task can tell, from its producer's
acknowledgements (`written_offsets`). In real-time mode (`realtime_slots`) long-running Spark tasks
pass each record on as it arrives. The runtime side is sparklink.worker.execution.direct_run.

pyspark types appear only in annotations, so this module imports without Spark.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, Protocol, runtime_checkable

from sparklink.api.connector import Offset, Partition, TaskContext


@runtime_checkable
class DirectSource(Protocol):
    """A source task whose stream Spark's Kafka sink can write as it is, every record kept.

    Subclass it beside SourceTask (`class MyTask(SourceTask, DirectSource)`) to inherit the defaults:
    only `progress_offsets` must be written; the others say "cannot tell"."""

    @abstractmethod
    def progress_offsets(self, end: Any) -> list[tuple[Partition, Offset]]:
        """The source offsets reached once the query's source stands at `end` (the progress's
        `endOffset`, parsed JSON: an object for Kafka, a number for `rate`). Only what the query has
        written is covered."""

    def written_offsets(self, ctx: TaskContext, wait_s: float, final: bool) -> list[tuple[Partition, Offset]] | None:
        """The offsets of every record this run's producer has had acknowledged, or None when the task
        cannot tell. Asked every offset.flush.interval.ms of a real-time run (`final` False), and once
        its query has stopped (`final` True: wait up to `wait_s` for records still in flight; this run
        is over). Where it tells, it wins over the query's last progress, so a task must never report
        less than it reported before or than its progress said."""
        return None

    def written_records(self) -> int | None:
        """How many records this run's producer had had acknowledged when `written_offsets` last
        answered, or None when the task cannot tell. A real-time run's record count comes from here
        between its batch ends, which are a minute or more apart."""
        return None

    def transforms_in_query(self) -> bool:
        """True when a chain of transforms may run inside this task's direct query, the stream holding
        nothing but its records. A stream that also carries what its write path needs (MirrorSource's
        headers for its producer interceptors) says False: a transform could alter or drop that, so
        such a task takes the batch path whenever its records are transformed."""
        return False

    def realtime_slots(self, ctx: TaskContext) -> int | None:
        """How many Spark tasks the stream would run at once in real-time mode (one per Kafka
        partition it reads), or None if its source cannot; asked before `stream`."""
        return None
