"""What the worker knows of a connector plugin, whichever language it is written in. Callers: the registry
(plugins/__init__.py), the herder's validation and listings, and the worker that runs connectors and tasks.

A `PluginDesc` names a connector class and answers for it: its type and versions, its ConfigDef, its own
validation, a new connector instance, and the tasks that instance asks for. `PythonPlugin` wraps a
Python class (built-ins, installed entry points, distributions on plugin.path); `java.JavaPlugin` a Java
class of plugin.path, which runs in the Spark driver's JVM.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass

from sparklink.api import config as cfg
from sparklink.api.connector import Connector, ConnectorType, Task
from sparklink.api.errors import ConnectError
from sparklink.api.files import FileAccess


class JavaError(ConnectError):
    """What a Java plugin (or the Connect host) threw: the first line of its trace as the message, the whole
    trace kept (a FAILED status shows it)."""

    def __init__(self, message: str, trace: str) -> None:
        super().__init__(message)
        self.trace = trace


@dataclass(frozen=True)
class ValueHint:
    """What a plugin's own validation says of one of its keys besides errors (Connect's ConfigValue)."""

    value: str | None
    recommended: tuple[str, ...]
    visible: bool


class PluginDesc(ABC):
    class_name: str
    """The fully qualified class name (Python: module.qualname; Java: the class's binary name)."""
    aliases: tuple[str, ...]
    location: str
    """Where it was found: "builtin", an entry point's distribution, or a plugin.path location."""
    in_jvm: bool = False
    """Its connector and tasks run in the JVM (their converters and transforms too)."""

    @property
    @abstractmethod
    def type(self) -> ConnectorType: ...

    @abstractmethod
    def version(self) -> str: ...

    @abstractmethod
    def task_version(self) -> str: ...

    @abstractmethod
    def config_def(self) -> cfg.ConfigDef:
        """The plugin's own keys (the herder adds the connector-level ones)."""

    @abstractmethod
    def validate(self, config: Mapping[str, str], files: FileAccess | None = None) -> dict[str, list[str]]:
        """Errors per key of the plugin's own validation (its ConfigDef and its multi-key checks), with the
        worker's file rules (`files`) set on it where it reads them."""

    def value_hints(self, config: Mapping[str, str]) -> Mapping[str, ValueHint]:
        """Recommended values and visibility per key, where the plugin's validation computes them."""
        return {}

    def exactly_once_support(self, config: Mapping[str, str]) -> str | None:
        """A source connector's own answer to whether it can run exactly once with `config` (Connect's
        SourceConnector#exactlyOnceSupport): SUPPORTED, UNSUPPORTED, or None when it cannot say."""
        return None

    @abstractmethod
    def new_connector(self) -> Connector:
        """A new, unstarted connector instance."""

    @abstractmethod
    def task_class_name(self, connector: Connector) -> str:
        """The `task.class` a started instance's task configs carry."""

    @abstractmethod
    def new_task(self, task_class: str) -> Task | None:
        """A new task of `task_class` if it is this plugin's task class, else None."""


class PythonPlugin(PluginDesc):
    """A connector class written in Python against sparklink.api."""

    def __init__(self, cls: type[Connector], aliases: tuple[str, ...] = (), location: str = "builtin") -> None:
        self.cls = cls
        self.aliases = aliases
        self.location = location
        self.class_name = qualified(cls)

    @property
    def type(self) -> ConnectorType:
        return self.cls.type

    def version(self) -> str:
        return self.cls().version()

    def task_version(self) -> str:
        return self.cls.task_class().version()

    def config_def(self) -> cfg.ConfigDef:
        return self.cls.config_def()

    def validate(self, config: Mapping[str, str], files: FileAccess | None = None) -> dict[str, list[str]]:
        plugin = self.cls()
        if files is not None:
            plugin.files = files
        return plugin.validate(config)

    def new_connector(self) -> Connector:
        return self.cls()

    def task_class_name(self, connector: Connector) -> str:
        return qualified(type(connector).task_class)

    def new_task(self, task_class: str) -> Task | None:
        return self.cls.task_class() if task_class.strip() == qualified(self.cls.task_class) else None


def qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
