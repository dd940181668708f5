"""The base of single message transforms, their $Key/$Value twins, and the checks most of them share.
Caller: every module in sparklink.worker.transforms.smt.

A transform's `apply(rec)` returns a new Rec built from SQL expressions; it never sees a record.
Where Connect would throw for one record (a value that is not a Map/Struct, an unknown field), the
transform marks that record failed with Connect's exception message, so errors.tolerance decides.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from sparklink.worker.transforms import exprs as x
from sparklink.worker.transforms import schemas
from sparklink.worker.transforms.plugin import Plugin
from sparklink.worker.transforms.record import Datum, Kind, Rec, Shape, Which

if TYPE_CHECKING:
    from sparklink.worker.transforms.converters import Converter
    from sparklink.worker.transforms.json_text import TextEdit

PACKAGE = "org.apache.kafka.connect.transforms"
ILLEGAL_ARGUMENT = "java.lang.IllegalArgumentException"


class Transformation(Plugin):
    which: ClassVar[Which] = "value"
    header_converter: Converter | None = None
    """Set by the pipeline before `apply` for transforms that write header values."""

    def apply(self, rec: Rec) -> Rec:
        raise NotImplementedError

    def unread_value_fields(self, after: frozenset[str]) -> frozenset[str]:
        """The names of the value's top-level fields that nothing from this transform on reads (neither
        whether they are there nor what they hold), given `after`, those that nothing after it reads. A
        sink's JsonConverter leaves such fields out of its parse. None by default: a transform that does
        not say may read the whole value."""
        return frozenset()

    def text_edits(self) -> tuple[TextEdit, ...] | None:
        """What this transform does to a schemaless JSON object value, as edits of its text (json_text.py):
        `()` when it neither reads nor changes the value, None (the default) when it cannot be written so.
        A sink chain whose every step answers lets a sink that writes text skip the VARIANT."""
        return None


T = TypeVar("T", bound=type[Transformation])


def key_and_value(base: T) -> tuple[T, T]:
    """Connect's `<Class>$Key` and `<Class>$Value` twins of a transform that works on either part."""
    out = []
    for which, suffix in (("key", "Key"), ("value", "Value")):
        attrs = {"which": which, "class_name": f"{base.class_name}${suffix}", "__module__": base.__module__}
        out.append(type(f"{base.__name__}{suffix}", (base,), attrs))
    return out[0], out[1]  # type: ignore[return-value]


@dataclass(frozen=True)
class Operand:
    """The part (key or value) a transform edits, seen as an object."""

    datum: Datum
    obj: str
    """map<string,variant>; NULL when the part is null or not an object."""
    schema: str | None
    schemaless: str
    """Per record: true when the record has no schema for this part."""

    @property
    def is_object(self) -> str:
        """Per record: the part is an object. For a VARIANT part this reads no field, so a transform that
        edits the VARIANT itself (x.object_put, x.object_select) never builds `obj`."""
        return x.is_object(self.datum.col) if self.datum.kind == "variant" else f"({self.obj} IS NOT NULL)"

    def pick(self, without_schema: str, with_schema: str) -> str:
        """Per record: the first when the record is schemaless, else the second."""
        if self.schema is None:
            return without_schema
        return x.when(self.schemaless, without_schema, with_schema)


def operand(rec: Rec, which: Which) -> Operand:
    datum = rec.datum(which)
    schemaless = f"({datum.schema} IS NULL)" if datum.schema is not None else "true"
    return Operand(datum, datum.as_map(), datum.schema, schemaless)


def require_object(rec: Rec, op: Operand, purpose: str, cls: str, allow_null: bool) -> Rec:
    """Fail records whose part is not a Map (schemaless) or a Struct (with schema), like Connect's
    Requirements.requireMap/requireStruct (the *OrNull forms when `allow_null`)."""
    found = op.datum.java_class()
    map_message = x.concat(x.text(f"Only Map objects supported in absence of schema for [{purpose}], found: "), found)
    struct_message = x.concat(x.text(f"Only Struct objects supported for [{purpose}], found: "), found)
    is_map = op.is_object
    is_struct = is_map
    if op.schema is not None:
        is_struct = f"({is_map} AND coalesce({schemas.type_of(op.schema)}, '') = 'struct')"
    ok = op.pick(is_map, is_struct)
    if allow_null:
        ok = f"({ok} OR {op.datum.is_null()})"
    return rec.fail(f"NOT {ok}", op.pick(map_message, struct_message), cls)


