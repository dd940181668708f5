"""Java plugins of plugin.path: connectors, converters, transforms and predicates that run in the Spark JVMs'
Connect host. Caller: the registry (plugins/__init__.py), which loads them when plugin.path has a Java
location; the Java task runs (sparklink.worker.execution) start the tasks these proxies stand for.

A `JavaPlugin` answers for a Java connector class as a Python plugin does, by asking the host: its
ConfigDef, its own `validate` (errors, recommended values, visibility), its version and task class.
`JavaSourceConnector` / `JavaSinkConnector` are the worker's handles on connector instances that live in
the driver's JVM, and `JavaSourceTask` / `JavaSinkTask` name the task class a run starts in the JVM.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from sparklink.api import config as cfg
from sparklink.api.connector import (
    Connector,
    ConnectorType,
    Offset,
    Partition,
    SinkConnector,
    SinkTask,
    SourceConnector,
    SourceTask,
    Task,
    TaskContext,
)
from sparklink.api.errors import ConnectError
from sparklink.api.files import FileAccess
from sparklink.api.task_config import CONNECTOR_CLASS
from sparklink.clients.settings import KafkaClientSettings
from sparklink.worker.plugins.desc import PluginDesc, ValueHint
from sparklink.worker.plugins.jvm_host import ConnectHost, JavaError, java_call, to_json

log = logging.getLogger(__name__)

COMPONENT_TYPES = ("transformation", "predicate", "converter", "header_converter")


@dataclass(frozen=True)
class JavaRuntime:
    """What Java plugins and their tasks need from the worker: the host, the plugin.path it scanned, the
    offsets topic and the Java Kafka client settings (sparklink.clients)."""

    host: ConnectHost
    plugin_path: str
    discovery: str
    worker_clients: KafkaClientSettings | None
    """The worker's own Kafka client settings (sparklink.clients): what a connector's offsets reader uses."""
    offsets_topic: str
    calls: Any = field(repr=False)
    """The host's PluginCalls for this plugin.path."""

    @property
    def clients(self) -> dict[str, str]:
        """The Java client properties of the clients the host makes for a connector instance."""
        if self.worker_clients is None:
            raise ConnectError("Java connectors need the worker's Kafka client settings; none were given")
        return self.worker_clients.java()


PLUGIN_VERSION = "connector.plugin.version"
"""Which installed version of the connector class runs (KIP-891): this worker runs the latest, and answers a
version that is not installed with Connect's error (PluginSet#versionProblem)."""

# Apache's connect-file connectors and whether each writes (True) or reads the file its `file` key names.
APACHE_FILE_CONNECTORS = {
    "org.apache.kafka.connect.file.FileStreamSourceConnector": False,
    "org.apache.kafka.connect.file.FileStreamSinkConnector": True,
}


