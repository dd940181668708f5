"""Test-only connector plugins, loaded by dotted path (`tests.plugins.CountingConnector`).

They count how often the connector instance and each task start, and can fail the first N connector
starts, so restart tests can see exactly what a restart touched (like Connect's test connectors).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, ClassVar

from sparklink.api.connector import TaskContext
from sparklink.connectors.datagen import DatagenConnector, DatagenTask


class CountingTask(DatagenTask):
    starts: ClassVar[Counter[tuple[str, int]]] = Counter()

    def stream(self, ctx: TaskContext) -> Any:
        CountingTask.starts[(ctx.connector, ctx.task_id)] += 1
        return super().stream(ctx)


class CountingConnector(DatagenConnector):
    starts: ClassVar[Counter[str]] = Counter()
    task_class = CountingTask

    def start(self, config: Mapping[str, str]) -> None:
        name = config["name"]
        CountingConnector.starts[name] += 1
        if CountingConnector.starts[name] <= int(config.get("test.fail.starts", "0")):
            raise RuntimeError(f"connector {name} refuses to start (test.fail.starts)")
        super().start(config)