def edited(
    rec: Rec, op: Operand, which: Which, obj: str, schema: str | None, keep_null: bool = True, kind: Kind = "map"
) -> Rec:
    """The record with its part replaced by the edited object, a map<string,variant> or (`kind` "variant")
    an object VARIANT (null parts stay null when `keep_null`)."""
    value = x.when(f"NOT {op.datum.is_null()}", obj) if keep_null else obj
    new_schema = None
    if op.schema is not None:
        new_schema = op.pick(op.schema, schema if schema is not None else op.schema)
        if keep_null:
            new_schema = x.when(op.datum.is_null(), op.schema, new_schema)
    return rec.with_datum(which, Datum(value, kind, new_schema))


def each_listed(op: Operand, names: list[str], edit: Callable[[str, str], str]) -> str:
    """The part as an object VARIANT with every listed field's value replaced by `edit(name, value)` (the
    field's name, and its value as an SQL VARIANT expression), one jar object_put per field on the part
    read where it lies: never a map<string,variant> and back. The names are known here, so each edit is
    only that field's: the SQL grows with the fields listed, not with their square. Schemaless, Connect
    puts every listed field (absent ones as null); with a schema only the existing ones, so the absent
    ones are dropped again."""

    def build(part: Datum) -> str:
        every = part.col
        for name in names:
            every = x.object_put(every, name, edit(name, part.field(name)))
        if op.schema is None:
            return every
        n = x.fresh("n")
        absent = f"filter({listed(names)}, {n} -> {part.field_named(n)} IS NULL)"
        return op.pick(every, x.object_without(every, absent))

    return _with_variant_once(op, build)


def first_listed_error(op: Operand, names: list[str], error: Callable[[str, str], str]) -> str:
    """The first non-NULL `error(name, value)` over the listed fields in list order (SQL expressions: a
    lambda variable holding the name, and the value, NULL when absent), as Connect stops at the first field
    that throws; NULL when none does. One lambda over the names: written out as a `coalesce` of one error
    per field, Cast's errors took Spark 50% longer (2.2 -> 3.5 s over 200,000 JSON values, two fields)."""
    n, v, e = x.fresh("n"), x.fresh("v"), x.fresh("e")

    def build(part: Datum) -> str:
        values = f"transform({listed(names)}, {n} -> {part.field_named(n)})"
        errors = f"zip_with({listed(names)}, {values}, ({n}, {v}) -> {error(n, v)})"
        return f"try_element_at(filter({errors}, {e} -> {e} IS NOT NULL), 1)"

    return _with_variant_once(op, build)


def _with_variant_once(op: Operand, build: Callable[[Datum], str]) -> str:
    """`build(part)` over the part as a VARIANT Datum, which `build` may read many times. A VARIANT column is
    read where it lies; a part held otherwise (a typed struct, a map) is converted once, and `build` reads
    it as a lambda variable: written out each time, its conversion would run each time (a MaskField of 18
    fields on a struct that way ran Spark's JVM out of memory)."""
    if op.datum.kind == "variant" and op.datum.shape is None:
        return build(op.datum)
    p = x.fresh("p")
    return f"element_at(transform(array({op.datum.variant()}), {p} -> {build(Datum(p, 'variant'))}), 1)"


def listed(names: list[str]) -> str:
    """The names as an SQL array of strings."""
    return x.string_array(names)


def on_struct(rec: Rec, which: Which, edit: Callable[[Rec, Shape], Rec | None]) -> Rec | None:
    """`edit` applied to a part still held as a typed struct; None (take the general path) when the part
    is not such a struct or `edit` declines it."""
    shape = rec.datum(which).shape
    return None if shape is None else edit(rec, shape)


def struct_field(shape: Shape, name: str) -> str:
    """A top-level field of a struct part."""
    return f"({shape.struct}).{x.ident(name)}"


def reshaped(rec: Rec, which: Which, shape: Shape, fields: list[tuple[str, str]], connect: dict[str, Any]) -> Rec:
    """The record with its struct part rebuilt from (name, SQL expression) fields, in that order, and
    `connect` as its schema. A null part stays null with its schema, as Connect returns such a record
    unchanged. A struct part always passes requireStructOrNull, so no record can fail here."""
    schema = rec.datum(which).schema
    assert schema is not None, "a struct part always carries its schema"
    struct = "named_struct(" + ", ".join(f"{x.text(name)}, {expr}" for name, expr in fields) + ")"
    new_schema = x.variant_of(connect)
    if shape.nullable:
        struct = x.when(f"{shape.struct} IS NOT NULL", struct)
        new_schema = x.when(f"{shape.struct} IS NULL", schema, new_schema)
    return rec.with_datum(which, Datum.of_shape(Shape(struct, connect, shape.nullable), new_schema))
