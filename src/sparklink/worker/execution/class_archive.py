"""The Spark JVM's class-data-sharing archive: the classes a worker's JVM loads at start, parsed and verified
once by the bootstrap and mapped from a file by every later JVM. Callers: spark.py adds the archive to the
driver's options when it exists and matches; scripts/bootstrap.sh builds it (`python -m
sparklink.worker.execution.class_archive`).

A worker's Spark JVM loads some ten thousand classes from Spark's jars before it answers, and the JVM
reads, parses and verifies each one, unless it maps them from an archive (platform/jvm_archive.py says how
and when one matches). One standalone worker, start -> healthy (/work/dbg/sink_probe6.py, quiet 2-core
machine, two runs each): 9.06 and 9.21 s without, 6.43 and 6.31 s with an archive trained here.

Beside the JDK and the jars, this archive's file name hashes the PySpark version, SPARK_HOME and the
driver's class path settings. Training takes a JVM start, a short streaming query and the archive's dump at
exit: about 23 s on 2 cores, once per machine and install.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from sparklink.platform import jvm_archive

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CLASSPATH_KEYS = ("spark.jars", "spark.driver.extraClassPath")
"""The session settings that decide the driver's class path, beside Spark's own jars."""


def archive_file(settings: Mapping[str, str]) -> Path:
    """Where the archive for this JDK, PySpark and the session's class path settings is (or would be)."""
    import pyspark

    identity = [
        pyspark.__version__,
        os.environ.get("SPARK_HOME", ""),
        *(f"{key}={settings.get(key, '')}" for key in CLASSPATH_KEYS),
        *jvm_archive.jar_stamps(_class_path(settings)),
    ]
    return jvm_archive.archive_path("spark", identity)


def java_options(settings: Mapping[str, str]) -> str:
    """The driver's options that map the archive, or nothing when there is none for these settings."""
    return " ".join(jvm_archive.mapping_options(archive_file(settings)))


def training_options(target: Path) -> str:
    """The driver's options of a training JVM: dump the classes it loaded into `target` at its exit."""
    return " ".join(jvm_archive.training_options(target))


def _class_path(settings: Mapping[str, str]) -> list[Path]:
    """The jars the class path settings name."""
    entries = [
        entry
        for key in CLASSPATH_KEYS
        for entry in settings.get(key, "").replace(",", os.pathsep).split(os.pathsep)
        if entry.strip()
    ]
    return [Path(entry.removeprefix("file:")) for entry in entries]


def train(target: Path, master: str = "local[2]") -> bool:
    """Train the archive into `target` (the file `archive_file` names for the worker's settings); False when
    the JVM wrote none (workers then start without, as before)."""
    from sparklink.worker.execution import spark as spark_session

    target.parent.mkdir(parents=True, exist_ok=True)
    draft = Path(tempfile.mkdtemp(prefix="training-", dir=target.parent)) / target.name
    try:
        session = spark_session.build_session(master, "sparklink-class-archive", archive_at_exit=draft)
        _run_workload(session)
        spark_session.stop_session(session, timeout=300.0)  # the JVM writes the archive as it exits
        if not draft.is_file() or draft.stat().st_size == 0:
            return False
        draft.replace(target)  # whole or not at all: a JVM maps it only once it is complete
        return True
    finally:
        shutil.rmtree(draft.parent, ignore_errors=True)


def _run_workload(session: SparkSession) -> None:
    """What a worker's JVM does first, minus Kafka (no broker runs here): a streaming query's planning,
    codegen and micro-batch, rows encoded as JSON."""
    from pyspark.sql import functions as F

    checkpoint = tempfile.mkdtemp(prefix="sparklink-class-archive-")
    try:
        rows = session.readStream.format("rate-micro-batch").option("rowsPerBatch", "1000").load()
        encoded = rows.select(F.to_json(F.struct("value", "timestamp")).alias("value"))
        query = (
            encoded.writeStream.format("noop")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
    finally:
        shutil.rmtree(checkpoint, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sparklink.worker.execution.class_archive",
        description="Build the Spark JVM's class-data-sharing archive (.cache/class-archive) unless it exists: "
        "a step of the bootstrap. Later worker JVMs map it and start about 3 s sooner.",
    )
    parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    def target() -> Path:
        from sparklink.worker.execution import spark as spark_session

        return archive_file(spark_session.session_settings())

    return jvm_archive.ensure(
        "the Spark JVM",
        "once per JDK, PySpark and jars; about 25 s on 2 cores",
        "workers start without one",
        target,
        train,
    )


if __name__ == "__main__":
    sys.exit(main())
