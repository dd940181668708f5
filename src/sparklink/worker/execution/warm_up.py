"""A worker's warm-up: before it takes any connector, its Spark JVM runs once the code a task's first
batch needs, so that the first tasks on a fresh worker start about as fast as later ones. Callers: the
task registry (tasks.py) starts it with the session; the herders wait for it (`Worker.await_warm_up`)
after replaying their stores and before they start connectors or join their group. Off with
`sparklink.warm.up.enable=false`.

A fresh worker loads and compiles Spark's streaming classes, its JSON writer and its Kafka source and
sink the first time a task needs them, on the task's clock. Six datagen tasks created at once, POST to
all six writing (/work/dbg/warm6b.py, quiet 2-core machine): 3.9-5.0 s on a fresh worker, 0.9-1.5 s on
one that had run tasks before, 1.6-2.6 s on a fresh worker with this warm-up done first (five runs).
Run in the background after start instead, it competed with the first tasks for the same cores and
gained little (3.4-3.9 s). The cost moves to the worker's start, where no task waits: healthy after
10.7-11.4 s against 8.1-8.2 s, so from process start to all writing the sum is about the same; while a
worker joining a group warms up, the tasks it will take go on running where they are. The write path
runs tasks' own pipelines, so Spark's parser and analyser know their SQL text too: six first tasks
created at once then start their queries in 0.27-0.29 s rather than 0.45-0.56 s, a first connector's
first record comes 0.69-0.76 s after its POST rather than 0.85-0.99 s (one datagen task, JsonConverter)
and a first chain that routes is built in 82 ms rather than 272 ms. The write path takes 2.1-2.4 s
where its hand-written encoding took 0.8-1.1 s (three runs each, fresh session, no broker).

A sink's side is warmed too (`sink_path`): JSON values parsed by JsonConverter, transformed and
rendered back as text, which a fresh JVM otherwise runs interpreted for the first sink's first seconds.
So is a source's producer (`producer_path`), which Spark's Kafka writer otherwise opens at the first
source task's first record.

Best effort throughout: a step that fails is logged and the worker starts as it would have.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from sparklink.api.text import as_text
from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform import ports
from sparklink.worker.execution import kafka_io
from sparklink.worker.execution.direct_run import routed_topics
from sparklink.worker.transforms.pipeline import Pipeline, compile_pipeline
from sparklink.worker.transforms.record import Side

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

WRITE_ROWS = 50_000
"""Rows the warm-up query encodes with the worker's converters, enough for the JVM to compile the encoding.
The query's fixed cost dominates: 2.5-2.8 s with 50,000 rows and 2.5-2.6 s with 20,000 (measured when it
encoded hand-written JSON), the reader's 0.9-1.0 s after it."""

SINK_ROWS = 50_000
"""JSON values the sink side's warm-up parses and renders. A fresh worker's first FileStreamSink with
JsonConverter and three transforms, over bench.sink's 200,000 JSON values of 1 KiB (/work/dbg/
sink_probe13.py, an in-process worker), wrote its first line 3.1 s after its POST and its last after
6.3 s; after this warm-up, 2.0 and 4.8-4.9 s (two runs), for 2.2-2.6 s more at the start. With 20,000
or 10,000 rows the warm-up took 1.8 and 1.7 s and the last line came at 5.7 and 5.6 s: the fixed cost
is most of the warm-up, and the rows are what let the JIT compile the parser."""

TOPIC_WAIT_S = 10.0
"""How long the reader's warm-up waits for the config topic, which the config store creates meanwhile on
a fresh cluster."""

WAIT_S = 30.0
"""The longest a worker's start, or its stop, waits for the warm-up (its Kafka clients give up sooner)."""


