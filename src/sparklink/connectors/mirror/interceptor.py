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


def with_offset_syncs(
    producer: dict[str, str],
    topic: str,
    max_lag: int,
    upstream_of: dict[str, str],
    sync_producer: dict[str, str],
    promote_ms: int = 1000,
) -> dict[str, str]:
    """Producer settings that make `OffsetSyncInterceptor` (jvm/interceptor/) emit MM2's offset syncs.

    Records then carry their upstream offset in `UPSTREAM_HEADER`, which the interceptor removes. It
    pairs each record's acknowledgement with that offset and writes syncs to `topic` with a producer
    of its own (`sync_producer`: the offset-syncs cluster's settings, `bootstrap.servers` included);
    a partition's last record is synced within `promote_ms` (MM2 does it at each offset commit).
    """
    settings = {
        f"{SYNCS_PREFIX}topic": topic,
        f"{SYNCS_PREFIX}lag.max": str(max_lag),
        f"{SYNCS_PREFIX}promote.ms": str(promote_ms),
        f"{SYNCS_PREFIX}upstream.topics": ",".join(f"{remote}={up}" for remote, up in sorted(upstream_of.items())),
        **{f"{SYNCS_PREFIX}producer.{k}": v for k, v in sync_producer.items()},
    }
    return with_interceptor({**producer, **settings}, SYNCS_CLASS_NAME)
