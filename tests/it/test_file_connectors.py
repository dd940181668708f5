"""Kafka's file connectors on the real stack: file -> FileStreamSource -> topic -> FileStreamSink -> file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer

from sparklink.api.connector import TaskContext
from sparklink.clients.settings import KafkaClientSettings, client_config
from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.assembly import RunningWorker
from sparklink.worker.execution import kafka_io
from tests.conftest import WorkerFactory
from tests.helpers import create_topic, read_topic, task_states, topic_size, unique, wait_for


def _create(worker: RunningWorker, name: str, config: dict[str, str]) -> None:
    response = httpx.post(f"{worker.url}/connectors", json={"name": name, "config": config}, timeout=60)
    assert response.status_code == 201, response.text
    wait_for(lambda: task_states(worker.url, name) == ["RUNNING"] * int(config.get("tasks.max", "1")), 60, name)


def _stored_position(worker: RunningWorker, name: str) -> int:
    offsets = worker.stores.offsets.get(name)
    return int(offsets[0][1]["position"]) if offsets else -1


def _lines(path: Path) -> list[str]:
    return path.read_text("utf-8").splitlines() if path.exists() else []


def test_lines_flow_from_file_to_topic_to_file_in_order(worker_factory: WorkerFactory, tmp_path: Path) -> None:
    worker = worker_factory()
    source_file, sink_file, topic = tmp_path / "in.txt", tmp_path / "out" / "lines.txt", unique("lines")
    sink_file.parent.mkdir()  # the sink creates its file, never a directory
    expected = [f"line {n} ü" for n in range(300)]
    # Mixed line ends, and a last line without one: it is not a line until its end is written.
    source_file.write_bytes("\n".join(expected[:150]).encode() + b"\r\n" + "\r\n".join(expected[150:]).encode())
    create_topic(worker.config.bootstrap_servers, topic)
    _create(worker, "src", {"connector.class": "FileStreamSource", "file": str(source_file), "topic": topic})
    _create(
        worker,
        "sink",
        {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "file": str(sink_file),
            "topics": topic,
        },
    )
    # Generous: a loaded machine can take Spark's Python planner more than one start (see
    # execution/restarts.py) and each first batch plans and compiles from cold.
    wait_for(lambda: len(_lines(sink_file)) == 299, 180, "299 complete lines in the sink file")
    with source_file.open("ab") as handle:
        handle.write(b"\n")
    wait_for(lambda: len(_lines(sink_file)) == 300, 60, "the last line once it ends")
    assert _lines(sink_file) == expected
    assert wait_for(lambda: _stored_position(worker, "src") == source_file.stat().st_size, 30, "the final position")
    records = read_topic(worker.config.bootstrap_servers, topic, 300)
    assert all(r.key() is None for r in records)
    assert worker.stores.offsets.get("src") == [
        ({"filename": str(source_file)}, {"position": source_file.stat().st_size})
    ]


def test_recreated_source_resumes_from_its_stored_position(
    kafka: KafkaCluster, worker_factory: WorkerFactory, tmp_path: Path
) -> None:
    worker = worker_factory()
    source_file, topic = tmp_path / "log.txt", unique("resume")
    source_file.write_text("".join(f"first {n}\n" for n in range(5)))
    config = {"connector.class": "file-source", "file": str(source_file), "topic": topic, "batch.size": "2"}
    _create(worker, "tail", config)
    # batch.size bounds each micro-batch, so the stored position walks line by line to the end.
    wait_for(lambda: _stored_position(worker, "tail") == source_file.stat().st_size, 60, "the first run's position")
    assert httpx.delete(f"{worker.url}/connectors/tail", timeout=60).status_code == 204

    with source_file.open("a") as handle:
        handle.write("".join(f"second {n}\n" for n in range(3)))
    _create(worker, "tail", config)
    records = read_topic(kafka.bootstrap_servers, topic, 8)
    assert [r.value().decode() for r in records] == [f"first {n}" for n in range(5)] + [f"second {n}" for n in range(3)]
    wait_for(lambda: _stored_position(worker, "tail") == source_file.stat().st_size, 30, "the second run's position")
    assert topic_size(kafka.bootstrap_servers, topic) == 8


def test_a_sink_behind_a_backlog_reads_it_in_bounded_batches(
    worker_factory: WorkerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a bound in its config a sink still reads a large backlog in bounded batches: the file sink
    writing in the JVM, at most SINK_STREAMED_BATCH_RECORDS each. The bounds are lowered here to keep the
    topic small."""
    monkeypatch.setattr(kafka_io, "SINK_STREAMED_BATCH_RECORDS", 40)
    monkeypatch.setattr(kafka_io, "SINK_BATCH_RECORDS", 25)
    worker = worker_factory()
    topic, sink_file = unique("backlog"), tmp_path / "backlog.txt"
    create_topic(worker.config.bootstrap_servers, topic)
    producer = Producer(client_config(worker.config.bootstrap_servers))
    for n in range(200):
        producer.produce(topic, f"record {n}".encode())
    assert producer.flush(30) == 0
    config = {"connector.class": "FileStreamSink", "file": str(sink_file), "topics": topic}
    _create(worker, "backlog", config)
    wait_for(lambda: len(_lines(sink_file)) == 200, 120, "the whole backlog in the file")
    assert _lines(sink_file) == [f"record {n}" for n in range(200)]
    (run,) = [r for r in worker.worker.tasks.runs() if r.connector == "backlog"]
    assert run.query is not None
    query = run.query

    def sizes() -> list[int]:
        return [int(p["numInputRows"]) for p in query.recentProgress]

    # A batch's progress is reported after its records are written: wait for the last one's.
    wait_for(lambda: sum(sizes()) == 200, 30, "every batch's progress")
    assert max(sizes()) == 40, sizes()
    assert run.records == 200, "the task counts each record once, from its batches' offsets"


