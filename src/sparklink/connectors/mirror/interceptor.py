"""Record timestamps on the JVM write path: a Kafka producer interceptor for Spark's Kafka writer.

Callers: the mirror source and heartbeat tasks, when they build their streams.

Spark 4.2's Kafka writer has no timestamp column: KafkaRowWriter builds
`ProducerRecord(topic, partition, key, value, headers)`, so the producer stamps the send time
(checked in spark-sql-kafka-0-10_2.13-4.2.0.jar; SPARK-50160 proposed a column and was closed
unmerged). Spark does accept `kafka.interceptor.classes` for its *producer* (only the consumer
option is refused), so the timestamp travels in one extra header, `__sparklink.timestamp`, set in
Spark SQL from the source row's `timestamp` column, and `TimestampHeaderInterceptor`
(jvm/interceptor/, ~60 lines of Java) moves it into the record's timestamp and drops the header
inside the producer, before serialisation. No Python sees a record.

scripts/bootstrap.sh compiles the jar against the kafka-clients jar Spark uses; the worker's
SparkSession has it on its `spark.jars` (executors load it through their task class loader, which
Kafka uses to instantiate interceptors). A task checks that it is there before it starts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sparklink.api.errors import ConnectError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CLASS_NAME = "io.sparklink.mirror.TimestampHeaderInterceptor"
HEADER = "__sparklink.timestamp"
SYNCS_CLASS_NAME = "io.sparklink.mirror.OffsetSyncInterceptor"
UPSTREAM_HEADER = "__sparklink.upstream"
SYNCS_PREFIX = "sparklink.offset.syncs."
JAR_PREFIX = "sparklink-mirror-interceptor"


def require(spark: SparkSession) -> None:
    """Fail the task with what to do if the session lacks the interceptor jar (bootstrap not run)."""
    jars = spark.sparkContext.getConf().get("spark.jars", "") or ""
    if JAR_PREFIX not in jars:
        raise ConnectError(
            f"MirrorMaker tasks need the {JAR_PREFIX} jar on the worker's Spark session, which keeps record "
            "timestamps; run `bash scripts/bootstrap.sh` (it compiles the jar with the JDK's javac), then "
            "restart the worker"
        )


def with_interceptor(producer: dict[str, str], class_name: str = CLASS_NAME) -> dict[str, str]:
    """Producer settings with our interceptor appended to any the user configured."""
    current = [c.strip() for c in producer.get("interceptor.classes", "").split(",") if c.strip()]
    if class_name not in current:
        current.append(class_name)
    return {**producer, "interceptor.classes": ",".join(current)}


def with_offset_tracking(
    producer: dict[str, str],
    upstream_of: dict[str, str],
    registry: str,
    syncs: tuple[str, int, dict[str, str]] | None,
    promote_ms: int = 1000,
) -> dict[str, str]:
    """Producer settings for `OffsetSyncInterceptor` (jvm/interceptor/), which pairs each record's
    acknowledgement with the upstream offset it carries in `UPSTREAM_HEADER` (and removes the header).

    It reports how far each upstream partition has been written under the key `registry` (read at
    the task's stop with `acknowledged`). With `syncs` = (topic, offset.lag.max, producer settings
    of the offset-syncs cluster, `bootstrap.servers` included) it also writes MM2's offset syncs with
    a producer of its own; a partition's last record is synced within `promote_ms` (MM2 does it at
    each offset commit).
    """
    settings = {
        f"{SYNCS_PREFIX}registry": registry,
        f"{SYNCS_PREFIX}upstream.topics": ",".join(f"{remote}={up}" for remote, up in sorted(upstream_of.items())),
    }
    if syncs is not None:
        topic, max_lag, sync_producer = syncs
        settings.update(
            {
                f"{SYNCS_PREFIX}topic": topic,
                f"{SYNCS_PREFIX}lag.max": str(max_lag),
                f"{SYNCS_PREFIX}promote.ms": str(promote_ms),
                **{f"{SYNCS_PREFIX}producer.{k}": v for k, v in sync_producer.items()},
            }
        )
    return with_interceptor({**producer, **settings}, SYNCS_CLASS_NAME)


@dataclass(frozen=True)
class Acknowledged:
    """What one run's producer has had acknowledged: the last upstream offset per (topic, partition),
    and how many records."""

    positions: dict[tuple[str, int], int]
    records: int


def acknowledged(spark: SparkSession, registry: str, wait_s: float, forget: bool) -> Acknowledged | None:
    """What the run's producer has had acknowledged so far, from the JVM.

    Waits up to `wait_s` for the run's records in flight; `forget` drops the run's entry (at its
    stop). None when nothing registered under the key in this JVM: on a Spark cluster the producers
    live in the executors, and a run that sent nothing has no producer."""
    registry_class = spark._jvm.io.sparklink.mirror.AcknowledgedOffsets  # type: ignore[union-attr]
    deadline = time.monotonic() + wait_s
    while (in_flight := int(registry_class.inFlight(registry))) > 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    if in_flight < 0:
        return None
    positions: dict[tuple[str, int], int] = {}
    for line in str(registry_class.acknowledged(registry)).splitlines():
        topic, partition, offset = line.split("\t")
        positions[(topic, int(partition))] = int(offset)
    records = max(0, int(registry_class.records(registry)))
    if forget:
        registry_class.forget(registry)
    return Acknowledged(positions, records)


MIRROR_VALUES = (
    "record-count",
    "record-rate",
    "byte-count",
    "byte-rate",
    "record-age-ms",
    "record-age-ms-min",
    "record-age-ms-max",
    "record-age-ms-avg",
    "replication-latency-ms",
    "replication-latency-ms-min",
    "replication-latency-ms-max",
    "replication-latency-ms-avg",
)
"""MM2's MirrorSourceMetrics values, in the order `MirrorMetrics.snapshot` gives them."""


def mirror_metrics(spark: SparkSession, registry: str) -> list[tuple[str, int, dict[str, float]]]:
    """MM2's per-partition values of one run, measured by its producer's `OffsetSyncInterceptor`
    (jvm/interceptor/MirrorMetrics.java): (target topic, partition, values) for each partition it has
    sent to. [] when nothing registered under the key (a Spark cluster's executors hold the producers)."""
    text = str(spark._jvm.io.sparklink.mirror.MirrorMetrics.snapshot(registry))  # type: ignore[union-attr]
    out = []
    for line in text.splitlines():
        topic, partition, *values = line.split("\t")
        if len(values) == len(MIRROR_VALUES):
            out.append((topic, int(partition), {k: float(v) for k, v in zip(MIRROR_VALUES, values, strict=True)}))
    return out
