"""The worker's connector plugins: the built-ins, the installed `sparklink.connectors` entry points, and what
plugin.path holds (Python distributions and Java plugins), all found when the worker starts.

Callers: the herder (validation, listings, `/connector-plugins`) and the worker (connector instances and
tasks). A `connector.class` or `task.class` resolves only among these, by class name, simple name or alias
(Connect's aliases): an unknown name is Connect's 400, and no module is imported to find out. Java plugins
need the Spark driver's JVM: the worker assembly passes the Connect host (`java=`) when plugin.path has a
Java location. Every plugin that cannot be used is logged once here, and a REST answer that names it says
why (`resolve`).
"""

from __future__ import annotations

import json
import logging
import os
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparklink.api import config as cfg
from sparklink.api.connector import Connector, Task
from sparklink.api.errors import BadRequestError, ConnectError
from sparklink.worker.plugins import locations
from sparklink.worker.plugins.desc import PluginDesc, PythonPlugin, ValueHint
from sparklink.worker.plugins.java import COMPONENT_TYPES, JavaComponent, JavaPlugin, JavaRuntime
from sparklink.worker.plugins.jvm_host import java_call

if TYPE_CHECKING:
    from sparklink.clients.settings import KafkaClientSettings
    from sparklink.worker.plugins.jvm_host import ConnectHost

__all__ = ["JavaComponent", "JavaPlugin", "JavaRuntime", "PluginDesc", "Plugins", "PythonPlugin", "ValueHint"]

log = logging.getLogger(__name__)


