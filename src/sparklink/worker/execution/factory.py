"""Builds the run of a task: its pipeline, scratch checkpoint and context, and which kind of run it is.

The registry (tasks.py) asks for a run at every start and restart; what kind follows from the task
alone: a Java task of plugin.path as a JvmSourceRun or JvmSinkRun (its converters and transforms run
in the JVM), a sink as a SinkRun, a source Spark's Kafka sink can write as it is (`DirectSource`:
converters only, or a chain that keeps every record and whose topics are known up front) as a
DirectRun, any other source as a SourceRun.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, TypedDict

from sparklink.api import config as cfg
from sparklink.api.connector import SinkTask, SourceTask, TaskContext
from sparklink.api.direct import DirectSource
from sparklink.api.task_config import TaskSettings, sink_group
from sparklink.worker import connector_config as connector_keys
from sparklink.worker.execution.direct_run import DirectRun, routed_topics
from sparklink.worker.execution.jvm_run import J, JavaTaskSetup
from sparklink.worker.execution.jvm_sink_run import JvmSinkRun
from sparklink.worker.execution.jvm_source_run import JvmSourceRun
from sparklink.worker.execution.outages import Outage
from sparklink.worker.execution.run import TaskRun, TaskStart, converts_only
from sparklink.worker.execution.running import safe_name
from sparklink.worker.execution.services import RunServices
from sparklink.worker.execution.sink_run import SinkRun
from sparklink.worker.execution.source_run import SourceRun
from sparklink.worker.plugins.java import JavaSinkTask, JavaSourceTask
from sparklink.worker.transforms.errors import ErrorPolicy
from sparklink.worker.transforms.pipeline import compile_pipeline


class RunFactory:
    def __init__(self, services: RunServices, converter_defaults: Mapping[str, str] | None = None) -> None:
        self.services = services
        # The worker's key/value/header converter settings, used where a connector sets none.
        self.converter_defaults = dict(converter_defaults or {})

    def build(self, connector: str, start: TaskStart, retries: int = 0, outage: Outage | None = None) -> TaskRun:
        """A new run of the task, not started; raises if its pipeline cannot be built. `retries` and
        `outage` say what automatic restarts came before it (tasks.py).

        Converters, transforms and error handling come from the connector's config (as in Connect),
        else from the task config."""
        services, task, task_id = self.services, start.task, start.task_id
        settings = TaskSettings.parse(start.config)
        side: Literal["source", "sink"] = "source" if isinstance(task, SourceTask) else "sink"
        config = dict(start.connector_config or start.config)
        services.scratch.mkdir(parents=True, exist_ok=True)
        checkpoint = Path(tempfile.mkdtemp(prefix=f"{safe_name(connector)}-{task_id}-", dir=services.scratch))
        ctx = TaskContext(
            connector,
            task_id,
            dict(start.config),
            services.spark,
            checkpoint=str(checkpoint),
            files=services.files,
            held=services.held,
        )
        state = (connector, task_id, task, ctx, settings, start.events, checkpoint)
        args = RunArgs(services=services, connector_config=start.connector_config, retries=retries, outage=outage)
        if isinstance(task, JavaSourceTask):
            return JvmSourceRun(*state, **args, setup=self._java_setup(task, config, side))
        if isinstance(task, JavaSinkTask):
            group = sink_group(connector, ctx.config)
            return JvmSinkRun(*state, **args, setup=self._java_setup(task, config, side), group=group)
        value_as_text = isinstance(task, SinkTask) and task.value_as_text
        pipeline = compile_pipeline(config, self.converter_defaults, side, connector, task_id, value_as_text)
        if isinstance(task, SinkTask):
            group = sink_group(connector, ctx.config)
            return SinkRun(*state, **args, pipeline=pipeline, sink=task, group=group)
        if not isinstance(task, SourceTask):
            raise TypeError(f"{type(task).__name__} is neither a SourceTask nor a SinkTask")
        ctx.resume = services.offsets.get(connector)
        if isinstance(task, DirectSource):
            plain = converts_only(pipeline)
            routed = (
                None
                if plain or not task.transforms_in_query()
                else routed_topics(pipeline, task.topics(ctx), services.spark)
            )
            if plain or routed is not None:
                ctx.direct = True
                return DirectRun(*state, **args, pipeline=pipeline, source=task, direct=task, routed=routed)
        return SourceRun(*state, **args, pipeline=pipeline, source=task)

    def _java_setup(self, task: J, config: Mapping[str, str], side: Literal["source", "sink"]) -> JavaTaskSetup[J]:
        return JavaTaskSetup(task, self.converter_defaults, error_policy(config, side))


class RunArgs(TypedDict):
    """What every kind of run is built with besides its task's state."""

    services: RunServices
    connector_config: Mapping[str, str] | None
    retries: int
    outage: Outage | None


def error_policy(config: Mapping[str, str], side: Literal["source", "sink"]) -> ErrorPolicy:
    """A Java task's error handling (its converters and transforms run in the JVM, which applies it to
    records): what the worker needs of it, the retry of a task through a Kafka outage."""
    keys = connector_keys.definition(side).keys
    errors_only = cfg.ConfigDef({name: key for name, key in keys.items() if name.startswith("errors.")})
    return ErrorPolicy.from_config(errors_only.parse(config))
