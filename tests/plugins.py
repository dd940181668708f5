"""Test-only connector plugins (`tests.plugins.CountingConnector`), installed as a distribution on the test
workers' plugin.path (tests/support/python_plugins.py).

They count how often the connector instance and each task start, and can fail the first N connector
starts, so restart tests can see exactly what a restart touched (like Connect's test connectors).

Workers the operator starts run in their own processes, so counting can also cross the process
boundary: with `test.count.file` set, every start appends a line (`connector <name>` or
`task <name> <id>`) to that file. With `test.fail.task=true` a task fails as it starts (FAILED at once,
before any Spark query runs, so a restart fails again within a second: what auto-restart tests need
when the back-off minute is a few seconds). With `test.heal.file` set, a task neither fails so nor
applies datagen's `fail.after.records` once that file exists, so a test can make a failing connector
healthy without changing its config.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from sparklink.api.connector import TaskContext
from sparklink.connectors.datagen import DatagenConnector, DatagenTask


def _record(config: Mapping[str, str], line: str) -> None:
    path = config.get("test.count.file")
    if path:
        # One short append per start: O_APPEND writes of a line are atomic between processes.
        with open(path, "a") as out:
            out.write(line + "\n")


def file_counts(path: str | os.PathLike[str]) -> Counter[str]:
    """The starts recorded in a `test.count.file`, keyed by their line (`connector c`, `task c 0`)."""
    try:
        return Counter(line.strip() for line in Path(path).read_text().splitlines() if line.strip())
    except FileNotFoundError:
        return Counter()


class CountingTask(DatagenTask):
    starts: ClassVar[Counter[tuple[str, int]]] = Counter()

    def stream(self, ctx: TaskContext) -> Any:
        CountingTask.starts[(ctx.connector, ctx.task_id)] += 1
        _record(ctx.config, f"task {ctx.connector} {ctx.task_id}")
        heal = ctx.config.get("test.heal.file")
        if heal and Path(heal).exists():
            ctx = dataclasses.replace(ctx, config={**ctx.config, "fail.after.records": "-1"})
        elif ctx.config.get("test.fail.task") == "true":
            raise RuntimeError(f"task {ctx.connector}-{ctx.task_id} refuses to start (test.fail.task)")
        return super().stream(ctx)


class CountingConnector(DatagenConnector):
    starts: ClassVar[Counter[str]] = Counter()
    task_class = CountingTask

    def start(self, config: Mapping[str, str]) -> None:
        name = config["name"]
        CountingConnector.starts[name] += 1
        _record(config, f"connector {name}")
        if CountingConnector.starts[name] <= int(config.get("test.fail.starts", "0")):
            raise RuntimeError(f"connector {name} refuses to start (test.fail.starts)")
        super().start(config)
