"""Spark's `file:` in the worker's session: Hadoop's checksummed local file system, permissions set through java.nio."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from sparklink.worker.execution.spark import LOCAL_FILE_SYSTEM


def hadoop_fs(spark: Any, path: Path) -> tuple[Any, Any]:
    jvm = spark.sparkContext._jvm
    jpath = jvm.org.apache.hadoop.fs.Path(path.as_uri())
    return jpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), jpath


def test_files_and_directories_get_the_permissions_hadoop_asks_for(spark: Any, tmp_path: Path) -> None:
    jvm = spark.sparkContext._jvm
    fs, directory = hadoop_fs(spark, tmp_path / "offsets")
    assert fs.getClass().getName() == LOCAL_FILE_SYSTEM
    assert fs.mkdirs(directory, jvm.org.apache.hadoop.fs.permission.FsPermission(0o750))
    _, file = hadoop_fs(spark, tmp_path / "offsets" / "0")
    permission = jvm.org.apache.hadoop.fs.permission.FsPermission(0o640)
    out = fs.create(file, permission, True, 4096, 1, 1 << 20, None)
    out.write(bytearray(b"v1\n{}"))
    out.close()

    assert stat.S_IMODE(os.stat(tmp_path / "offsets").st_mode) == 0o750
    assert stat.S_IMODE(os.stat(tmp_path / "offsets" / "0").st_mode) == 0o640 & ~_umask()
    assert (tmp_path / "offsets" / "0").read_bytes() == b"v1\n{}"
    assert (tmp_path / "offsets" / ".0.crc").exists()  # still the checksummed file system


def test_a_streaming_query_checkpoints_through_it(spark: Any, tmp_path: Path) -> None:
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    query = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 5)
        .load()
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    assert sorted(p.name for p in (checkpoint / "offsets").iterdir() if not p.name.startswith("."))
    assert (checkpoint / "commits").is_dir()


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
