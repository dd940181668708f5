"""What a task run is given at construction: the worker's services it writes and reads through.

One `RunServices` per worker, built by the registry (tasks.py) and shared by every run it starts
(run.py and its kinds); a run takes nothing else from the worker, and never the registry itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sparklink.api.connector import HeldNumber
from sparklink.api.files import FileAccess
from sparklink.worker.execution import kafka_io
from sparklink.worker.execution.clients import RunClients
from sparklink.worker.execution.direct import ProgressOffsets, RealtimeSlots
from sparklink.worker.storage.group_offsets import GroupOffsetStore
from sparklink.worker.storage.offsets import OffsetStore

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class Triggers:
    """How often task queries run, and how long a stop waits for them."""

    interval_ms: int = 1000
    """A micro-batch query's trigger interval (the worker's `trigger.interval.ms`)."""
    realtime_batch_ms: int = 60000
    """A real-time query's batch length (`task.realtime.batch.interval.ms`)."""
    stop_grace_s: float = 5.0
    """How long a stop lets the batch in hand finish (Connect's task.shutdown.graceful.timeout.ms)."""

    @property
    def interval(self) -> str:
        return f"{self.interval_ms} milliseconds"

    @property
    def realtime_batch(self) -> str:
        return f"{self.realtime_batch_ms} milliseconds"


@dataclass(frozen=True)
class RunServices:
    spark: SparkSession
    clients: RunClients
    """The Kafka client settings of runs (Connect's prefixes and overrides, sparklink.clients), each checked
    once against the brokers."""
    offsets: OffsetStore
    """Source offsets: where a source run resumes and what each batch it writes reached."""
    group_offsets: GroupOffsetStore
    """Sink offsets, in each connector's consumer group."""
    metadata: kafka_io.Metadata
    """Topic partitions, for a sink run's share of them."""
    triggers: Triggers
    scratch: Path
    """The directory that holds each run's scratch checkpoint."""
    progress: ProgressOffsets
    """Offsets of direct queries, from their progress events."""
    slots: RealtimeSlots
    """Spark task slots held by real-time queries."""
    held: HeldNumber | None
    """Columns of a task's id or position that keep its plan's generated code the same (held.py); each
    task's context carries it."""
    files: FileAccess
    """Where tasks may read and write local files (api/files.py): the worker's rules, which keep
    writes out of `scratch` too; each task's context carries them."""
