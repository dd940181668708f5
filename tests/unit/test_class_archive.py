"""Which class archive a Spark JVM maps: one per JDK, PySpark and class path, none when it is missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparklink.platform import jvm_archive
from sparklink.worker.execution import class_archive


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SPARKLINK_HOME", str(tmp_path))
    return tmp_path


def test_a_jvm_maps_the_archive_only_when_it_exists(home: Path) -> None:
    settings = {"spark.jars": ""}
    assert class_archive.java_options(settings) == ""
    archive = class_archive.archive_file(settings)
    assert archive.parent == home / ".cache" / "class-archive"
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"archive")
    assert class_archive.java_options(settings) == f"-XX:SharedArchiveFile={archive} {jvm_archive.QUIET}"


def test_a_changed_jar_or_class_path_names_another_archive(home: Path) -> None:
    jar = home / "a.jar"
    jar.write_bytes(b"one")
    settings = {"spark.jars": f"file:{jar}", "spark.driver.extraClassPath": ""}
    first = class_archive.archive_file(settings)
    assert class_archive.archive_file(dict(settings)) == first, "the same settings name the same archive"
    jar.write_bytes(b"rebuilt")  # the JVM would refuse an archive whose jars changed since
    os.utime(jar, ns=(1, 1))
    assert class_archive.archive_file(settings) != first
    assert class_archive.archive_file({**settings, "spark.driver.extraClassPath": str(jar)}) != first


def test_a_training_jvm_dumps_its_classes_quietly(tmp_path: Path) -> None:
    options = class_archive.training_options(tmp_path / "x.jsa")
    assert f"-XX:ArchiveClassesAtExit={tmp_path / 'x.jsa'}" in options
    assert jvm_archive.QUIET in options