class Plugins:
    def __init__(
        self,
        plugin_path: str = "",
        discovery: str = "hybrid_warn",
        java: ConnectHost | None = None,
        clients: KafkaClientSettings | None = None,
        offsets_topic: str = "",
    ) -> None:
        self._by_name: dict[str, PluginDesc] = {}
        self._descs: list[PluginDesc] = []
        self._components: dict[str, JavaComponent] = {}
        self._problems: dict[str, str] = {}
        self.runtime: JavaRuntime | None = None
        found = locations.scan(plugin_path)
        for entry in found.missing:
            log.error("plugin.path entry %s does not exist; nothing is loaded from it", entry)
        for ep in entry_points(group=locations.ENTRY_POINTS):
            self._load_entry_point(ep, "installed")
        for directory, ep in found.python:
            locations.importable(directory)
            _add_python_path(directory)
            self._load_entry_point(ep, str(directory))
        self._ensure_builtins()
        if found.java:
            if java is None:
                log.error(
                    "plugin.path holds Java plugins (%s) but the Connect host is not available: run "
                    "`bash scripts/bootstrap.sh`; they are not loaded",
                    ", ".join(str(p) for p in found.java),
                )
            else:
                self._load_java(java, plugin_path, discovery, clients, offsets_topic)

    # ------------------------------------------------------------------ loading
    def _load_entry_point(self, ep: EntryPoint, where: str) -> None:
        try:
            cls = ep.load()
        except Exception as exc:
            self._problem(ep.value, f"connector plugin {ep.name} ({ep.value}) from {where} cannot be loaded: {exc}")
            return
        if not (isinstance(cls, type) and issubclass(cls, Connector)):
            self._problem(ep.value, f"entry point {ep.name} ({ep.value}) from {where} is not a Connector class")
            return
        self.register(PythonPlugin(cls, (ep.name,), where))

    def _ensure_builtins(self) -> None:
        # Also registered here so a checkout without installed entry points still has them.
        import importlib

        from sparklink.connectors import BUILTINS

        for path, aliases in BUILTINS.items():
            module, _, attr = path.partition(":")
            if any(a in self._by_name for a in aliases):
                continue
            try:
                self.register(PythonPlugin(getattr(importlib.import_module(module), attr), tuple(aliases)))
            except Exception:
                log.exception("could not load built-in connector %s", path)

    def _load_java(
        self, host: ConnectHost, plugin_path: str, discovery: str, clients: KafkaClientSettings | None, offsets: str
    ) -> None:
        # Connect resolves a relative entry against the worker's working directory; an executor's is another
        # (its Spark work dir), so the host - here and on every executor - is given the absolute paths.
        plugin_path = ",".join(os.path.abspath(entry.strip()) for entry in plugin_path.split(",") if entry.strip())
        calls = host.plugins(plugin_path, discovery)
        self.runtime = runtime = JavaRuntime(host, plugin_path, discovery, clients, offsets, calls)
        scan: dict[str, Any] = json.loads(java_call(calls.describe))
        for problem in scan["problems"]:
            if problem.get("level") == "warning":
                log.warning("plugin.path: %s", problem["message"])
            else:
                self._problem(problem.get("class") or problem.get("location", ""), problem["message"])
        connectors = 0
        for entry in scan["plugins"]:
            name, kind, version = entry["class"], entry["type"], entry["version"]
            if kind in ("source", "sink"):
                # Its own class name is the Java plugin's, even where a built-in answers to it as an alias
                # (Apache's file and MirrorMaker connectors): installing the jar asks for Apache's classes.
                desc = JavaPlugin(runtime, name, kind, version, entry["location"])
                if entry.get("latest", True):
                    self.register(desc)
                    self._by_name[name] = desc
                else:
                    # Another installed version of a class: listed as Connect 4.x lists every version
                    # (KIP-891), while the class runs from its latest one, as Connect's loader picks it.
                    self._descs.append(desc)
                connectors += 1
            elif kind in COMPONENT_TYPES:
                self._components[f"{name}/{kind}"] = JavaComponent(runtime, name, kind, version)
        java_aliases: dict[str, str] = scan["aliases"]
        for alias, name in java_aliases.items():
            known = self._by_name.get(name)
            if isinstance(known, JavaPlugin):
                self._by_name.setdefault(alias, known)
        log.info(
            "plugin.path: %d Java connectors and %d other Java plugins (Connect %s host, scanned in %d ms)",
            connectors,
            len(self._components),
            host.kafka_version,
            scan["scanMillis"],
        )

    def _problem(self, name: str, message: str) -> None:
        """Report an unusable plugin once: in the log now, and in any REST answer that names it."""
        if name not in self._problems:
            self._problems[name] = message
            log.error("%s", message)

    def register(self, desc: PluginDesc) -> None:
        self._descs.append(desc)
        short = desc.class_name.rsplit(".", 1)[-1]
        for name in (desc.class_name, short, short.removesuffix("Connector"), *desc.aliases):
            self._by_name.setdefault(name, desc)

    # ------------------------------------------------------------------ lookups
    def all(self) -> list[PluginDesc]:
        return sorted(self._descs, key=lambda d: (d.type != "sink", d.class_name))

    def components(self) -> list[JavaComponent]:
        """The Java converters, header converters, transformations and predicates of plugin.path."""
        return list(self._components.values())

    def component(self, name: str, kind: str | None = None) -> JavaComponent | None:
        """A Java component by class name (or simple name), of a given type or any."""
        name = name.strip()
        for component in self._components.values():
            if (kind is None or component.kind == kind) and name in (
                component.class_name,
                component.class_name.rsplit(".", 1)[-1],
            ):
                return component
        return None

    def java_lookup(self, kind: str, name: str | None) -> cfg.ConfigDef | None:
        """The ConfigDef of a Java converter, header converter, transformation or predicate of plugin.path
        (validation's JavaLookup)."""
        component = self.component(name, kind) if name else None
        return component.config_def() if component is not None else None

    def find(self, name: str) -> PluginDesc | None:
        return self._by_name.get(name.strip())

    def resolve(self, name: str) -> PluginDesc:
        desc = self.find(name)
        if desc is None:
            problem = self._problems.get(name.strip())
            available = ", ".join(sorted(f"{d.class_name} ({', '.join(d.aliases) or '-'})" for d in self._descs))
            # Connect's answer (its scanner left the class out); then why, when the class was found.
            found = f" ({name} was found but cannot be used: {problem})" if problem is not None else ""
            raise BadRequestError(
                f"Failed to find any class that implements Connector and which name matches {name}, "
                f"available connectors are: {available}{found}"
            )
        return desc

    def problem(self, name: str) -> str | None:
        """Why a plugin class of this name cannot be used, if it was found and refused."""
        return self._problems.get(name.strip())

    def new_task(self, task_class: str, connector_class: str | None = None) -> Task:
        """A task of the class a task config names (`task.class`): only a task class of a known connector,
        the config's own connector first (a Java one may name any class its loader sees)."""
        descs = list(self._descs)
        own = self.find(connector_class) if connector_class else None
        if own is not None:
            descs = [own, *(d for d in descs if d is not own and not isinstance(d, JavaPlugin))]
        else:
            descs = [d for d in descs if not isinstance(d, JavaPlugin)]
        for desc in descs:
            task = desc.new_task(task_class)
            if task is not None:
                return task
        raise ConnectError(
            f"Task class {task_class} (from the task config's task.class) is not a task of a known plugin"
        )

    def task_class_name(self, connector: Connector, connector_class: str) -> str:
        return self.resolve(connector_class).task_class_name(connector)

    def java_tasks(self) -> bool:
        return self.runtime is not None


def _add_python_path(directory: Path) -> None:
    """Spark's Python workers import from PYTHONPATH, which they inherit: a distribution's modules too."""
    current = os.environ.get("PYTHONPATH", "")
    parts = current.split(os.pathsep) if current else []
    if str(directory) not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([*parts, str(directory)])
