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


def with_interceptor(producer: dict[str, str]) -> dict[str, str]:
    """Producer settings with our interceptor appended to any the user configured."""
    current = [c.strip() for c in producer.get("interceptor.classes", "").split(",") if c.strip()]
    if CLASS_NAME not in current:
        current.append(CLASS_NAME)
    return {**producer, "interceptor.classes": ",".join(current)}
