"""The worker's SparkSession, configured with Spark's Kafka connector jars from the bootstrap cache.

Its JVM runs in a session of its own: a SIGTERM (or Ctrl-C) to the worker's process group reaches the
Python worker only, which stops its queries first and then the JVM (`stop_session`). The JVM still
exits by itself if Python dies, when its stdin closes (PySpark's gateway watches it).

Spark's Python workers import PySpark from `$SPARK_HOME/python/lib/pyspark.zip` first on their
path; a zip import compiles every module from source each time (no bytecode cache): 1.65 CPU-s per
worker start instead of 0.45 s, and more than the 10 s Spark waits for a Python data source's planner
to connect back on a loaded machine. Unless SPARK_HOME is set, the JVM gets a SPARK_HOME that is the
installed PySpark without those zips (`_spark_home_without_zips`), so workers import the installed,
byte-compiled package.

The JDBC driver set (`jdbc`, for the JDBC connectors), the MirrorMaker interceptors (`interceptor`),
the file sink's line writer (`lines`), our SQL functions (`sql`) and the Connect host's bridge
(`connect-bridge`, for Java plugins), the last four compiled by the bootstrap, are added when the
bootstrap has made them. The JVM maps the bootstrap's class archive when one fits (class_archive.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from sparklink.platform import artifacts
from sparklink.worker.execution import class_archive

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


LOCAL_FILE_SYSTEM = "io.sparklink.hadoop.NioLocalFileSystem"
SQL_FUNCTIONS_JAR = "sparklink-sql.jar"


def build_session(
    master: str = "local[*]",
    app_name: str = "sparklink",
    conf: dict[str, str] | None = None,
    archive_at_exit: Path | None = None,
) -> SparkSession:
    """Create (or return the process's existing) SparkSession with the Kafka connector on its classpath.

    Its JVM maps the bootstrap's class archive when there is one for these settings (class_archive.py);
    with `archive_at_exit` it instead records the classes it loads into that file as it exits (training)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    settings = session_settings(master, app_name, conf)
    archive = (
        class_archive.training_options(archive_at_exit) if archive_at_exit else class_archive.java_options(settings)
    )
    if archive:
        settings["spark.driver.extraJavaOptions"] = f"{settings['spark.driver.extraJavaOptions']} {archive}"
        if SparkContext._gateway is None:  # this call starts the JVM
            log.info("the Spark JVM %s the class archive: %s", "records" if archive_at_exit else "maps", archive)
    _launch_gateway_in_own_session(settings)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    register_functions(session)
    return session


def session_settings(
    master: str = "local[*]", app_name: str = "sparklink", conf: dict[str, str] | None = None
) -> dict[str, str]:
    """The settings a worker's session starts with, `conf` over them (extending the lists in `ADDED_TO`);
    the process environment Spark's launcher reads is set up first (SPARK_HOME, the Python of the workers)."""
    # The Python workers must run the interpreter that runs the driver (the project's virtualenv).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # Everything sparklink runs is on loopback; this also silences Spark's hostname warning.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if "SPARK_HOME" not in os.environ:
        os.environ["SPARK_HOME"] = str(_spark_home_without_zips())
    log4j = Path(__file__).with_name("log4j2.properties")
    settings = {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.jars": ",".join(
            artifacts.jar_list("spark-kafka")
            + _optional_jars("jdbc")
            + _optional_jars("interceptor")
            + _optional_jars("lines")
            + _optional_jars("sql")
            + _optional_jars("connect-bridge")
        ),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
        # Each micro-batch writes two small files to the query's checkpoint (offsets, then commit). The
        # default manager goes through Hadoop's FileContext and took ~60 ms a file here, a third of an
        # empty trigger; the FileSystem one takes ~15 ms. A task's checkpoint is scratch (recreated on
        # every start; offsets live in Kafka), so nothing depends on how it is written.
        "spark.sql.streaming.checkpointFileManagerClass": (
            "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
        ),
        "spark.sql.adaptive.enabled": "false",
        # PySpark's default records the Python call site of every DataFrame and Column call, for error
        # messages: py4j round trips on each call (the active session, a setting, the origin set and cleared),
        # 140 of the 234 that built a datagen task's stream. The call sites would name the worker's own
        # code, never a user's.
        "spark.python.sql.dataFrameDebugging.enabled": "false",
        # Connect's maps keep the last value put for a key; Spark's default would fail the batch.
        "spark.sql.mapKeyDedupPolicy": "LAST_WIN",
        # Spark's default list minus `kafka`: batch writes to Kafka take the DataSource V2 path, the one
        # that delivers observed metrics, so a source batch is counted by its own write (kafka_io).
        "spark.sql.sources.useV1SourceList": "avro,csv,json,orc,parquet,text",
        # The local sockets that move collected rows between the JVM and Python wait 15 s by default,
        # too little on a loaded machine (CANNOT_OPEN_SOCKET fails the task).
        "spark.python.authenticate.socketTimeout": "120s",
        "spark.driver.memory": os.environ.get("SPARKLINK_DRIVER_MEMORY", "1g"),
        # The throughput collector, not G1 (the JVM's pick): G1's barriers on every reference store cost
        # the record path more than its shorter pauses give back here, where REST is served by Python.
        # bench.mirror, 2M x 1 KiB: 120,892 against 99,191 records/s, 8.2 against 10.8 CPU s per 1M,
        # peak RSS 1,373 against 1,839 MiB; bench.sink streamed 217,566 against 199,066 records/s;
        # mirror latency p99 at 5,000 records/s stayed at MM2's (55.6 against 56.5 ms).
        # The context map inheritable: a task's query thread logs the task's context (contexts.py).
        "spark.driver.extraJavaOptions": (
            f"-XX:+UseParallelGC -Dlog4j2.configurationFile=file:{log4j} -Dlog4j2.isThreadContextMapInheritable=true"
        ),
    }
    _add_users_settings(settings, conf or {})
    _use_local_file_system(settings)
    return settings