class JavaPlugin(PluginDesc):
    """A Java connector class of plugin.path."""

    in_jvm = True

    def __init__(self, runtime: JavaRuntime, class_name: str, kind: ConnectorType, version: str, location: str) -> None:
        self.runtime = runtime
        self.class_name = class_name
        self.aliases = ()
        self.location = location
        self._type: ConnectorType = kind
        self._version = version
        self._info: dict[str, str] | None = None
        self._last: tuple[str, dict[str, Any]] | None = None
        self._lock = threading.Lock()

    @property
    def type(self) -> ConnectorType:
        return self._type

    def version(self) -> str:
        return self._version

    def _connector_info(self) -> dict[str, str]:
        if self._info is None:
            calls = self.runtime.calls
            self._info = json.loads(java_call(lambda: calls.connectorInfo(self.class_name)))
        return self._info

    def task_version(self) -> str:
        return self._connector_info()["taskVersion"]

    def config_def(self) -> cfg.ConfigDef:
        return component_config_def(self.runtime, self.class_name)

    def _validation(self, config: Mapping[str, str]) -> dict[str, Any]:
        """The Java validate answer for a config; the last one is kept, since one validation asks for
        both the errors and the hints."""
        text = to_json(dict(config))
        with self._lock:
            if self._last is not None and self._last[0] == text:
                return self._last[1]
        calls = self.runtime.calls
        answer: dict[str, Any] = json.loads(java_call(lambda: calls.validate(self.class_name, text)))
        with self._lock:
            self._last = (text, answer)
        return answer

    def validate(self, config: Mapping[str, str], files: FileAccess | None = None) -> dict[str, list[str]]:
        version = config.get(PLUGIN_VERSION)
        if version is not None and version.strip():
            calls = self.runtime.calls
            problem = str(java_call(lambda: calls.versionProblem(self.class_name, version)))
            if problem:
                # As Connect's herder: the error on both keys, and no further validation of the connector.
                return {CONNECTOR_CLASS: [problem], PLUGIN_VERSION: [problem]}
        errors = {name: list(value["errors"]) for name, value in self._validation(config).items()}
        reason = None if files is None or errors.get("file") else self.file_rule_error(config, files)
        if reason:
            errors.setdefault("file", []).append(cfg.invalid("file", config["file"], reason))
        return errors

    def file_rule_error(self, config: Mapping[str, str], files: FileAccess) -> str | None:
        """Why the worker's file rules refuse the file `config` names, or None (also for a connector that is
        not one of Apache's file connectors). Apache's file connectors from their jar answer to the rules as
        the built-ins do: the rules live in the worker, and the Java classes open whatever `file` names. Asked
        at validate and again at each task's start (execution/jvm_run.py), since the rules may have narrowed
        since the config was accepted."""
        writes = APACHE_FILE_CONNECTORS.get(self.class_name)
        path = config.get("file")
        if writes is None or not path or not path.strip():
            return None
        return files.write_error(path) if writes else files.read_error(path)

    def value_hints(self, config: Mapping[str, str]) -> Mapping[str, ValueHint]:
        return {
            name: ValueHint(value["value"], tuple(value["recommended_values"]), bool(value["visible"]))
            for name, value in self._validation(config).items()
        }

    def new_connector(self) -> Connector:
        if self._type == "sink":
            return JavaSinkConnector(self)
        return JavaSourceConnector(self)

    def task_class_name(self, connector: Connector) -> str:
        if isinstance(connector, JavaConnectorMixin) and connector.host is not None:
            return str(connector.host.taskClass())
        return self._connector_info()["taskClass"]

    def new_task(self, task_class: str) -> Task | None:
        """A proxy for any task class this connector's loader can see (the JVM loads it at the run's start)."""
        if self._type == "sink":
            return JavaSinkTask(self, task_class.strip())
        return JavaSourceTask(self, task_class.strip())

    def exactly_once_support(self, config: Mapping[str, str]) -> str | None:
        """SourceConnector#exactlyOnceSupport: SUPPORTED, UNSUPPORTED, or None when the connector cannot say."""
        calls = self.runtime.calls
        answer = str(java_call(lambda: calls.exactlyOnceSupport(self.class_name, to_json(dict(config)))))
        return answer or None


@dataclass(frozen=True)
class JavaComponent:
    """A Java converter, header converter, transformation or predicate of plugin.path."""

    runtime: JavaRuntime
    class_name: str
    kind: str
    plugin_version: str

    def version(self) -> str:
        return self.plugin_version

    def config_def(self) -> cfg.ConfigDef:
        return component_config_def(self.runtime, self.class_name)


def component_config_def(runtime: JavaRuntime, class_name: str) -> cfg.ConfigDef:
    """A Java plugin's own ConfigDef, as Connect's REST shows it (defaults as text, `required` when none)."""
    calls = runtime.calls
    keys = json.loads(java_call(lambda: calls.configDef(class_name)))
    out = cfg.ConfigDef()
    for key in keys:
        out.define(
            cfg.ConfigKey(
                key["name"],
                key["type"],
                key["documentation"] or "",
                default=cfg.NO_DEFAULT if key["required"] else key["default_value"],
                importance=key["importance"],
                group=key["group"],
                order=key["order"],
                width=key["width"],
                display_name=key["display_name"],
                dependents=tuple(key["dependents"] or ()),
            )
        )
    return out


class _Events:
    """Java's connector context calling back (requestTaskReconfiguration, raiseError), via Py4J."""

    def __init__(self, connector: JavaConnectorMixin) -> None:
        self._connector = connector

    def accept(self, event: str) -> None:
        context = getattr(self._connector, "context", None)
        if context is None:
            return
        if event == "reconfigure":
            context.request_task_reconfiguration()
        elif event.startswith("error\n"):
            trace = event.removeprefix("error\n")
            context.raise_error(JavaError(trace.splitlines()[0] if trace else "error", trace))

    class Java:
        implements: ClassVar[list[str]] = ["java.util.function.Consumer"]