# Values the sink must write the same way whichever writer it uses: nulls, empty and non-ASCII values,
# invalid UTF-8 (a lone byte, a cut multi-byte character, an encoded surrogate), and one value longer
# than a write chunk.
_AWKWARD_VALUES = [
    b"plain",
    None,
    "héllo wörld ✓ 🚀".encode(),
    b"",
    b"bad \xff end",
    b"cut \xc3",
    b"surrogate \xed\xa0\x80 here",
    b"x" * (3 << 20),
    b"last",
]


@pytest.mark.parametrize("value_type", ["binary", "string"])
def test_the_sinks_jvm_and_python_writers_write_the_same_bytes(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value_type: str
) -> None:
    """The JVM writer (local master) and the Arrow one (a Spark cluster) are two implementations of one
    line format: each value as a UTF-8 line, null as `null`, invalid sequences replaced."""
    from pyspark.sql.types import BinaryType, StructField, StructType

    from sparklink.connectors import file

    rows = [(value,) for value in _AWKWARD_VALUES]
    batch = spark.createDataFrame(rows, StructType([StructField("value", BinaryType())])).coalesce(1)
    if value_type == "string":  # as a StringConverter hands them over: Spark text, never checked
        batch = batch.selectExpr("CAST(value AS STRING) AS value")
    assert file._writes_in_jvm(spark), "the test session must load the JVM writer (run the bootstrap)"

    def written(name: str) -> bytes:
        ctx = TaskContext(connector="sink", task_id=0, config={"file": str(tmp_path / name)}, spark=spark)
        file.FileStreamSinkTask().write_batch(batch, 0, ctx)
        return (tmp_path / name).read_bytes()

    in_jvm = written("jvm.txt")
    monkeypatch.setattr(file, "_writes_in_jvm", lambda session: False)
    in_python = written("python.txt")

    expected = b"".join(
        b"null\n" if v is None else v.decode("utf-8", errors="replace").encode() + b"\n" for v in _AWKWARD_VALUES
    )
    assert in_python == expected
    assert in_jvm == expected


