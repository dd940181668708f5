"""The one place the operator's typed values become the API's JSON (what Strimzi's Jackson annotations do).

A dataclass renders to an object whose keys are its fields in camel case (`observed_generation` ->
`observedGeneration`); a field whose JSON name differs says so with `json_name` (ConnectorPlugin's
`class`). Absent fields (None) are left out, as Strimzi's `@JsonInclude(NON_NULL)`; fields declared with
`non_empty` also leave out an empty list (`NON_EMPTY`). Datetimes are Strimzi's timestamps, sequences lists,
mappings objects. Used by `model.status`, `model.conditions` and `model.autorestart`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TypeAlias

from sparklink.operator.clock import timestamp

Json: TypeAlias = "str | int | float | bool | list[Json] | dict[str, Json] | None"
JsonObject: TypeAlias = "dict[str, Json]"

_JSON_NAME = "json_name"
_NON_EMPTY = "non_empty"


def json_name(name: str) -> dict[str, object]:
    """Field metadata: the JSON key when it is not the field's name in camel case."""
    return {_JSON_NAME: name}


def non_empty() -> dict[str, object]:
    """Field metadata: leave the field out when it is empty, not only when it is None (Jackson NON_EMPTY)."""
    return {_NON_EMPTY: True}


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def to_json(value: object) -> Json:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return render(value)
    if isinstance(value, datetime):
        return timestamp(value)
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [to_json(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"{type(value).__name__} has no JSON form")


def render(value: object) -> JsonObject:
    """A dataclass instance as a JSON object, fields in their declared order."""
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        raise TypeError(f"{type(value).__name__} is not a dataclass instance")
    out: JsonObject = {}
    for field in dataclasses.fields(value):
        item = getattr(value, field.name)
        if item is None or (field.metadata.get(_NON_EMPTY) and not item):
            continue
        out[field.metadata.get(_JSON_NAME, camel(field.name))] = to_json(item)
    return out
