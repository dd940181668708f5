"""The record as Spark SQL expressions while a chain is compiled. Caller: converters, SMTs, predicates,
pipeline.

A `Rec` holds one SQL expression per part of a Connect record (topic, partition, offset, timestamp,
headers, key, value) plus two bookkeeping expressions: `error` (NULL, or why this record failed and
where) and `drop` (the record was filtered out). Transforms are pure functions Rec -> Rec; nothing
runs until the pipeline selects the expressions, so a whole chain becomes one Spark plan.

Key and value are `Datum`s: an expression plus its `kind`, known when compiling:
  binary  - bytes (ByteArrayConverter)          string - text (StringConverter)
  variant - any Connect value (JsonConverter)   map    - an object a transform built, map<string,variant>
and, for schema'd data, a second expression with the Connect schema (JsonConverter's JSON form) as
VARIANT. Connect null is SQL NULL at the top level of a Datum.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from sparklink.worker.transforms import exprs as x

Kind = Literal["binary", "string", "variant", "map"]
Side = Literal["source", "sink"]
Which = Literal["key", "value"]

TRANSFORMATION = "TRANSFORMATION"
KEY_CONVERTER = "KEY_CONVERTER"
VALUE_CONVERTER = "VALUE_CONVERTER"
DATA_EXCEPTION = "org.apache.kafka.connect.errors.DataException"
ERROR_TYPE = "struct<stage:string,class:string,exception:string,message:string>"
NO_ERROR = f"CAST(NULL AS {ERROR_TYPE})"


@dataclass(frozen=True)
class Shape:
    """A value held as a Spark struct whose top-level fields are known when compiling (a source's typed
    column, in the form JsonConverter writes: timestamps as epoch ms, ...). Transforms of named top-level
    fields (InsertField, ReplaceField) edit the struct itself, and the converter writes it with `to_json`,
    so such a chain never builds a VARIANT per record. Anything else reads the Datum's VARIANT `col`."""

    struct: str
    """The struct; NULL for Connect null."""
    connect: dict[str, Any]
    """Its Connect schema (a struct schema in JsonConverter's JSON form) when the value is not null."""
    nullable: bool

    @property
    def fields(self) -> list[str]:
        return [str(f["field"]) for f in self.connect["fields"]]


def json_of_struct(struct: str) -> str:
    """A struct as the JSON JsonConverter writes for a Struct: fields in schema order, nulls kept."""
    return f"to_json({struct}, map('ignoreNullFields', 'false'))"


@dataclass(frozen=True)
class Datum:
    col: str
    kind: Kind
    schema: str | None = None
    json: str | None = None
    """The value's JSON text when it is cheaper than `col` (a source's struct column, untransformed): text
    Spark wrote (`to_json`, or the cast of a number), so valid UTF-8, which JsonConverter casts to bytes."""
    shape: Shape | None = None
    """Set while the value is still a typed struct of known fields (see Shape)."""

    @staticmethod
    def of_shape(shape: Shape, schema: str) -> Datum:
        """A struct Datum: its VARIANT (for transforms that need the whole value) is made only if read."""
        return Datum(f"to_variant_object({shape.struct})", "variant", schema, json_of_struct(shape.struct), shape)

    @staticmethod
    def of_variant(col: str, schema: str | None = None) -> Datum:
        """A VARIANT Datum with a top-level JSON null turned into Connect null."""
        return Datum(x.when(f"NOT {x.is_null(col)}", col), "variant", schema)

    def variant(self) -> str:
        if self.kind == "map":
            return x.from_map(self.col)
        if self.kind == "variant":
            return self.col
        return x.to_variant(self.col)

    def as_map(self) -> str:
        """The value as map<string,variant>; NULL if it is not an object."""
        if self.kind == "map":
            return self.col
        if self.kind == "variant":
            return x.as_map(self.col)
        return x.NULL_MAP

    def field(self, name: str) -> str:
        """Field `name` of the value as a VARIANT; NULL if the value is not an object or has no such field.
        A VARIANT is read where it lies (the jar's object_get), never turned into a map for one field."""
        return self.field_named(x.text(name))

    def field_named(self, name: str) -> str:
        """`field` for the name SQL expression `name` gives (a lambda variable, say)."""
        if self.kind == "map":
            return f"try_element_at({self.col}, {name})"
        return f"{x.OBJECT_GET}({self.variant()}, {name})"

    def is_null(self) -> str:
        return f"isnull({self.col})"

    def java_class(self) -> str:
        if self.kind == "string":
            return "'java.lang.String'"
        if self.kind == "binary":
            return "'[B'"
        if self.kind == "map":
            return "'java.util.HashMap'"
        return x.java_class(self.col)


def unify(a: Datum, b: Datum) -> tuple[Datum, Datum]:
    """Two Datums with one kind and both with or without schema, so one column can hold either."""
    if a.kind != b.kind:
        a, b = Datum(a.variant(), "variant", a.schema), Datum(b.variant(), "variant", b.schema)
    if (a.schema is None) != (b.schema is None):
        a = replace(a, schema=a.schema if a.schema is not None else x.NULL_VARIANT)
        b = replace(b, schema=b.schema if b.schema is not None else x.NULL_VARIANT)
    return a, b


@dataclass(frozen=True)
class Rec:
    topic: str
    partition: str
    offset: str
    timestamp: str
    headers: str
    key: Datum
    value: Datum
    error: str
    drop: str
    side: Side

    def datum(self, which: Which) -> Datum:
        return self.key if which == "key" else self.value

    def with_datum(self, which: Which, datum: Datum) -> Rec:
        return replace(self, key=datum) if which == "key" else replace(self, value=datum)

    def fail(
        self, when: str, message: str, cls: str, stage: str = TRANSFORMATION, exception: str = DATA_EXCEPTION
    ) -> Rec:
        """Mark records for which `when` holds as failed (the first failure of a record wins)."""
        error = f"named_struct('stage', {x.text(stage)}, 'class', {x.text(cls)}, 'exception', {x.text(exception)}, 'message', {message})"  # noqa: E501
        failed = f"NOT {self.drop} AND coalesce({when}, false)"
        return replace(self, error=f"coalesce({self.error}, {x.when(failed, error)})")

    def choose(self, cond: str, other: Rec) -> Rec:
        """Per record: `other` where `cond` holds, else this record (a transform's predicate)."""

        def pick(new: str, old: str) -> str:
            # A field the transform left alone stays as it was: a constant `false` drop or NULL error
            # must stay constant, or the chain would need an error barrier it cannot use.
            return old if new == old else x.when(cond, new, old)

        def pick_datum(new: Datum, old: Datum) -> Datum:
            if new == old:  # untouched by the transform: keep its cheaper forms (JSON text, struct)
                return old
            new, old = unify(new, old)
            schema = None if new.schema is None or old.schema is None else pick(new.schema, old.schema)
            return Datum(pick(new.col, old.col), new.kind, schema)

        return Rec(
            topic=pick(other.topic, self.topic),
            partition=pick(other.partition, self.partition),
            offset=self.offset,
            timestamp=pick(other.timestamp, self.timestamp),
            headers=pick(other.headers, self.headers),
            key=pick_datum(other.key, self.key),
            value=pick_datum(other.value, self.value),
            error=pick(other.error, self.error),
            drop=pick(other.drop, self.drop),
            side=self.side,
        )
