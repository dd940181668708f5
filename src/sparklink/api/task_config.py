"""Keys of connector and task configs that the runtime itself reads, each declared once.

Connectors put the batch hints into the task configs they generate (e.g. the lake sink's roll
interval); the runtime adds `task.class` and the task count, and parses every task config once into
`TaskSettings` when it starts the task. Callers: execution (task queries), the herder (validation).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sparklink.api import config as cfg

# Connect's ConnectorConfig / SinkConnectorConfig keys.
NAME = "name"
CONNECTOR_CLASS = "connector.class"
TASKS_MAX = "tasks.max"
TASKS_MAX_ENFORCE = "tasks.max.enforce"
TOPICS = "topics"
TOPICS_REGEX = "topics.regex"
GROUP_ID_OVERRIDE = "consumer.override.group.id"
# Added by the runtime to every task config it generates.
TASK_CLASS = "task.class"
TASK_COUNT = "sparklink.task.count"
# Batch hints a connector may put into its task configs.
MAX_RECORDS_PER_BATCH = "sparklink.max.records.per.batch"
MIN_RECORDS_PER_BATCH = "sparklink.min.records.per.batch"
MAX_BATCH_DELAY_MS = "sparklink.max.batch.delay.ms"
REALTIME = "sparklink.realtime"

MICRO_BATCH_FETCH_WAIT_MS = 10
"""`fetch.max.wait.ms` of the Kafka reads of micro-batch queries (sinks, a micro-batch MirrorSource).
A batch that reads to the end of a partition ends with a fetch the broker would hold for its 500 ms
default, hoping for data; measured, half a second added to each such batch. The consumer fetches only
while a batch reads, so a short wait costs nothing between batches."""

SINK_READ_CONSUMER = {
    "max.partition.fetch.bytes": str(4 << 20),
    "receive.buffer.bytes": str(1 << 20),
    "max.poll.records": "5000",
}
"""Consumer settings of a sink task's Kafka reads.
Spark's reader hands records on one poll at a time, and the Java consumer's defaults (1 MiB a
partition a fetch, a 64 KiB socket buffer, 500 records a poll) left it waiting on the broker: a batch
read of 400,000 x 1 KiB records from two partitions took 1.56 s with them and 1.00 s with these, a
median of four rounds each (a noop write, local[*] on two cores). Not a MirrorSource's: its
real-time reads mirrored no faster with them (44,299 records/s against 46,748 before) and its peak
RSS rose from 1,497 to 2,222 MiB (bench.mirror --records 1000000)."""

TASK_DEF = (
    cfg.ConfigDef()
    .key(TOPICS, "LIST", "Topics a sink task reads.", default="")
    .key(TASK_COUNT, "INT", "How many tasks the connector has.", default=1)
    .key(GROUP_ID_OVERRIDE, "STRING", "The sink's consumer group.", default=None)
    .key(MAX_RECORDS_PER_BATCH, "LONG", "At most this many records per micro-batch.", default=None)
    .key(
        MIN_RECORDS_PER_BATCH,
        "LONG",
        "Start a micro-batch only once this many records wait (or the delay below has passed).",
        default=None,
    )
    .key(MAX_BATCH_DELAY_MS, "LONG", "The longest wait for MIN_RECORDS_PER_BATCH.", default=900_000)
    .key(
        REALTIME,
        "BOOLEAN",
        "Run a task that can (MirrorSourceConnector's) in Spark's real-time mode, records streaming "
        "through long-running Spark tasks, when the worker has a free Spark task slot for each partition "
        "it reads (otherwise it runs in micro-batches). On a Spark cluster, stopping a real-time task "
        "writes again what it wrote since its last checkpoint, up to task.realtime.batch.interval.ms; "
        "in local mode the stop stores exactly what the target acknowledged.",
        default=True,
    )
)


@dataclass(frozen=True)
class TaskSettings:
    """A task config's runtime keys, parsed once."""

    topics: tuple[str, ...]
    task_count: int
    group_id_override: str | None
    max_records_per_batch: int | None
    min_records_per_batch: int | None
    max_batch_delay_ms: int
    realtime: bool = True

    @classmethod
    def parse(cls, config: Mapping[str, str]) -> TaskSettings:
        values = TASK_DEF.parse(config)
        return cls(
            topics=tuple(values[TOPICS]),
            task_count=max(int(values[TASK_COUNT]), 1),
            group_id_override=values[GROUP_ID_OVERRIDE] or None,
            max_records_per_batch=values[MAX_RECORDS_PER_BATCH],
            min_records_per_batch=values[MIN_RECORDS_PER_BATCH],
            max_batch_delay_ms=int(values[MAX_BATCH_DELAY_MS]),
            realtime=bool(values[REALTIME]),
        )


def sink_group(connector: str, config: Mapping[str, str]) -> str:
    """The consumer group of a sink connector: `connect-<name>` unless the config overrides it (Connect's rule)."""
    return config.get(GROUP_ID_OVERRIDE) or f"connect-{connector}"
