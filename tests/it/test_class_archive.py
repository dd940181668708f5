"""The bootstrap's class archive is one the worker's Spark JVM can map.

Each check starts a Spark JVM of its own in a child process with `-Xshare:on`, under which the JVM refuses
to start rather than quietly run without an archive it cannot use (a class path or JDK that changed since
it was trained, a damaged file): the worker itself starts without it in that case, only slower.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sparklink.platform import artifacts
from sparklink.worker.execution import class_archive, spark

STRICT_START = """
import sys
from sparklink.worker.execution import spark
options = f"-Xshare:on -Xlog:class+load=info:file={sys.argv[1]}"  # added to the session's own
session = spark.build_session("local[1]", "sparklink-test-archive", {"spark.driver.extraJavaOptions": options})
print("rows", session.range(5).count(), flush=True)
spark.stop_session(session)
"""


def strict_start(env: dict[str, str], classes_log: Path) -> subprocess.CompletedProcess[str]:
    """Start a Spark JVM that must map its archive, logging where each class it loads came from."""
    return subprocess.run(
        [sys.executable, "-c", STRICT_START, str(classes_log)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_the_bootstraps_archive_is_mapped_by_a_spark_jvm(tmp_path: Path) -> None:
    archive = class_archive.archive_file(spark.session_settings("local[1]"))
    assert archive.is_file(), f"the bootstrap trains {archive}: run scripts/bootstrap.sh"
    started = strict_start(dict(os.environ), tmp_path / "classes.log")
    assert started.returncode == 0, started.stderr[-3000:] + started.stdout[-2000:]
    assert "rows 5" in started.stdout
    # Spark's classes came from the archive on top of the JDK's own, not from its jars.
    loaded = (tmp_path / "classes.log").read_text()
    assert "org.apache.spark.SparkContext source: shared objects file (top)" in loaded


def test_a_damaged_archive_is_not_mapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: the same start, with a damaged archive where the JVM looks for it (a
    project home of its own, with the real jars)."""
    monkeypatch.setenv("SPARKLINK_JARS", str(artifacts.jars_dir("spark-kafka").parent))
    monkeypatch.setenv("SPARKLINK_HOME", str(tmp_path))
    archive = class_archive.archive_file(spark.session_settings("local[1]"))
    assert archive.is_relative_to(tmp_path)
    archive.parent.mkdir(parents=True)
    shutil.copyfile(Path(__file__), archive)  # not an archive
    started = strict_start(dict(os.environ), tmp_path / "classes.log")
    assert started.returncode != 0
    assert "rows 5" not in started.stdout
