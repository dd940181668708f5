"""The worker's SparkSession, configured with Spark's Kafka connector jars from the bootstrap cache.

The JDBC driver set (`jdbc`, for the JDBC connectors) is added when the bootstrap has fetched it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sparklink.platform import artifacts

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def build_session(
    master: str = "local[*]", app_name: str = "sparklink", conf: dict[str, str] | None = None
) -> SparkSession:
    """Create (or return the process's existing) SparkSession with the Kafka connector on its classpath."""
    # The Python workers must run the interpreter that runs the driver (the project's virtualenv).
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # Everything sparklink runs is on loopback; this also silences Spark's hostname warning.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    log4j = Path(__file__).with_name("log4j2.properties")
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.jars", ",".join(artifacts.jar_list("spark-kafka") + _optional_jars("jdbc")))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .config("spark.sql.adaptive.enabled", "false")
        # Connect's maps keep the last value put for a key; Spark's default would fail the batch.
        .config("spark.sql.mapKeyDedupPolicy", "LAST_WIN")
        .config("spark.driver.memory", os.environ.get("SPARKLINK_DRIVER_MEMORY", "1g"))
        .config("spark.driver.extraJavaOptions", f"-XX:+UseG1GC -Dlog4j2.configurationFile=file:{log4j}")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session


def _optional_jars(jar_set: str) -> list[str]:
    """The jars of a set that only some connectors need; none before the bootstrap has fetched it."""
    try:
        return artifacts.jar_list(jar_set)
    except artifacts.ArtifactsMissingError:
        return []
