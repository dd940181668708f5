"""Config declarations: each key once, with its type, default, doc and validator.

The same declaration parses a connector's string config at start-up and feeds the REST endpoints
`/connector-plugins/{p}/config` and `/connector-plugins/{p}/config/validate`, as Kafka Connect's ConfigDef does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import javaproperties

ConfigType = Literal["STRING", "INT", "LONG", "BOOLEAN", "LIST", "CLASS", "PASSWORD", "DOUBLE", "SHORT"]
Importance = Literal["HIGH", "MEDIUM", "LOW"]
NO_DEFAULT = object()

Validator = Callable[[str, Any], str | None]
"""Takes (name, parsed value); returns an error reason or None."""


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: ConfigType
    documentation: str
    default: Any = NO_DEFAULT
    importance: Importance = "MEDIUM"
    validator: Validator | None = None
    group: str | None = None
    order: int = -1
    width: str = "NONE"
    display_name: str | None = None
    recommended: tuple[str, ...] = ()
    dependents: tuple[str, ...] = ()

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT

    def default_string(self) -> str | None:
        if self.default is NO_DEFAULT or self.default is None:
            return None
        if isinstance(self.default, bool):
            return str(self.default).lower()
        if isinstance(self.default, list | tuple):
            return ",".join(str(v) for v in self.default)
        return str(self.default)


@dataclass
class ConfigDef:
    keys: dict[str, ConfigKey] = field(default_factory=dict)

    def define(self, key: ConfigKey) -> ConfigDef:
        self.keys[key.name] = key
        return self

    def key(
        self,
        name: str,
        type_: ConfigType,
        documentation: str,
        default: Any = NO_DEFAULT,
        *,
        importance: Importance = "MEDIUM",
        validator: Validator | None = None,
        choices: Sequence[str] = (),
        group: str | None = None,
        display_name: str | None = None,
    ) -> ConfigDef:
        """Declare one key in one call, as Connect's `ConfigDef.define(name, type, default, ...)` does.

        `choices` states a closed set of values once: it becomes both the validator (Kafka's ValidString) and
        the recommended values that `/config/validate` lists.
        """
        if choices:
            validator, recommended = one_of(choices), tuple(choices)
        else:
            recommended = ()
        return self.define(
            ConfigKey(
                name,
                type_,
                documentation,
                default,
                importance,
                validator,
                group=group,
                display_name=display_name,
                recommended=recommended,
            )
        )

    def merged(self, other: ConfigDef) -> ConfigDef:
        """This def's keys first, then `other`'s keys not overridden here."""
        out = ConfigDef(dict(self.keys))
        for name, key in other.keys.items():
            out.keys.setdefault(name, key)
        return out

    def validate(self, raw: Mapping[str, str | None]) -> dict[str, list[str]]:
        """Errors per key (every declared key appears, possibly with no errors)."""
        errors: dict[str, list[str]] = {}
        for name, key in self.keys.items():
            errors[name] = []
            try:
                value = parse_value(key, raw.get(name))
            except ValueError as exc:
                errors[name].append(str(exc))
                # Like Kafka's ConfigDef, a value that did not parse is then validated as null:
                # range validators add "Value must be non-null" (tasks.max=abc gives two errors).
                if getattr(key.validator, "rejects_null", False):
                    errors[name].append(invalid(name, None, NON_NULL))
                continue
            if key.validator is not None and value is not None:
                reason = key.validator(name, value)
                if reason:
                    errors[name].append(invalid(name, quoted(key, raw.get(name)), reason))
        return errors

    def parse(self, raw: Mapping[str, str | None]) -> dict[str, Any]:
        """Parsed values of every declared key; raises ValueError on the first invalid one."""
        out: dict[str, Any] = {}
        for name, key in self.keys.items():
            value = parse_value(key, raw.get(name))
            if key.validator is not None and value is not None:
                reason = key.validator(name, value)
                if reason:
                    raise ValueError(invalid(name, quoted(key, raw.get(name)), reason))
            out[name] = value
        return out


class Message(str):
    """A validator's reason that is the whole error text (Kafka's one-argument ConfigException)."""


def invalid(name: str, value: Any, reason: str) -> str:
    """Kafka's ConfigException text, which clients and tests match on."""
    if isinstance(reason, Message):
        return str(reason)
    return f"Invalid value {'null' if value is None else value} for configuration {name}: {reason}"


NON_NULL = "Value must be non-null"


def java_list(values: Iterable[Any]) -> str:
    """A list as Java prints it in ConfigException texts: [a, b]."""
    return "[" + ", ".join(str(v) for v in values) + "]"


def parse_value(key: ConfigKey, raw: str | None) -> Any:
    if raw is None:
        if key.required:
            raise ValueError(f'Missing required configuration "{key.name}" which has no default value.')
        return key.default
    text = raw.strip() if key.type != "PASSWORD" else raw
    try:
        match key.type:
            case "INT" | "LONG" | "SHORT":
                return int(text)
            case "DOUBLE":
                return float(text)
            case "BOOLEAN":
                if text.lower() not in ("true", "false"):
                    raise ValueError("Expected value to be either true or false")
                return text.lower() == "true"
            case "LIST":
                return [part.strip() for part in text.split(",") if part.strip()]
            case _:
                return text
    except ValueError as exc:
        reason = str(exc) if "Expected" in str(exc) else f"Not a number of type {key.type}"
        raise ValueError(invalid(key.name, quoted(key, raw), reason)) from None


def quoted(key: ConfigKey, raw: str | None) -> str | None:
    """A value as an error message may quote it: a PASSWORD value never (Kafka's Password prints `[hidden]`)."""
    return "[hidden]" if key.type == "PASSWORD" and raw is not None else raw


class at_least:  # lower case: reads as the validator it builds, like one_of
    """Kafka's Range.atLeast: also rejects a value that did not parse (validated as null)."""

    rejects_null = True

    def __init__(self, minimum: float) -> None:
        self.minimum = minimum

    def __call__(self, _name: str, value: Any) -> str | None:
        return None if value >= self.minimum else f"Value must be at least {self.minimum:g}"


def one_of(choices: Iterable[str]) -> Validator:
    allowed = list(choices)

    def check(_name: str, value: Any) -> str | None:
        return None if value in allowed else f"String must be one of: {', '.join(allowed)}"

    return check


def non_empty(_name: str, value: Any) -> str | None:
    return None if str(value).strip() else "String must be non-empty"


def connector_name(_name: str, value: Any) -> str | None:
    """Kafka's nonEmptyStringWithoutControlChars, which Connect applies to connector names."""
    text = str(value)
    if not text:
        return "String may not be empty"
    found = [str(ord(c)) for c in text if is_iso_control(c)]
    if found:
        return f"String may not contain control sequences but had the following ASCII chars: {', '.join(found)}"
    return None


def is_iso_control(char: str) -> bool:
    """Java's Character.isISOControl: U+0000-U+001F and U+007F-U+009F (so NEL, \\x85, too)."""
    return ord(char) <= 0x1F or 0x7F <= ord(char) <= 0x9F


def read_properties(path: Path) -> dict[str, str]:
    """A Java properties file, read as java.util.Properties reads it: `=`, `:` or whitespace separators,
    `#`/`!` comments, backslash escapes (`username\\="x"` in a JAAS line written by Java or javaproperties),
    line continuations."""
    with open(path, encoding="utf-8") as source:
        return dict(javaproperties.load(source))
