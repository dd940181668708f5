"""The `sparklink` CLI against a running worker: the same operations as REST, with readable output."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from sparklink.cli.main import app
from sparklink.worker.assembly import RunningWorker
from tests.helpers import task_states, unique, wait_for

runner = CliRunner()


def cli(worker: RunningWorker, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["connectors", *args, "--url", worker.url])
    return result.exit_code, result.output


def test_cli_drives_a_connector_through_its_lifecycle(module_worker: RunningWorker, tmp_path: Path) -> None:
    name = unique("cli")
    spec = tmp_path / "c.json"
    spec.write_text(json.dumps({"name": name, "config": {"connector.class": "datagen", "topic": unique("cli")}}))
    assert cli(module_worker, "create", str(spec)) == (0, f"created {name} (source)\n")
    wait_for(lambda: task_states(module_worker.url, name) == ["RUNNING"], 60, "RUNNING")
    code, out = cli(module_worker, "list")
    assert code == 0 and name in out and "RUNNING" in out
    assert cli(module_worker, "restart", name, "--include-tasks")[1].startswith(f"restarting {name}: connector, task 0")
    assert cli(module_worker, "stop", name) == (0, f"stopped {name}\n")
    alter = tmp_path / "o.json"
    alter.write_text(json.dumps({"offsets": [{"partition": {"task": 0}, "offset": {"position": 42}}]}))
    code, out = cli(module_worker, "offsets", name, "--alter", str(alter))
    assert code == 0 and "altered successfully" in out
    code, out = cli(module_worker, "offsets", name)
    assert code == 0 and '{"position": 42}' in out
    assert cli(module_worker, "resume", name) == (0, f"resuming {name}\n")
    assert cli(module_worker, "delete", name) == (0, f"deleted {name}\n")


def test_cli_errors_say_what_went_wrong(module_worker: RunningWorker) -> None:
    code, out = cli(module_worker, "status", "nope")
    assert code == 1 and "404" in out and "No status found for connector nope" in out
    result = runner.invoke(app, ["connectors", "list", "--url", "http://127.0.0.1:1"])
    assert result.exit_code == 2 and "cannot reach the worker" in result.output


def test_help_teaches() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("worker", "demo", "kafka", "connectors"):
        assert command in result.output
    sub = runner.invoke(app, ["connectors", "--help"])
    assert sub.exit_code == 0 and "offsets" in sub.output
