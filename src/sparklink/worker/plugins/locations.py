"""The locations of plugin.path, as Connect reads the setting, and which of them hold Python or Java
plugins. Caller: the registry (plugins/__init__.py).

`plugin.path` is a comma-separated list; each entry is a directory whose subdirectories (and archives)
are plugin locations, or an uber jar. A location with `*.dist-info` distributions holds Python plugins,
found through their `sparklink.connectors` entry points (importlib.metadata, nothing imported to list
them); one with jars, zips or class files holds Java plugins, scanned by the Connect host. Nothing
outside plugin.path, the built-ins and the installed entry points is ever loaded: a `connector.class`
is a name to look up, never a module to import.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, distributions
from pathlib import Path

log = logging.getLogger(__name__)

ENTRY_POINTS = "sparklink.connectors"
JAVA_SUFFIXES = (".jar", ".zip", ".class")


@dataclass
class Locations:
    python: list[tuple[Path, EntryPoint]] = field(default_factory=list)
    """Each connector entry point of a distribution on plugin.path, with the directory holding it."""
    java: list[Path] = field(default_factory=list)
    """The locations with Java archives or classes (the Connect host scans them)."""
    missing: list[str] = field(default_factory=list)
    """Entries of plugin.path that do not exist."""


def entries(plugin_path: str) -> list[str]:
    return [part.strip() for part in plugin_path.split(",") if part.strip()]


def scan(plugin_path: str) -> Locations:
    out = Locations()
    for entry in entries(plugin_path):
        path = Path(entry).expanduser().absolute()
        if not path.exists():
            out.missing.append(entry)
            continue
        if path.is_file():
            if path.suffix.lower() in (".jar", ".zip"):
                out.java.append(path)
            continue
        for location in [
            path,
            *sorted(p for p in path.iterdir() if p.is_dir() or p.suffix.lower() in (".jar", ".zip")),
        ]:
            if location.is_dir() and any(location.glob("*.dist-info")):
                out.python += [(location, ep) for ep in _entry_points(location)]
            elif location != path and _holds_java(location):
                out.java.append(location)
    return out


def _entry_points(directory: Path) -> list[EntryPoint]:
    found = []
    for dist in distributions(path=[str(directory)]):
        found += [ep for ep in dist.entry_points if ep.group == ENTRY_POINTS]
    return found


def _holds_java(location: Path) -> bool:
    if location.is_file():
        return True
    for _root, _dirs, files in os.walk(location, followlinks=True):
        if any(f.lower().endswith(JAVA_SUFFIXES) for f in files):
            return True
    return False


def importable(directory: Path) -> None:
    """Put a Python plugin location on the import path (its distribution's modules load from there)."""
    text = str(directory)
    if text not in sys.path:
        sys.path.append(text)
