"""Connector and task contracts.

A connector validates its config and splits the work into task configs; each task builds one Spark
Structured Streaming pipeline. The runtime owns the Kafka side and the offsets:

- a SourceTask returns a streaming DataFrame with columns `key`, `value` (string or binary), optionally
  `headers` and `partition`; the runtime writes each micro-batch to Kafka with Spark's Kafka writer, then
  records `batch_offsets(batch)` in the offsets store. `resume` holds the stored offsets at task start.
  A task that declares `batch_metrics` instead gets its offsets from aggregates observed during the
  write itself (`observed_offsets`): one pass over the batch, nothing cached. A task that also
  implements `DirectSource` (api/direct.py) may be written by Spark's Kafka sink itself, with no
  Python per batch; its offsets then come from the query's progress (`progress_offsets`).
- a SinkTask receives each micro-batch read by Spark's Kafka source (columns of that source) and writes
  it to its target; the runtime then commits the batch's Kafka offsets to the connector's consumer group.

pyspark types appear only in annotations, so this module imports without Spark.
"""

from __future__ import annotations

import builtins
import weakref
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from sparklink.api.config import ConfigDef
from sparklink.api.files import FileAccess
from sparklink.api.metrics import MetricGroup

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

ConnectorType = Literal["source", "sink"]
RECORDS_METRIC = "sparklink_records"
"""The name under which the runtime observes a batch's record count (see SourceTask.batch_metrics)."""
Partition = dict[str, Any]
Offset = dict[str, Any]
NumberType = Literal["int", "bigint"]


class HeldNumber(Protocol):
    def __call__(self, value: int, sql_type: NumberType, /) -> Column:
        """A non-null column of `value` as `sql_type`, which the query's generated code reads by reference."""
        ...


@dataclass
class TaskContext:
    """What the runtime hands a task when it builds its pipeline."""

    connector: str
    task_id: int
    config: dict[str, str]
    spark: SparkSession
    resume: list[tuple[Partition, Offset]] = field(default_factory=list)
    """Source tasks: the stored offsets of this connector (partition, offset) at task start."""
    checkpoint: str | None = None
    """The directory of the task's query checkpoint: new and empty at every start (the runtime keeps
    source positions in its offsets store, not there), so a task may seed its stream's state in it."""
    direct: bool = False
    """Source tasks that implement `DirectSource`: True when the runtime writes this run's stream with Spark's
    Kafka sink (no batch function, so `batch_offsets` and `batch_written` are never called)."""
    realtime: bool = False
    """Direct runs: True when the query runs in Spark's real-time mode (its Kafka source must then
    set no `maxOffsetsPerTrigger`, which that mode refuses)."""
    held: HeldNumber | None = None
    """A column of a number that differs between a connector's tasks or between starts of one task (its
    id, the position it resumes from), for use in place of a literal: Spark compiles a stage again for
    each new literal, and a held number keeps every task's plan the same code (worker/execution/held.py).
    None where the runtime has no such column; a literal does then."""
    files: FileAccess = field(default_factory=FileAccess)
    """Where the task may read and write local files (api/files.py): the worker's rules. A task that
    opens a file named by its config asks here first, so a config stored before a rule existed does
    not run either."""

    def use_data_source(self, source: type[Any]) -> None:
        """Register a Python data source with the session once. Registering a name again replaces it,
        and Spark says so with a WARN at every task start; a session keeps what it was given."""
        registered = _DATA_SOURCES.setdefault(self.spark, set())
        if source not in registered:
            self.spark.dataSource.register(source)
            registered.add(source)


_DATA_SOURCES: weakref.WeakKeyDictionary[Any, set[type[Any]]] = weakref.WeakKeyDictionary()
"""The Python data sources registered per SparkSession (a stopped session's entry goes with it)."""


class ConnectorContext(Protocol):
    """What the runtime offers a running connector (set as `connector.context` before `start`)."""

    def request_task_reconfiguration(self) -> None:
        """Ask for `task_configs` to be called again; tasks whose config changed are restarted."""

    def raise_error(self, error: Exception) -> None:
        """Fail the connector (state FAILED with this error's trace) from a background thread."""