def test_the_jvm_writer_appends_whole_lines_from_parallel_tasks(spark: Any, tmp_path: Path) -> None:
    """Several Spark tasks append to one file at once: every line arrives whole, once, and a second
    batch appends after the first."""
    from sparklink.connectors import file

    target = tmp_path / "out.txt"
    batch = spark.range(0, 60_000, numPartitions=6).selectExpr(
        "CONCAT(CAST(id AS STRING), '-', REPEAT('v', 300)) AS value"
    )
    for _ in range(2):
        batch.write.format(file.LINE_WRITER).option("path", str(target)).mode("append").save()
    lines = target.read_bytes().split(b"\n")
    assert lines[-1] == b""
    expected = {f"{i}-{'v' * 300}".encode() for i in range(60_000)}
    assert len(lines) - 1 == 120_000
    assert set(lines[:-1]) == expected


def test_the_jvm_writer_refuses_what_it_cannot_write(spark: Any, tmp_path: Path) -> None:
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    from sparklink.connectors import file

    two_columns = spark.range(3).selectExpr("CAST(id AS STRING) AS a", "CAST(id AS STRING) AS b")
    with pytest.raises((Py4JJavaError, PySparkException), match="writes one string column"):
        two_columns.write.format(file.LINE_WRITER).option("path", str(tmp_path / "x")).mode("append").save()
    with pytest.raises((Py4JJavaError, PySparkException), match="needs option"):
        spark.range(3).selectExpr("CAST(id AS STRING) AS v").write.format(file.LINE_WRITER).mode("append").save()
    assert not (tmp_path / "x").exists()

    # The worker's file rules, checked by the writer itself before it opens the file.
    one = spark.range(3).selectExpr("CAST(id AS STRING) AS v").coalesce(1)

    def write(path: Path, **options: str) -> None:
        one.write.format(file.LINE_WRITER).option("path", str(path)).options(**options).mode("append").save()

    with pytest.raises((Py4JJavaError, PySparkException), match="connectors do not create directories"):
        write(tmp_path / "missing" / "out.txt")
    assert not (tmp_path / "missing").exists()
    (tmp_path / "kept").mkdir()
    with pytest.raises((Py4JJavaError, PySparkException), match="installation or Python path"):
        write(tmp_path / "kept" / "x.pth", **{file.JVM_PROTECTED: f"/nowhere\0{tmp_path / 'kept'}"})
    with pytest.raises((Py4JJavaError, PySparkException), match="outside the worker's allowed paths"):
        write(tmp_path / "kept" / "x.txt", **{file.JVM_ALLOWED: str(tmp_path / "elsewhere")})
    (tmp_path / "kept" / "link.txt").symlink_to(tmp_path / "victim.txt")
    with pytest.raises((Py4JJavaError, PySparkException), match="symbolic link to a missing file"):
        write(tmp_path / "kept" / "link.txt", **{file.JVM_ALLOWED: str(tmp_path / "kept")})
    (tmp_path / "victim.txt").write_text("untouched\n")
    with pytest.raises((Py4JJavaError, PySparkException), match="outside the worker's allowed paths"):
        write(tmp_path / "kept" / "link.txt", **{file.JVM_ALLOWED: str(tmp_path / "kept")})
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == ["link.txt"]
    assert (tmp_path / "victim.txt").read_text() == "untouched\n"


def test_the_kafka_reader_warm_up_reads_a_topic_and_never_raises(
    spark: Any, kafka: KafkaCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker warms Spark's Kafka reader up once, in the background; whatever the topic, it only logs."""
    topic = unique("warm")
    create_topic(kafka.bootstrap_servers, topic)
    with caplog.at_level("INFO", logger="sparklink.worker.execution.kafka_io"):
        kafka_io.warm_up(spark, KafkaClientSettings(kafka.bootstrap_servers), topic)
        kafka_io.warm_up(spark, KafkaClientSettings("127.0.0.1:1"), topic)  # no broker there: Spark's reader fails
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith(f"Spark's Kafka reader warmed up on {topic}") for m in messages), messages
    assert any(m.startswith(f"Spark's Kafka reader could not be warmed up on {topic}") for m in messages), messages
