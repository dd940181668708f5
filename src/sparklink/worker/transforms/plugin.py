"""What converters, transformations and predicates have in common: a Connect class name, a ConfigDef,
and a constructor that parses and checks a config. Caller: every plugin module and the catalog.

A plugin instance is configured once when a task's pipeline is compiled; it holds only parsed
settings, never records.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from sparklink.api import config as cfg

PluginType = Literal["converter", "header_converter", "transformation", "predicate"]


class PluginConfigError(ValueError):
    """A config that passes the ConfigDef but not the plugin's own checks (Connect's ConfigException)."""


class Plugin:
    class_name: ClassVar[str]
    """Connect's fully qualified class name (e.g. org.apache.kafka.connect.transforms.InsertField$Value)."""
    doc: ClassVar[str] = ""
    CONFIG: ClassVar[cfg.ConfigDef] = cfg.ConfigDef()

    def __init__(self, props: Mapping[str, str]) -> None:
        self.props = {k: v for k, v in props.items() if v is not None}
        self.config: dict[str, Any] = self.config_def().parse(self.props)
        self.configure()

    @classmethod
    def config_def(cls) -> cfg.ConfigDef:
        return cls.CONFIG

    @classmethod
    def version(cls) -> str:
        from sparklink import __version__

        return __version__

    def configure(self) -> None:
        """Checks across keys; raise PluginConfigError with Connect's message."""


def key(
    name: str,
    type_: cfg.ConfigType,
    doc: str,
    default: Any = cfg.NO_DEFAULT,
    importance: cfg.Importance = "MEDIUM",
    validator: cfg.Validator | None = None,
) -> cfg.ConfigKey:
    return cfg.ConfigKey(name, type_, doc, default=default, importance=importance, validator=validator)


def config(*keys: cfg.ConfigKey) -> cfg.ConfigDef:
    out = cfg.ConfigDef()
    for k in keys:
        out.define(k)
    return out


def non_empty_list(name: str, value: Any) -> str | None:
    return None if value else cfg.Message(f"Invalid value {cfg.java_list(value)} for configuration {name}: Empty list")


def valid_regex(_name: str, value: Any) -> str | None:
    import re

    try:
        re.compile(java_regex(str(value)))
    except re.error as exc:
        return f"Invalid regex: {exc}"
    return None


def java_regex(pattern: str) -> str:
    """A Java regex as Python's `re` reads it, for validation only (Spark evaluates the Java one)."""
    return pattern.replace("(?<", "(?P<").replace("(?P<=", "(?<=").replace("(?P<!", "(?<!")


REPLACE_NULL_WITH_DEFAULT = key(
    "replace.null.with.default",
    "BOOLEAN",
    "Accepted for compatibility; sparklink passes null field values through as they are.",
    default=True,
)
