"""The worker's file rules (sparklink.api.files) and the file connectors that follow them, without Spark."""

from __future__ import annotations

import os
import re
import site
import sys
from pathlib import Path

import pytest

from sparklink.api.connector import TaskContext
from sparklink.api.files import FileAccess, FileAccessError, parse_allowed
from sparklink.connectors.file import (
    FileStreamSinkConnector,
    FileStreamSinkTask,
    FileStreamSourceConnector,
    FileStreamSourceTask,
    append_lines,
)
from sparklink.worker.config import WorkerConfig, WorkerConfigError

SITE_PACKAGES = Path(site.getsitepackages()[0])


def test_a_pth_file_in_site_packages_is_refused_and_names_the_rule() -> None:
    target = SITE_PACKAGES / "sparklink_unit_evil.pth"
    reason = FileAccess.of().write_error(str(target))
    assert reason is not None
    assert "inside the worker's own installation or Python path" in reason and str(SITE_PACKAGES) in reason
    assert not target.exists()


def test_every_sys_path_entry_and_the_user_site_are_protected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    (tmp_path / "plugins").mkdir()
    access = FileAccess.of()
    assert access.write_error(str(tmp_path / "plugins" / "json.py")) is not None
    # The user's site-packages runs .pth files too, even if it does not exist yet.
    assert any(str(p) == os.path.realpath(site.getusersitepackages()) for p in access.protected)
    assert access.write_error(str(tmp_path / "out.txt")) is None


def test_the_worker_state_dir_and_what_the_worker_adds_are_protected(tmp_path: Path) -> None:
    state, jars = tmp_path / "state", tmp_path / "jars"
    state.mkdir()
    jars.mkdir()
    access = WorkerConfig.model_validate({"sparklink.state.dir": str(state)}).file_access(jars)
    assert "installation or Python path" in (access.write_error(str(state / "x.txt")) or "")
    assert "installation or Python path" in (access.write_error(str(jars / "evil.jar")) or "")


def test_plugin_path_is_protected_from_file_connectors(tmp_path: Path) -> None:
    plugins, other = tmp_path / "plugins", tmp_path / "other"
    (plugins / "connect-file").mkdir(parents=True)
    other.mkdir()
    access = WorkerConfig.model_validate({"plugin.path": f"{other}, {plugins}"}).file_access()
    assert access.write_error(str(plugins / "connect-file" / "evil.jar")) is not None
    assert access.write_error(str(other / "x.txt")) is not None
    assert access.write_error(str(tmp_path / "out.txt")) is None


def test_a_missing_parent_is_an_error_and_nothing_is_created(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "deeper" / "out.txt"
    reason = FileAccess.of().write_error(str(target))
    assert reason is not None and "does not exist: connectors do not create directories" in reason
    assert not (tmp_path / "missing").exists()


def test_the_allow_list_holds_against_dot_dot_and_symlinks(tmp_path: Path) -> None:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    (allowed / "link").symlink_to(outside)
    access = FileAccess.of(str(allowed))
    assert access.write_error(str(allowed / "ok.txt")) is None
    assert access.read_error(str(allowed / "ok.txt")) is None
    for escape in (allowed / ".." / "outside" / "x.txt", allowed / "link" / "x.txt", outside / "x.txt"):
        reason = access.write_error(str(escape)) or ""
        assert "outside the worker's allowed paths (sparklink.file.allowed.paths" in reason
        assert access.read_error(str(escape)) is not None
    # A prefix of a name is not a parent: /x/allowed-2 is not under /x/allowed.
    (tmp_path / "allowed-2").mkdir()
    assert access.write_error(str(tmp_path / "allowed-2" / "x.txt")) is not None


def test_allowed_paths_are_read_as_kafka_reads_allowed_paths(tmp_path: Path) -> None:
    assert parse_allowed(None) is None and parse_allowed("") is None
    assert parse_allowed(f"{tmp_path}/./a/..") == (tmp_path.resolve(),)
    with pytest.raises(ValueError, match="Path relative is not absolute"):
        parse_allowed("relative")
    with pytest.raises(ValueError, match=re.escape(f"Path {tmp_path}/nope does not exist")):
        parse_allowed(f"{tmp_path}/nope")
    with pytest.raises(WorkerConfigError, match=r"sparklink\.file\.allowed\.paths"):
        WorkerConfig.from_properties(None, {"sparklink.file.allowed.paths": "relative"})


def test_the_connectors_validate_their_file_with_the_workers_rules(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    sink, source = FileStreamSinkConnector(), FileStreamSourceConnector()
    sink.files = source.files = FileAccess.of(str(tmp_path / "in"))
    sink_config = {"connector.class": "FileStreamSink", "topics": "t", "file": str(tmp_path / "out.txt")}
    (error,) = sink.validate(sink_config)["file"]
    assert error.startswith(f"Invalid value {tmp_path / 'out.txt'} for configuration file: ")
    assert "outside the worker's allowed paths" in error
    assert sink.validate({**sink_config, "file": str(tmp_path / "in" / "out.txt")})["file"] == []
    (error,) = source.validate({"file": "/etc/passwd", "topic": "t"})["file"]
    assert "outside the worker's allowed paths" in error
    # A connector made outside a worker still keeps out of the installation.
    assert FileStreamSinkConnector().validate({**sink_config, "file": str(SITE_PACKAGES / "x.pth")})["file"]


def test_the_tasks_check_again_when_they_start(tmp_path: Path) -> None:
    ctx = TaskContext("c", 0, {"file": str(SITE_PACKAGES / "x.pth"), "topic": "t"}, spark=None)  # type: ignore[arg-type]
    with pytest.raises(FileAccessError, match="installation or Python path"):
        FileStreamSinkTask().start(ctx)
    ctx.files = FileAccess.of(str(tmp_path))
    ctx.config["file"] = "/etc/passwd"
    with pytest.raises(FileAccessError, match="outside the worker's allowed paths"):
        FileStreamSourceTask().stream(ctx)


def test_the_python_writer_never_follows_a_symlink_at_the_file_name(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched\n")
    (tmp_path / "out.txt").symlink_to(victim)
    with pytest.raises(OSError):
        append_lines(tmp_path / "out.txt", [b"x\n"])
    assert victim.read_text() == "untouched\n"
    with pytest.raises(FileNotFoundError):
        append_lines(tmp_path / "none" / "out.txt", [b"x\n"])
    assert not (tmp_path / "none").exists()


def test_sys_path_is_read_when_the_rules_are_made(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    before = FileAccess.of()
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path)])
    assert before.write_error(str(tmp_path / "x.py")) is None
    assert FileAccess.of().write_error(str(tmp_path / "x.py")) is not None
