"""Record timestamps on the JVM write path: a Kafka producer interceptor for Spark's Kafka writer.

Callers: the mirror source and heartbeat tasks, when they build their streams.

Spark 4.2's Kafka writer has no timestamp column: KafkaRowWriter builds
`ProducerRecord(topic, partition, key, value, headers)`, so the producer stamps the send time
(checked in spark-sql-kafka-0-10_2.13-4.2.0.jar; SPARK-50160 proposed a column and was closed
unmerged). Spark does accept `kafka.interceptor.classes` for its *producer* (only the consumer
option is refused), so the timestamp travels in one extra header, `__sparklink.timestamp`, set in
Spark SQL from the source row's `timestamp` column, and `TimestampHeaderInterceptor` (jvm/, ~60
lines of Java) moves it into the record's timestamp and drops the header inside the producer,
before serialisation. No Python sees a record.

The jar is compiled on first use with the JDK's `javac` against the kafka-clients jar Spark uses,
cached by content hash, and added to the session with `ADD JAR` (executors load it through their
task class loader, which Kafka uses to instantiate interceptors).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from sparklink.api.errors import ConnectError
from sparklink.platform import artifacts

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CLASS_NAME = "io.sparklink.mirror.TimestampHeaderInterceptor"
HEADER = "__sparklink.timestamp"
SOURCE = Path(__file__).with_name("jvm") / "TimestampHeaderInterceptor.java"

_lock = threading.Lock()
_registered: set[str] = set()


def _kafka_clients_jar() -> Path:
    jars = [Path(j) for j in artifacts.jar_list("spark-kafka") if Path(j).name.startswith("kafka-clients-")]
    if not jars:
        raise ConnectError("no kafka-clients jar in the spark-kafka jar set; run scripts/bootstrap.sh")
    return jars[0]


def _cache_dir() -> Path:
    base = os.environ.get("SPARKLINK_JARS")
    root = Path(base) if base else artifacts.project_root() / ".cache" / "jars"
    target = root / "sparklink-mirror"
    try:
        target.mkdir(parents=True, exist_ok=True)
        return target
    except OSError:  # read-only install: fall back to the user's temp space
        fallback = Path(tempfile.gettempdir()) / "sparklink-mirror-jars"
        fallback.mkdir(parents=True, exist_ok=True)
        return fallback


def jar_path() -> Path:
    """The interceptor jar, compiled now if this source and kafka-clients version have no jar yet."""
    clients = _kafka_clients_jar()
    digest = hashlib.sha256(SOURCE.read_bytes() + clients.name.encode()).hexdigest()[:16]
    jar = _cache_dir() / f"sparklink-mirror-interceptor-{digest}.jar"
    with _lock:
        if jar.exists():
            return jar
        javac = shutil.which("javac")
        if javac is None:
            raise ConnectError(
                "MirrorMaker tasks need `javac` (a JDK) once, to build the producer interceptor that keeps record "
                "timestamps; install OpenJDK 17 (the JDK, not only the JRE)"
            )
        with tempfile.TemporaryDirectory(prefix="sparklink-javac-") as work:
            classes = Path(work) / "classes"
            result = subprocess.run(
                [javac, "--release", "17", "-cp", str(clients), "-d", str(classes), str(SOURCE)],
                capture_output=True,
                text=True,
                check=False,
            )
            if result.returncode != 0:
                raise ConnectError(f"compiling {SOURCE.name} failed:\n{result.stdout}{result.stderr}")
            # Written next to the final name, then renamed: another process may be building it too.
            partial = jar.with_name(f".{jar.name}.{os.getpid()}.tmp")
            with zipfile.ZipFile(partial, "w") as out:
                for path in sorted(classes.rglob("*.class")):
                    out.write(path, path.relative_to(classes).as_posix())
            os.replace(partial, jar)
        return jar


def register(spark: SparkSession) -> None:
    """Make the interceptor loadable by this session's executors (once per application)."""
    app = spark.sparkContext.applicationId
    with _lock:
        if app in _registered:
            return
    jar = jar_path()
    spark.sql(f"ADD JAR '{jar}'")
    with _lock:
        _registered.add(app)


def with_interceptor(producer: dict[str, str]) -> dict[str, str]:
    """Producer settings with our interceptor appended to any the user configured."""
    current = [c.strip() for c in producer.get("interceptor.classes", "").split(",") if c.strip()]
    if CLASS_NAME not in current:
        current.append(CLASS_NAME)
    return {**producer, "interceptor.classes": ",".join(current)}
