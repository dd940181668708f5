"""Finds connector plugins: the built-ins, then the `sparklink.connectors` entry points.

Callers: the herder (validation, plugin listings) and the worker (instantiating connectors and tasks).

`connector.class` may be a short alias (`datagen`), a class name (`DatagenConnector`) or a dotted path
(`sparklink.connectors.datagen.DatagenConnector`), like Connect's aliases.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from importlib.metadata import entry_points

from sparklink.api.connector import Connector, Task
from sparklink.api.errors import BadRequestError, ConnectError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PluginDesc:
    cls: type[Connector]
    aliases: tuple[str, ...]

    @property
    def class_name(self) -> str:
        return f"{self.cls.__module__}.{self.cls.__qualname__}"

    @property
    def type(self) -> str:
        return self.cls.type

    def version(self) -> str:
        return self.cls().version()

    def task_version(self) -> str:
        return self.cls.task_class().version()


class Plugins:
    def __init__(self) -> None:
        self._by_name: dict[str, PluginDesc] = {}
        self._descs: list[PluginDesc] = []
        for ep in entry_points(group="sparklink.connectors"):
            try:
                self.register(ep.load(), ep.name)
            except Exception:
                log.exception("could not load connector plugin %s (%s)", ep.name, ep.value)
        self._ensure_builtins()

    def _ensure_builtins(self) -> None:
        # Also registered here so a checkout without installed entry points still has them.
        from sparklink.connectors import BUILTINS

        for path, aliases in BUILTINS.items():
            module, _, attr = path.partition(":")
            if any(a in self._by_name for a in aliases):
                continue
            try:
                self.register(getattr(importlib.import_module(module), attr), *aliases)
            except Exception:
                log.exception("could not load built-in connector %s", path)

    def register(self, cls: type[Connector], *aliases: str) -> None:
        desc = PluginDesc(cls, tuple(aliases))
        self._descs.append(desc)
        for name in (desc.class_name, cls.__name__, *aliases):
            self._by_name.setdefault(name, desc)
        short = cls.__name__.removesuffix("Connector")
        self._by_name.setdefault(short, desc)

    def task_class(self, path: str) -> type[Task]:
        """The task class a task config names in `task.class` (module path, then qualified name)."""
        parts = path.split(".")
        for split in range(len(parts) - 1, 0, -1):
            try:
                found: object = importlib.import_module(".".join(parts[:split]))
            except ImportError:
                continue
            for attr in parts[split:]:
                found = getattr(found, attr, None)
            if isinstance(found, type) and issubclass(found, Task):
                return found
            break
        raise ConnectError(f"Task class {path} (from the task config's task.class) is not a loadable Task")

    def all(self) -> list[PluginDesc]:
        return sorted(self._descs, key=lambda d: (d.type != "sink", d.class_name))

    def find(self, name: str) -> PluginDesc | None:
        name = name.strip()
        desc = self._by_name.get(name)
        if desc is not None:
            return desc
        if "." in name:
            module, _, attr = name.rpartition(".")
            try:
                cls = getattr(importlib.import_module(module), attr)
            except (ImportError, AttributeError, ValueError):
                return None
            if isinstance(cls, type) and issubclass(cls, Connector):
                self.register(cls)
                return self._by_name[name]
        return None

    def resolve(self, name: str) -> PluginDesc:
        desc = self.find(name)
        if desc is None:
            available = ", ".join(sorted(f"{d.class_name} ({', '.join(d.aliases) or '-'})" for d in self._descs))
            raise BadRequestError(
                f"Failed to find any class that implements Connector and which name matches {name}, "
                f"available connectors are: {available}"
            )
        return desc