ADDED_TO = {"spark.jars": ",", "spark.driver.extraJavaOptions": " "}
"""The list settings a worker's own `spark.*` properties add to, with their separators, rather than replace:
the session cannot run without its Kafka connector jars, and without its log4j file and context
inheritance the Spark JVM's log loses the connector and task names (and goes to Spark's console
defaults). The user's part comes last, so their JVM flags win where both set one."""


def _add_users_settings(settings: dict[str, str], conf: dict[str, str]) -> None:
    for key, value in conf.items():
        separator, own = ADDED_TO.get(key), settings.get(key)
        if separator is None or not own:
            settings[key] = value
        elif value.strip():
            settings[key] = f"{own}{separator}{value.strip()}"


CONNECT_HOST_SETS = ("connect", "connect-host")
"""The jar sets of the Connect host's class loader: Connect's runtime (jvm/connect/pom.xml) and our host code."""


def connect_host_classpath() -> str | None:
    """The Connect host's class path (every JVM that runs Java plugins opens these jars), or None before the
    bootstrap has built the host and its bridge."""
    try:
        artifacts.jars_dir("connect-bridge")
        return os.pathsep.join(jar for jar_set in CONNECT_HOST_SETS for jar in artifacts.jar_list(jar_set))
    except artifacts.ArtifactsMissingError:
        return None


def start_callback_server(spark: SparkSession) -> None:
    """Start PySpark's Py4J callback server, through which Java calls Python back (a connector's context)."""
    from pyspark.java_gateway import ensure_callback_server_started

    ensure_callback_server_started(spark.sparkContext._gateway)


def register_functions(spark: SparkSession) -> None:
    """Define on this session the SQL functions that transforms' expressions (transforms/exprs.py) and
    sinks that write text (api/text.py) call.

    Functions are per session (a `newSession()` has none), so each worker's task runner calls this on
    the session it is given. Java's where the session loaded our jar, else their Spark SQL equivalents."""
    from pyspark.sql.types import BinaryType, IntegerType, StringType, VariantType

    from sparklink.api import text
    from sparklink.worker.transforms import exprs, json_text

    functions = [
        (exprs.UTF8_TEXT, "io.sparklink.spark.Utf8Text", StringType(), exprs.UTF8_TEXT_IN_SQL),
        (exprs.JSON_VARIANT, "io.sparklink.spark.JsonVariant", VariantType(), exprs.JSON_VARIANT_IN_SQL),
        (
            exprs.JSON_VARIANT_WITHOUT,
            "io.sparklink.spark.JsonVariantWithout",
            VariantType(),
            exprs.JSON_VARIANT_WITHOUT_IN_SQL,
        ),
        (text.VARIANT_TEXT, "io.sparklink.spark.VariantText", BinaryType(), text.VARIANT_TEXT_IN_SQL),
        (exprs.OBJECT_GET, "io.sparklink.spark.ObjectGet", VariantType(), exprs.OBJECT_GET_IN_SQL),
        (exprs.OBJECT_SIZE, "io.sparklink.spark.ObjectSize", IntegerType(), exprs.OBJECT_SIZE_IN_SQL),
        (exprs.OBJECT_PUT, "io.sparklink.spark.ObjectPut", VariantType(), exprs.OBJECT_PUT_IN_SQL),
        (exprs.OBJECT_SELECT, "io.sparklink.spark.ObjectSelect", VariantType(), exprs.OBJECT_SELECT_IN_SQL),
        (json_text.JSON_EDIT, "io.sparklink.spark.JsonEdit", BinaryType(), json_text.JSON_EDIT_IN_SQL),
    ]
    in_jar = functions_jar_loaded(spark)
    for name, java_class, returns, in_sql in functions:
        if spark.catalog.functionExists(name):
            continue  # defined already (Spark warns on each redefinition)
        if in_jar:
            spark.udf.registerJavaFunction(name, java_class, returns)
        else:
            spark.sql(in_sql)


