"""The built-in converters, header converters, transformations and predicates, by Connect class name.
Caller: the pipeline compiler, config validation and `/connector-plugins?connectorsOnly=false`.

A plugin is found by its fully qualified Connect name (`org.apache.kafka.connect.transforms.Cast$Value`)
or by its simple name (`Cast$Value`, `JsonConverter`); sparklink's SQL transform is `sql`.
"""

from __future__ import annotations

from typing import TypeVar

from sparklink.worker.transforms.converters import CONVERTERS, HEADER_CONVERTERS, Converter
from sparklink.worker.transforms.plugin import Plugin, PluginType
from sparklink.worker.transforms.predicates import ALL as PREDICATE_CLASSES
from sparklink.worker.transforms.predicates import Predicate
from sparklink.worker.transforms.smt import fields, headers, mask, routing, structure, types
from sparklink.worker.transforms.smt.base import Transformation
from sparklink.worker.transforms.smt.sql import SqlTransform

TRANSFORMATIONS: tuple[type[Transformation], ...] = (
    *fields.ALL,
    *mask.ALL,
    *types.ALL,
    *routing.ALL,
    *headers.ALL,
    *structure.ALL,
    SqlTransform,
)
PREDICATES: tuple[type[Predicate], ...] = PREDICATE_CLASSES

P = TypeVar("P", bound=type[Plugin])


def _find(classes: tuple[P, ...], name: str | None) -> P | None:
    if not name:
        return None
    name = name.strip()
    for cls in classes:
        if name in (cls.class_name, cls.class_name.rsplit(".", 1)[-1]):
            return cls
    return None


def transformation(name: str | None) -> type[Transformation] | None:
    return _find(TRANSFORMATIONS, name)


def predicate(name: str | None) -> type[Predicate] | None:
    return _find(PREDICATES, name)


def converter(name: str | None) -> type[Converter] | None:
    return _find(CONVERTERS, name)


def header_converter(name: str | None) -> type[Converter] | None:
    return _find(HEADER_CONVERTERS, name)


def listing() -> list[tuple[type[Plugin], PluginType]]:
    """Every plugin with its Connect type, in Connect's order: transformations, predicates, converters,
    header converters."""
    out: list[tuple[type[Plugin], PluginType]] = []
    out += [(t, "transformation") for t in sorted(TRANSFORMATIONS, key=lambda c: c.class_name)]
    out += [(p, "predicate") for p in sorted(PREDICATES, key=lambda c: c.class_name)]
    out += [(c, "converter") for c in sorted(CONVERTERS, key=lambda c: c.class_name)]
    out += [(h, "header_converter") for h in sorted(HEADER_CONVERTERS, key=lambda c: c.class_name)]
    return out


def find_any(name: str) -> type[Plugin] | None:
    """A plugin of any of these types by name (for `/connector-plugins/{plugin}/config`)."""
    for cls, _kind in listing():
        if name.strip() in (cls.class_name, cls.class_name.rsplit(".", 1)[-1]):
            return cls
    return None
