"""Connect schemas in JsonConverter's JSON form, built in Python and edited as VARIANT expressions.

Caller: converters, spark_types (a source's Spark types become a Connect schema), SMTs (InsertField adds a field to
a struct schema, Cast changes a field type, ...). A schema is a JSON object such as
`{"type":"struct","fields":[{"type":"int64","optional":true,"field":"id"}],"optional":false}`;
`field` names a struct field inside `fields`. The VARIANT helpers work per record, because a record
consumed with `schemas.enable=true` carries its own schema.
"""

from __future__ import annotations

from typing import Any

from sparklink.worker.transforms import exprs as x

TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"
DATE = "org.apache.kafka.connect.data.Date"
TIME = "org.apache.kafka.connect.data.Time"

PRIMITIVES = {
    "int8": "tinyint",
    "int16": "smallint",
    "int32": "int",
    "int64": "bigint",
    "float32": "float",
    "float64": "double",
    "boolean": "boolean",
    "string": "string",
}
"""Connect's Cast target types and the Spark type that holds each."""

JSON_TYPE_NAMES = {"float32": "float", "float64": "double"}
"""JsonConverter writes FLOAT32/FLOAT64 as "float"/"double" in schemas; the others keep their names."""


def primitive(connect_type: str, optional: bool = True) -> dict[str, Any]:
    return {"type": JSON_TYPE_NAMES.get(connect_type, connect_type), "optional": optional}


def timestamp(optional: bool = True) -> dict[str, Any]:
    return {"type": "int64", "optional": optional, "name": TIMESTAMP, "version": 1}


def logical(name: str, optional: bool = True) -> dict[str, Any]:
    """Connect's Date, Time and Timestamp logical types (int32 days, int32 ms of day, int64 ms)."""
    if name == TIMESTAMP:
        return timestamp(optional)
    return {"type": "int32", "optional": optional, "name": name, "version": 1}


# ---------------------------------------------------------------- per-record schema edits (VARIANT)


def type_of(schema: str) -> str:
    return f"try_variant_get({schema}, '$.type', 'string')"


def name_of(schema: str) -> str:
    return f"try_variant_get({schema}, '$.name', 'string')"


def fields(schema: str) -> str:
    """The `fields` array of a struct schema (array<variant>); NULL for other schemas."""
    return f"try_variant_get({schema}, '$.fields', 'array<variant>')"


def field_name(field: str) -> str:
    return f"try_variant_get({field}, '$.field', 'string')"


def with_key(schema: str, key: str, value: str) -> str:
    """The schema object with `key` set (VARIANT value)."""
    return x.object_put(schema, key, value)


def without_key(schema: str, key: str) -> str:
    return x.object_select(schema, [key], [], {})


def with_fields(schema: str, new_fields: str) -> str:
    return with_key(schema, "fields", f"to_variant_object({new_fields})")


def field(schema: str, name: str) -> str:
    """The schema of struct field `name`, without its `field` key; NULL if absent."""
    return field_named(schema, x.text(name))


def field_at(schema: str, path: list[str]) -> str:
    """The schema of the field at a path of struct field names; NULL where a step finds none."""
    for name in path:
        schema = field(schema, name)
    return schema


def field_named(schema: str, name: str) -> str:
    """The schema of the struct field named by SQL expression `name` (a lambda variable, say); NULL if absent."""
    f = x.fresh("f")
    found = f"try_element_at(filter({fields(schema)}, {f} -> {field_name(f)} = {name}), 1)"
    return x.when(f"{found} IS NOT NULL", without_key(found, "field"))


def has_field(schema: str, name: str) -> str:
    f = x.fresh("f")
    return f"coalesce(exists({fields(schema)}, {f} -> {field_name(f)} = {x.text(name)}), false)"


def named(schema: str, name: str) -> str:
    """A field entry: `schema` with its `field` name set (`name` is a SQL string expression)."""
    return with_key(schema, "field", x.to_variant(name))


def is_optional(schema: str) -> str:
    return f"coalesce(try_variant_get({schema}, '$.optional', 'boolean'), false)"


def optional(schema: str, flag: str) -> str:
    return with_key(schema, "optional", x.to_variant(flag))


def struct(new_fields: str) -> str:
    """A non-optional struct schema with these field entries (array<variant>)."""
    return (
        f"to_variant_object(map('type', {x.variant_of('struct')}, 'fields', to_variant_object({new_fields}), "
        f"'optional', {x.variant_of(False)}))"
    )