def functions_jar_loaded(spark: SparkSession) -> bool:
    """Whether the session loaded our Java SQL functions (jvm/sql): bootstrap builds the jar, and a
    session without it uses their SQL forms."""
    return SQL_FUNCTIONS_JAR in (spark.conf.get("spark.jars", "") or "")


def spark_dirs(spark: SparkSession) -> list[str]:
    """Where this session's Spark keeps code: SPARK_HOME and the directories of its jars (a jar put
    there would be loaded at the next start)."""
    jars = [j.removeprefix("file:") for j in (spark.conf.get("spark.jars", "") or "").split(",") if j.strip()]
    home = os.environ.get("SPARK_HOME")
    return list(dict.fromkeys([*([home] if home else []), *(os.path.dirname(j) for j in jars)]))


def _spark_home_without_zips() -> Path:
    """The installed PySpark as a SPARK_HOME (jars, bin, conf linked) whose python/lib has no zips.

    Made once per machine and PySpark install, atomically (a rename), so concurrent workers agree.
    """
    import pyspark

    real = Path(pyspark.__file__).resolve().parent
    tag = hashlib.sha1(f"{real}:{pyspark.__version__}".encode()).hexdigest()[:12]
    home = Path(tempfile.gettempdir()) / f"sparklink-spark-home-{tag}"
    if (home / "jars").exists():
        return home
    draft = Path(tempfile.mkdtemp(prefix=f"{home.name}.", dir=home.parent))
    for entry in real.iterdir():
        if entry.name != "python":
            (draft / entry.name).symlink_to(entry)
    (draft / "python" / "lib").mkdir(parents=True)
    try:
        draft.rename(home)
    except OSError:  # another process made it first
        shutil.rmtree(draft, ignore_errors=True)
    return home


def _launch_gateway_in_own_session(settings: dict[str, str]) -> None:
    """Start the process's Spark JVM (once) outside the caller's process group."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    with SparkContext._lock:
        if SparkContext._gateway is None:
            conf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
            gateway = launch_gateway(conf, popen_kwargs={"start_new_session": True})
            SparkContext._gateway = gateway
            SparkContext._jvm = gateway.jvm


def stop_session(spark: SparkSession, timeout: float = 30.0) -> None:
    """Stop Spark, then make sure its JVM has exited (closing its stdin, then killing it if need be)."""
    from pyspark import SparkContext

    _wait_for_idle(spark, timeout)
    spark.stop()
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if gateway is None or proc is None:
        return
    try:
        gateway.shutdown()
    except Exception:  # already closed
        log.debug("closing the Py4J gateway", exc_info=True)
    with contextlib.suppress(OSError):
        proc.stdin.close()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        log.warning("the Spark JVM (pid %d) did not exit within %.0fs of its stop; killing it", proc.pid, timeout)
        proc.kill()
        proc.wait(10)
    SparkContext._gateway = None
    SparkContext._jvm = None


def _wait_for_idle(spark: SparkSession, timeout: float) -> None:
    """Let the tasks of stopped queries finish being cancelled: a task status arriving after the
    scheduler has shut down is logged as an ERROR (RejectedExecutionException in statusUpdate).

    Jobs and stages end as soon as they are cancelled, but their killed tasks report back later
    (seconds later on a loaded machine), so the executors' running-task counts are checked too."""
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if not tracker.getActiveStageIds() and not tracker.getActiveJobsIds() and not _running_tasks(spark):
                return
        except Exception:  # the context is already gone
            return
        time.sleep(0.1)
    log.warning("Spark still had running stages %.0fs after every query stopped", timeout)


def _running_tasks(spark: SparkSession) -> int:
    """Tasks the executors still run, as the scheduler counts them (the status tracker of the JVM)."""
    infos = spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()
    return sum(int(info.numRunningTasks()) for info in infos)


def _use_local_file_system(settings: dict[str, str]) -> None:
    """`file:` through our NioLocalFileSystem (jvm/localfs) when Spark runs in this JVM.

    Without Hadoop's native library, the stock one starts a `chmod` process for every file it
    creates and for its checksum: four processes per micro-batch of every query (its checkpoint's
    offset and commit files), ~40 ms of each trigger and a third of the JVM's CPU for connectors that
    write a record a second. On the driver's class path rather than in spark.jars, because Hadoop
    loads a file system class with the JVM's own class loader. A Spark cluster's executors do not
    have the jar, so there `file:` stays Hadoop's."""
    jars = _optional_jars("localfs")
    if not jars or not settings["spark.master"].startswith("local") or "spark.hadoop.fs.file.impl" in settings:
        return  # a file system the user chose stays theirs
    own = settings.get("spark.driver.extraClassPath")
    settings["spark.driver.extraClassPath"] = os.pathsep.join([*([own] if own else []), *jars])
    settings["spark.hadoop.fs.file.impl"] = LOCAL_FILE_SYSTEM


def _optional_jars(jar_set: str) -> list[str]:
    """The jars of a set that only some connectors need; none before the bootstrap has fetched it."""
    try:
        return artifacts.jar_list(jar_set)
    except artifacts.ArtifactsMissingError:
        return []