class Connector(ABC):
    """Base of all connector plugins. Subclasses set `type`, `task_class` and `config_def()`."""

    type: ClassVar[ConnectorType]
    task_class: ClassVar[builtins.type[Task]]
    context: ConnectorContext

    @property
    def files(self) -> FileAccess:
        """Where this connector may read and write local files (api/files.py): the worker sets its rules
        before `validate` and `start`; a connector made outside a worker gets this process's defaults."""
        access = self.__dict__.get("_files")
        return access if isinstance(access, FileAccess) else FileAccess()

    @files.setter
    def files(self, access: FileAccess) -> None:
        self.__dict__["_files"] = access

    def version(self) -> str:
        from sparklink import __version__

        return __version__

    @classmethod
    def config_def(cls) -> ConfigDef:
        return ConfigDef()

    def validate(self, config: Mapping[str, str]) -> dict[str, list[str]]:
        """Per-key errors for `config`; the default checks the ConfigDef only."""
        return self.config_def().validate(config)

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    @abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Split the work into at most `max_tasks` task configs."""

    def stop(self) -> None:
        """Release what `start` took."""

    def alter_offsets(self, config: Mapping[str, str], offsets: list[tuple[Partition, Offset | None]]) -> bool:
        """Validate an offsets alteration; return True if the connector also applied it itself.

        Raise ValueError (or a ConnectError) to refuse it. The default accepts and returns False.
        """
        return False


class Task(ABC):
    """One unit of parallel work: one Spark streaming query."""

    def version(self) -> str:
        from sparklink import __version__

        return __version__

    def metrics(self, ctx: TaskContext) -> list[MetricGroup]:
        """Metric groups the task measures itself (Connect's plugin metrics, MirrorMaker's per-partition
        groups), read when the worker's /metrics is scraped, beside the runtime's groups of the task.
        Keep it cheap: nothing should be computed until this is asked."""
        return []


class SourceTask(Task):
    """A source: its stream, and the hooks of the batch path every source runs on (a batch function per
    micro-batch). A source that Spark's Kafka sink can write directly also implements `DirectSource`
    (api/direct.py)."""

    @abstractmethod
    def stream(self, ctx: TaskContext) -> DataFrame:
        """A streaming DataFrame of records to write; columns `topic`, `key`, `value`[, `headers`]."""

    @abstractmethod
    def batch_offsets(self, batch: DataFrame) -> list[tuple[Partition, Offset]]:
        """The source offsets reached by one written micro-batch (a small Spark aggregation)."""

    def batch_metrics(self) -> dict[str, Column] | None:
        """Aggregate expressions (name -> column) the runtime observes on each batch while writing it.

        With them the runtime writes the batch in one pass, uncached, and hands the observed values to
        `observed_offsets`; None (the default) means: cache the batch and call `batch_offsets`. The
        runtime adds the batch's record count under `RECORDS_METRIC`."""
        return None

    def observed_offsets(self, metrics: Mapping[str, Any]) -> list[tuple[Partition, Offset]]:
        """The source offsets reached by a written batch, from the values of `batch_metrics`."""
        raise NotImplementedError(f"{type(self).__name__} declares batch_metrics but not observed_offsets")

    def topics(self, ctx: TaskContext) -> list[str] | None:
        """Topics this task writes to, when known up front (saves a pass per batch for tracking)."""
        return None

    def producer_config(self, ctx: TaskContext) -> dict[str, str]:
        """Kafka producer settings for Spark's writer, e.g. another cluster's `bootstrap.servers`.

        The default takes Connect's `producer.override.*` keys from the task config.
        """
        prefix = "producer.override."
        return {k.removeprefix(prefix): v for k, v in ctx.config.items() if k.startswith(prefix)}

    def batch_written(self, batch: DataFrame, batch_id: int, ctx: TaskContext) -> None:
        """Called after a batch is written and its offsets recorded (e.g. to emit offset syncs)."""


class SinkTask(Task):
    reads_batch_once: ClassVar[bool] = False
    """`write_batch` runs one Spark action over its batch, so the runtime does not cache the batch.
    Left False, the runtime caches it, and a sink that reads it twice (a collect, then a write) does
    not fetch it from Kafka twice."""
    value_as_text: ClassVar[bool] = False
    """`write_batch` writes each value as text (`api.text.as_text`: objects as JSON), so the runtime may
    hand over a JsonConverter's value as that text, a string column, and build no VARIANT for it."""

    def start(self, ctx: TaskContext) -> None:
        """Check the task's config against what the worker allows (e.g. `ctx.files`) before its query
        starts; raise to fail the task. A source does the same in `stream`."""

    def holds_batch(self, ctx: TaskContext) -> bool:
        """Whether `write_batch` holds its whole batch in memory (brings it to the driver). The runtime
        then reads smaller batches when the config sets no bound: kafka_io.batch_limit."""
        return True

    @abstractmethod
    def write_batch(self, batch: DataFrame, batch_id: int, ctx: TaskContext) -> None:
        """Write one micro-batch read from Kafka; raise to fail the task."""

    def stop(self) -> None:
        """Release resources after the query stops."""


class SourceConnector(Connector):
    type: ClassVar[ConnectorType] = "source"


class SinkConnector(Connector):
    type: ClassVar[ConnectorType] = "sink"