class JavaConnectorMixin:
    """The worker's handle on a connector instance in the driver's JVM (Connect's WorkerConnector runs it)."""

    plugin: JavaPlugin
    host: Any = None
    config: dict[str, str]

    def version(self) -> str:
        return self.plugin.version()

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)
        runtime = self.plugin.runtime
        runtime.host.callbacks()
        self._events = _Events(self)
        calls, name = runtime.calls, config.get("name", "")
        self.host = java_call(
            lambda: calls.startConnector(
                name,
                self.plugin.class_name,
                to_json(dict(config)),
                runtime.offsets_topic,
                to_json(runtime.clients),
                self._events,
            )
        )

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if self.host is None:
            raise ConnectError(f"connector {self.plugin.class_name} is not started")
        host = self.host
        configs: list[dict[str, str]] = json.loads(java_call(lambda: host.taskConfigs(max_tasks)))
        return configs

    def stop(self) -> None:
        host, self.host = self.host, None
        if host is not None:
            java_call(host.stop)

    def alter_offsets(self, config: Mapping[str, str], offsets: list[tuple[Partition, Offset | None]]) -> bool:
        """KIP-875: the Java connector's alterOffsets; its refusal (an exception) is a 400 with its message,
        UnsupportedOperationException the caller's "doesn't support external modification"."""
        if self.plugin.type == "sink":
            entries: list[dict[str, Any]] = [
                {"topic": p["kafka_topic"], "partition": int(p["kafka_partition"]), "offset": _sink_offset(o)}
                for p, o in offsets
            ]
        else:
            entries = [{"partition": p, "offset": o} for p, o in offsets]
        calls = self.plugin.runtime.calls
        try:
            answer = java_call(
                lambda: calls.alterOffsets(self.plugin.class_name, to_json(dict(config)), to_json(entries))
            )
        except JavaError as exc:
            if exc.trace.startswith("java.lang.UnsupportedOperationException"):
                raise NotImplementedError(str(exc)) from None
            raise ValueError(exc.trace.splitlines()[0].split(": ", 1)[-1]) from None
        return str(answer) == "true"


def _sink_offset(offset: Offset | None) -> int | None:
    return None if offset is None else int(offset["kafka_offset"])


class JavaSourceConnector(JavaConnectorMixin, SourceConnector):
    def __init__(self, plugin: JavaPlugin) -> None:
        self.plugin = plugin

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return JavaConnectorMixin.task_configs(self, max_tasks)


class JavaSinkConnector(JavaConnectorMixin, SinkConnector):
    def __init__(self, plugin: JavaPlugin) -> None:
        self.plugin = plugin

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return JavaConnectorMixin.task_configs(self, max_tasks)


class JavaTask:
    """A task whose class lives in the JVM: a run hands its configs to the Connect host, which loads
    `java_class` with its connector's class loader."""

    def __init__(self, plugin: JavaPlugin, java_class: str) -> None:
        self.plugin = plugin
        self.java_class = java_class

    def version(self) -> str:
        return self.plugin.task_version()

    def fresh(self) -> Self:
        return type(self)(self.plugin, self.java_class)


class JavaSourceTask(JavaTask, SourceTask):
    """A Java SourceTask: it runs as a long-running Spark task (execution/jvm_source_run.py)."""

    def stream(self, ctx: TaskContext) -> Any:
        raise ConnectError(f"{self.java_class} runs in the JVM, not as a Spark stream")

    def batch_offsets(self, batch: Any) -> list[tuple[Partition, Offset]]:
        raise ConnectError(f"{self.java_class} stores its own offsets")


class JavaSinkTask(JavaTask, SinkTask):
    """A Java SinkTask: it runs on the driver, fed by Spark's Kafka source (execution/jvm_sink_run.py)."""

    reads_batch_once = True

    def write_batch(self, batch: Any, batch_id: int, ctx: TaskContext) -> None:
        raise ConnectError(f"{self.java_class} is given its records in the JVM")
