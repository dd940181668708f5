"""A Java file connector's task checks the worker's file rules again when it starts (issue 30): a config
accepted under a wider allow-list (before a worker restart) fails the task before any Java class opens
the file. In-memory twins stand for the worker's services; the rule check is the real one."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from sparklink.api.errors import ConnectError
from sparklink.api.files import FileAccess
from sparklink.worker.execution.factory import error_policy
from sparklink.worker.execution.jvm_run import JavaTaskSetup
from sparklink.worker.execution.jvm_sink_run import JvmSinkRun
from sparklink.worker.execution.jvm_source_run import JvmSourceRun
from sparklink.worker.plugins.java import APACHE_FILE_CONNECTORS, JavaPlugin, JavaSinkTask, JavaSourceTask

SOURCE, SINK = sorted(APACHE_FILE_CONNECTORS, key=APACHE_FILE_CONNECTORS.__getitem__)


def _run(kind: str, config: dict[str, str], allowed: Path, tmp_path: Path) -> Any:
    plugin = JavaPlugin(None, SOURCE if kind == "source" else SINK, kind, "4.3.1", "connect-file")  # type: ignore[arg-type]
    task = (
        JavaSourceTask(plugin, "FileStreamSourceTask")
        if kind == "source"
        else JavaSinkTask(plugin, "FileStreamSinkTask")
    )
    services = SimpleNamespace(files=FileAccess(allowed=(allowed.resolve(),)))
    ctx = SimpleNamespace(config=dict(config))
    state = ("files", 0, task, ctx, SimpleNamespace(), None, tmp_path)
    setup = JavaTaskSetup(task, {}, error_policy({}, "source" if kind == "source" else "sink"))
    if kind == "source":
        return JvmSourceRun(*state, services=services, connector_config=dict(config), setup=setup)  # type: ignore[arg-type]
    return JvmSinkRun(*state, services=services, connector_config=dict(config), setup=setup, group="g")  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["source", "sink"])
def test_a_file_outside_the_narrowed_allow_list_fails_the_java_task_at_start(kind: str, tmp_path: Path) -> None:
    old, narrowed = tmp_path / "old", tmp_path / "narrowed"
    old.mkdir(), narrowed.mkdir()
    path = str(old / "data.txt")
    run = _run(kind, {"file": path, "topic" if kind == "source" else "topics": "t"}, narrowed, tmp_path)
    with pytest.raises(ConnectError) as caught:
        run.start() if kind == "source" else run.check_file_rules()
    message = str(caught.value)
    assert f"file {path!r} is refused by the worker's file rules" in message
    assert "sparklink.file.allowed.paths" in message and str(narrowed.resolve()) in message


@pytest.mark.parametrize("kind", ["source", "sink"])
def test_a_file_inside_the_allow_list_passes_the_start_check(kind: str, tmp_path: Path) -> None:
    run = _run(kind, {"file": str(tmp_path / "data.txt")}, tmp_path, tmp_path)
    run.check_file_rules()  # no error: the task goes on to the Connect host


def test_other_java_connectors_are_not_file_checked(tmp_path: Path) -> None:
    plugin = JavaPlugin(None, "io.debezium.connector.postgresql.PostgresConnector", "source", "3", "x")  # type: ignore[arg-type]
    assert plugin.file_rule_error({"file": "/etc/passwd"}, FileAccess(allowed=(tmp_path,))) is None
