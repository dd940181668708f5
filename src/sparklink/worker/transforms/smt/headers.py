"""Header SMTs: HeaderFrom (fields to headers), InsertHeader, DropHeaders. Caller: the transform catalog.

Headers stay Kafka's `array<struct<key:string,value:binary>>` through a chain; a header a transform
adds is written with the connector's header converter (SimpleHeaderConverter by default), which is
what Connect does when the record is produced.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from sparklink.api import config as cfg
from sparklink.worker.transforms import exprs as x
from sparklink.worker.transforms import schemas
from sparklink.worker.transforms.plugin import REPLACE_NULL_WITH_DEFAULT, PluginConfigError, config, key, non_empty_list
from sparklink.worker.transforms.record import Datum, Rec
from sparklink.worker.transforms.smt.base import PACKAGE, Transformation, edited, key_and_value, operand, require_object


def _header(name: str, value: str) -> str:
    return f"named_struct('key', {x.text(name)}, 'value', CAST({value} AS BINARY))"


def _header_bytes(transform: Transformation, datum: Datum) -> str:
    if transform.header_converter is None:
        raise RuntimeError("the pipeline sets a header converter before applying header transforms")
    return transform.header_converter.header_bytes(datum)


class HeaderFrom(Transformation):
    class_name = f"{PACKAGE}.HeaderFrom"
    doc = "Copies or moves fields of the key or value into headers (fields[i] goes to headers[i])."
    CONFIG = config(
        key("fields", "LIST", "Fields whose values become headers.", importance="HIGH", validator=non_empty_list),
        key("headers", "LIST", "Header names, one per entry of fields.", importance="HIGH", validator=non_empty_list),
        key(
            "operation",
            "STRING",
            "copy keeps the fields in the key or value; move removes them.",
            importance="HIGH",
            validator=cfg.one_of(["move", "copy"]),
        ),
        REPLACE_NULL_WITH_DEFAULT,
    )

    def configure(self) -> None:
        if len(self.config["fields"]) != len(self.config["headers"]):
            raise PluginConfigError("'fields' config must have the same number of elements as 'headers' config.")

    def apply(self, rec: Rec) -> Rec:
        op = operand(rec, self.which)
        operation = str(self.config["operation"])
        rec = require_object(rec, op, f"header {operation}", self.class_name, allow_null=False)
        added = []
        for field, header in zip(self.config["fields"], self.config["headers"], strict=True):
            schema = schemas.field(op.schema, field) if op.schema is not None else None
            added.append(_header(header, _header_bytes(self, Datum.of_variant(op.datum.field(field), schema))))
        rec = replace(rec, headers=f"concat({rec.headers}, array({', '.join(added)}))")
        if operation == "copy":
            return rec
        fields = list(self.config["fields"])
        schema_out = None
        if op.schema is not None:
            f = x.fresh("f")
            kept = f"filter({schemas.fields(op.schema)}, {f} -> NOT ({x.in_list(schemas.field_name(f), fields)}))"
            schema_out = schemas.with_fields(op.schema, kept)
        moved = x.object_select(op.datum.variant(), fields, [], {})
        return edited(rec, op, self.which, moved, schema_out, keep_null=False, kind="variant")


def literal_value(text: str) -> Any:
    """InsertHeader's literal as Connect's Values.parseString reads it: numbers and booleans typed,
    JSON arrays and objects structured, anything else a string."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    return parsed if not isinstance(parsed, str) else text


class InsertHeader(Transformation):
    class_name = f"{PACKAGE}.InsertHeader"
    doc = "Adds a header with a fixed value to every record."
    CONFIG = config(
        key("header", "STRING", "Name of the header to add.", importance="HIGH"),
        key(
            "value.literal",
            "STRING",
            "Its value (numbers and booleans are typed, as Connect parses them).",
            importance="HIGH",
        ),
    )

    def apply(self, rec: Rec) -> Rec:
        literal = str(self.config["value.literal"])
        parsed = literal_value(literal)
        datum = Datum(x.text(literal), "string") if isinstance(parsed, str) else Datum(x.variant_of(parsed), "variant")
        header = _header(str(self.config["header"]), _header_bytes(self, datum))
        return replace(rec, headers=f"concat({rec.headers}, array({header}))")

    def unread_value_fields(self, after: frozenset[str]) -> frozenset[str]:
        return after  # edits the headers alone


class DropHeaders(Transformation):
    class_name = f"{PACKAGE}.DropHeaders"
    doc = "Removes every header with one of the given names."
    CONFIG = config(
        key("headers", "LIST", "Names of the headers to remove.", importance="HIGH", validator=non_empty_list)
    )

    def apply(self, rec: Rec) -> Rec:
        h = x.fresh("h")
        names = list(self.config["headers"])
        return replace(rec, headers=f"filter({rec.headers}, {h} -> NOT ({x.in_list(f'{h}.key', names)}))")

    def unread_value_fields(self, after: frozenset[str]) -> frozenset[str]:
        return after  # edits the headers alone


HeaderFromKey, HeaderFromValue = key_and_value(HeaderFrom)
ALL: tuple[type[Transformation], ...] = (HeaderFromKey, HeaderFromValue, InsertHeader, DropHeaders)