class WarmUp:
    """The warm-up of one Spark session, on a thread of its own from construction."""

    def __init__(
        self,
        spark: SparkSession,
        clients: KafkaClientSettings,
        topic: str,
        scratch: Path,
        metadata: kafka_io.Metadata,
        converters: Mapping[str, str] | None = None,
    ) -> None:
        """`converters`: the worker's converter settings, which a connector that sets none runs with."""
        self._spark, self._clients, self._topic = spark, clients, topic
        self._checkpoint = scratch / "warm-up"
        self._metadata = metadata
        self._converters = dict(converters or {})
        self._thread = threading.Thread(target=self._run, name="spark-warm-up", daemon=True)
        self._thread.start()

    def wait(self, timeout: float = WAIT_S) -> bool:
        """Wait for the warm-up to end; False if it still runs after `timeout` seconds."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        began = time.monotonic()
        write_path(self._spark, self._clients, self._topic, self._checkpoint, self._converters)
        sink_path(self._spark)
        # The reader reads the config topic, which may not exist yet; Spark's reader would log its absence
        # as a warning and retry.
        if _topic_exists(self._metadata, self._topic, TOPIC_WAIT_S):
            kafka_io.warm_up(self._spark, self._clients, self._topic)
            producer_path(self._spark, self._clients, self._topic)
        log.info("the worker's Spark session is warmed up (%.2fs)", time.monotonic() - began)


def write_path(
    spark: SparkSession,
    clients: KafkaClientSettings,
    topic: str,
    checkpoint: Path,
    converters: Mapping[str, str] | None = None,
) -> int:
    """Run one micro-batch shaped like a source task's query: `WRITE_ROWS` generated rows through a task
    pipeline (the worker's `converters` and a chain that routes) into Spark's Kafka sink with the worker's
    client settings. The filter before the sink holds for no row (no record value is shorter than
    nothing), so no record is sent to `topic` or anywhere else; the checkpoint is removed after. Returns
    the rows the query read (0 if it failed).

    A pipeline is Spark SQL text (transforms/exprs.py), and Spark's parser is slow until it has seen such
    text: on a fresh session the expressions of one task's pipeline took 0.37-0.44 s to parse, and
    0.01-0.05 s the second time, on the clock of the first tasks. So the pipeline without transforms (a
    converter-only task's) is parsed and analysed too, though not run."""
    from pyspark.sql import functions as F

    began = time.monotonic()
    shutil.rmtree(checkpoint, ignore_errors=True)  # a start killed during its warm-up left it: begin anew
    try:
        generated = (
            spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", str(WRITE_ROWS))
            .option("numPartitions", "1")
            .load()
        )
        value = F.struct(
            F.col("value").alias("id"),
            F.col("timestamp").alias("at"),
            F.concat(F.lit("name-"), F.col("value").cast("string")).alias("name"),
            (F.col("value") % 2 == 0).alias("flag"),
            (F.col("value") / 3).alias("amount"),
        )
        source = generated.select(
            F.lit(topic).alias("topic"), F.col("value").cast("string").alias("key"), value.alias("value")
        )
        plain = _pipeline({}, converters).run(source).records
        plain.schema  # noqa: B018 (analysed: the schema is what is asked for)
        chain = _pipeline(_TRANSFORMS, converters)
        routed_topics(chain, [topic], spark)  # what a chain that routes costs a task's start
        records = chain.run(source).records.where(F.length("value") < 0)
        to_sink, options = kafka_io.sink_input(records, leave_out=("topic",))
        query = (
            to_sink.writeStream.format("kafka")
            .queryName("sparklink-warm-up")
            .options(**clients.spark_options(), **options)
            .option("topic", topic)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        if not query.awaitTermination(int(WAIT_S)):
            query.stop()
        read = sum(int(p.get("numInputRows", 0)) for p in query.recentProgress)
    except Exception as exc:  # an optimisation only: never fail a worker over it
        log.info("Spark's write path could not be warmed up (nothing else is affected): %s", exc)
        return 0
    finally:
        shutil.rmtree(checkpoint, ignore_errors=True)
    log.info("Spark's write path warmed up in %.2fs (%d rows encoded, none sent)", time.monotonic() - began, read)
    return read


PRODUCER_WAIT_MS = 10_000
"""How long the producer's warm-up waits for the brokers before giving up (its own, not a task's)."""


def producer_path(spark: SparkSession, clients: KafkaClientSettings, topic: str) -> int:
    """Open a Kafka producer in the Spark JVM with the worker's client settings, ask it for `topic`'s
    partitions and close it: it sends nothing. Returns the partitions it found (0 if it failed).

    Spark's Kafka writer opens its producer at a task's first record, and the write path above sends
    none, so the first source task of a fresh worker loaded and initialised the producer's classes (and
    its TLS or SASL handshake) on its own clock. A fresh worker's first datagen connector (/work/dbg/
    first_record.py, JsonConverter, 50,000 records/s; five runs each, alternating): its first record
    0.64-0.77 s after its POST without this (mean 0.71), 0.48-0.69 s with it (mean 0.60). The producer
    takes 0.06-0.10 s at the worker's start."""
    began = time.monotonic()
    try:
        jvm = spark.sparkContext._jvm
        assert jvm is not None, "a running session has a JVM"
        settings = jvm.java.util.HashMap()
        serializer = "org.apache.kafka.common.serialization.ByteArraySerializer"
        for key, value in clients.java(
            **{
                "client.id": "sparklink-warm-up",
                "key.serializer": serializer,
                "value.serializer": serializer,
                "max.block.ms": PRODUCER_WAIT_MS,
            }
        ).items():
            settings.put(key, value)
        producer = jvm.org.apache.kafka.clients.producer.KafkaProducer(settings)
        try:
            partitions = int(producer.partitionsFor(topic).size())
        finally:
            producer.close(jvm.java.time.Duration.ofSeconds(5))
    except Exception as exc:  # an optimisation only: never fail a worker over it
        log.info("Spark's Kafka writer could not be warmed up (nothing else is affected): %s", exc)
        return 0
    log.info(
        "Spark's Kafka writer warmed up in %.2fs (%d partitions of %s)", time.monotonic() - began, partitions, topic
    )
    return partitions


def sink_path(spark: SparkSession) -> int:
    """Run `SINK_ROWS` records through a sink task's side of a pipeline (`sink_rows`) into Spark's noop
    writer, which computes every row and writes nothing. Returns the rows it converted (0 if it failed).

    A sink's converter parses each value (JsonConverter: JSON text into a VARIANT) and a sink that
    writes text renders it back; on a fresh JVM both ran interpreted, so the first sink paid seconds
    for them (see SINK_ROWS). The converter warmed is JsonConverter without schemas, Connect's usual
    one: the converters a connector sets are not known at the worker's start, and a StringConverter or
    ByteArrayConverter sink has no parsing to warm."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    began = time.monotonic()
    try:
        observation = Observation("sparklink-sink-warm-up")
        rows = sink_rows(spark, SINK_ROWS).observe(observation, F.count(F.lit(1)).alias("rows"))
        rows.write.format("noop").mode("overwrite").save()
        converted = int(observation.get["rows"])
    except Exception as exc:  # an optimisation only: never fail a worker over it
        log.info("a sink's converter path could not be warmed up (nothing else is affected): %s", exc)
        return 0
    log.info("a sink's converter path warmed up in %.2fs (%d JSON values)", time.monotonic() - began, converted)
    return converted


def sink_rows(spark: SparkSession, rows: int) -> DataFrame:
    """`rows` records shaped as Spark's Kafka source reads them, each value a JSON object of about 1 KiB,
    through a sink pipeline (JsonConverter without schemas and the warm-up's chain) for a sink that writes
    values as text, as the file sink does: the chain's text edit (transforms/json_text.py)."""
    batch = spark.range(rows, numPartitions=1).selectExpr(
        "CAST(CAST(id AS STRING) AS BINARY) AS key",
        "CAST(to_json(named_struct('id', id, 'name', concat('name-', id), 'flag', id % 2 = 0, "
        "'payload', repeat('x', 960))) AS BINARY) AS value",
        "'sparklink-warm-up' AS topic",
        "0 AS partition",
        "id AS offset",
        "current_timestamp() AS timestamp",
        "0 AS timestampType",
        "CAST(array() AS ARRAY<STRUCT<key: STRING, value: BINARY>>) AS headers",
    )
    records = _pipeline(_TRANSFORMS, _SINK_CONVERTERS, "sink", value_as_text=True).run(batch).records
    return records.selectExpr(f"{as_text('value', 'string')} AS value")


_SINK_CONVERTERS = {
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
}


_TRANSFORMS = {
    "transforms": "route,insert",
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.route.regex": "(.*)",
    "transforms.route.replacement": "$1",
    "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField$Value",
    "transforms.insert.static.field": "warmed",
    "transforms.insert.static.value": "up",
}
"""The warm-up's chain: any chain takes the pipeline's framed path (its record columns, error and drop
markers), which a converter-only pipeline does not; one that keeps every record and routes by topic has
its routes evaluated once at a task's start (direct_run.routed_topics)."""


def _pipeline(
    transforms: Mapping[str, str],
    converters: Mapping[str, str] | None,
    side: Side = "source",
    value_as_text: bool = False,
) -> Pipeline:
    return compile_pipeline(transforms, converters, side, "sparklink-warm-up", 0, value_as_text)


def _topic_exists(metadata: kafka_io.Metadata, topic: str, timeout: float) -> bool:
    try:
        ports.wait_until(lambda: bool(metadata.partitions([topic])), timeout)
    except TimeoutError:
        log.info("Spark's Kafka reader is not warmed up: topic %s did not appear in %.0fs", topic, timeout)
        return False
    except Exception as exc:  # the brokers do not answer: nothing to read
        log.info("Spark's Kafka reader is not warmed up: %s", exc)
        return False
    return True
