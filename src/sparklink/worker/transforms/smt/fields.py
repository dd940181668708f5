"""Field-level SMTs: InsertField, ReplaceField, ValueToKey, ExtractField, HoistField (MaskField: mask.py).
Caller: the transform catalog. Same configs and per-record errors as org.apache.kafka.connect.transforms.
"""

from __future__ import annotations

from sparklink.worker.transforms import exprs as x
from sparklink.worker.transforms import schemas
from sparklink.worker.transforms.json_text import Put, Select, TextEdit
from sparklink.worker.transforms.plugin import REPLACE_NULL_WITH_DEFAULT, PluginConfigError, config, key, non_empty_list
from sparklink.worker.transforms.record import Datum, Rec, Shape
from sparklink.worker.transforms.smt.base import (
    ILLEGAL_ARGUMENT,
    PACKAGE,
    Operand,
    Transformation,
    edited,
    key_and_value,
    on_struct,
    operand,
    require_object,
    reshaped,
    struct_field,
)

SOURCE_RECORD = "org.apache.kafka.connect.source.SourceRecord"
SPEC = "End the name with ! for a required field in the schema, ? (the default) for an optional one."


def _spec(spec: str | None) -> tuple[str, bool] | None:
    """InsertField's `name!` (required) / `name?` (optional, the default) field specs."""
    if spec is None:
        return None
    if spec.endswith("?"):
        return spec[:-1], True
    if spec.endswith("!"):
        return spec[:-1], False
    return spec, True


class InsertField(Transformation):
    class_name = f"{PACKAGE}.InsertField"
    doc = "Adds fields holding the record's topic, partition, offset, timestamp or a fixed string."
    CONFIG = config(
        key("topic.field", "STRING", f"Field that receives the topic. {SPEC}", default=None),
        key("partition.field", "STRING", f"Field that receives the partition. {SPEC}", default=None),
        key("offset.field", "STRING", f"Field that receives the offset (sink connectors only). {SPEC}", default=None),
        key("timestamp.field", "STRING", f"Field that receives the record timestamp. {SPEC}", default=None),
        key("static.field", "STRING", f"Field that receives static.value. {SPEC}", default=None),
        key("static.value", "STRING", "The fixed string written to static.field.", default=None),
        REPLACE_NULL_WITH_DEFAULT,
    )

    def configure(self) -> None:
        kinds = ("topic", "partition", "offset", "timestamp", "static")
        self.specs = {k: _spec(self.config[f"{k}.field"]) for k in kinds}
        if all(s is None for s in self.specs.values()):
            raise PluginConfigError("No field insertion configured")
        if self.specs["static"] is not None and self.config["static.value"] is None:
            raise PluginConfigError(f"No value specified for static field: {self.config['static.field']}")

    def apply(self, rec: Rec) -> Rec:
        if (edited_struct := on_struct(rec, self.which, self._on_struct)) is not None:
            return edited_struct
        op = operand(rec, self.which)
        rec = require_object(rec, op, "field insertion", self.class_name, allow_null=True)
        obj = op.datum.variant()
        added: list[str] = []
        if self.specs["offset"] is not None and rec.side == "source":
            message = x.text(f"Only SinkRecord supported for [field insertion], found: {SOURCE_RECORD}")
            rec = rec.fail(f"NOT {op.datum.is_null()}", message, self.class_name)
        inserts = [
            ("topic", x.to_variant(rec.topic), schemas.primitive("string"), None),
            ("partition", x.to_variant(rec.partition), schemas.primitive("int32"), f"{rec.partition} IS NOT NULL"),
            ("offset", x.to_variant(rec.offset), schemas.primitive("int64"), None),
            (
                "timestamp",
                x.to_variant(f"unix_millis({rec.timestamp})"),
                schemas.timestamp(),
                f"{rec.timestamp} IS NOT NULL",
            ),
            ("static", x.to_variant(x.lit(self.config["static.value"])), schemas.primitive("string"), None),
        ]
        for kind, value, schema, present in inserts:
            spec = self.specs[kind]
            if spec is None:
                continue
            name, optional = spec
            put = x.object_put(obj, name, value)
            obj = put if present is None else x.when(present, put, obj)
            added.append(x.variant_of({**schema, "optional": optional, "field": name}))
        schema_out = None
        if op.schema is not None:
            schema_out = schemas.with_fields(
                op.schema, f"concat({schemas.fields(op.schema)}, array({', '.join(added)}))"
            )
        return edited(rec, op, self.which, obj, schema_out, kind="variant")

    def unread_value_fields(self, after: frozenset[str]) -> frozenset[str]:
        if self.which != "value":
            return after
        # A value's field of an inserted name is replaced unread, except by a partition or timestamp
        # field, which is inserted only where the record has one.
        replaced = {spec[0] for kind, spec in self.specs.items() if spec and kind in ("topic", "offset", "static")}
        return after | replaced

    def text_edits(self) -> tuple[TextEdit, ...] | None:
        # The static field alone is a constant; the others hold per-record values.
        static = self.specs["static"]
        if self.which != "value" or static is None or any(self.specs[k] for k in self.specs if k != "static"):
            return None
        return (Put(static[0], str(self.config["static.value"])),)

    def _on_struct(self, rec: Rec, shape: Shape) -> Rec | None:
        """Connect's applyWithSchema on a typed struct: its fields, then the inserted ones (a null
        partition or timestamp as a null field). None (the general path) for an offset, which a
        source record cannot have, and for a name the struct already has (Connect refuses it)."""
        if self.specs["offset"] is not None:
            return None
        values = {
            "topic": (f"CAST({rec.topic} AS STRING)", schemas.primitive("string")),
            "partition": (f"CAST({rec.partition} AS INT)", schemas.primitive("int32")),
            "timestamp": (f"unix_millis({rec.timestamp})", schemas.timestamp()),
            "static": (x.text(str(self.config["static.value"])), schemas.primitive("string")),
        }
        fields = [(name, struct_field(shape, name)) for name in shape.fields]
        entries = list(shape.connect["fields"])
        for kind, (value, schema) in values.items():
            spec = self.specs[kind]
            if spec is None:
                continue
            name, optional = spec
            fields.append((name, value))
            entries.append({**schema, "optional": optional, "field": name})
        names = [name for name, _ in fields]
        if len(set(names)) != len(names):
            return None
        return reshaped(rec, self.which, shape, fields, {**shape.connect, "fields": entries})


def _renames(mappings: list[str]) -> dict[str, str]:
    out = {}
    for mapping in mappings:
        parts = mapping.split(":")
        if len(parts) != 2:
            raise ValueError(f"Invalid rename mapping: {mapping}")
        out[parts[0]] = parts[1]
    return out


def _check_renames(_name: str, value: object) -> str | None:
    try:
        _renames(list(value))  # type: ignore[call-overload]
    except ValueError as exc:
        return str(exc)
    return None


class ReplaceField(Transformation):
    class_name = f"{PACKAGE}.ReplaceField"
    doc = "Keeps, drops and renames fields."
    CONFIG = config(
        key("exclude", "LIST", "Fields to drop (wins over include).", default=[]),
        key("include", "LIST", "Fields to keep; when set, all others are dropped.", default=[]),
        key("renames", "LIST", "Renames as old:new pairs, e.g. foo:bar,abc:xyz.", default=[], validator=_check_renames),
        REPLACE_NULL_WITH_DEFAULT,
    )

    def configure(self) -> None:
        self.exclude = list(self.config["exclude"])
        self.include = list(self.config["include"])
        self.renames = _renames(self.config["renames"])

    def _kept(self, name: str) -> str:
        keep = "true"
        if self.exclude:
            keep = f"NOT ({x.in_list(name, self.exclude)})"
        if self.include:
            keep = f"({keep} AND {x.in_list(name, self.include)})"
        return keep

    def _renamed(self, name: str) -> str:
        if not self.renames:
            return name
        return x.case(*[(f"{name} = {x.text(old)}", x.text(new)) for old, new in self.renames.items()], otherwise=name)

    def _keeps(self, name: str) -> bool:
        return name not in self.exclude and (not self.include or name in self.include)

    def unread_value_fields(self, after: frozenset[str]) -> frozenset[str]:
        if self.which != "value":
            return after
        # Dropped fields, and kept ones whose (new) name nothing after reads. Only names that are listed
        # here or in `after` can be told: the fields an include list drops are not known by name.
        named = {*self.exclude, *after, *self.renames}
        return frozenset(n for n in named if not self._keeps(n) or self.renames.get(n, n) in after)

    def text_edits(self) -> tuple[TextEdit, ...] | None:
        if self.which != "value":
            return None
        return (Select(tuple(self.exclude), tuple(self.include), tuple(self.renames.items())),)

    def _on_struct(self, rec: Rec, shape: Shape) -> Rec | None:
        """Connect's applyWithSchema on a typed struct: the kept fields in schema order, renamed. None
        (the general path) when no field is left or two would end up with one name."""
        kept = [f for f in shape.connect["fields"] if self._keeps(str(f["field"]))]
        entries = [{**f, "field": self.renames.get(str(f["field"]), str(f["field"]))} for f in kept]
        names = [str(e["field"]) for e in entries]
        if not kept or len(set(names)) != len(names):
            return None
        fields = [(new, struct_field(shape, str(f["field"]))) for new, f in zip(names, kept, strict=True)]
        return reshaped(rec, self.which, shape, fields, {**shape.connect, "fields": entries})

    def apply(self, rec: Rec) -> Rec:
        if (edited_struct := on_struct(rec, self.which, self._on_struct)) is not None:
            return edited_struct
        op = operand(rec, self.which)
        rec = require_object(rec, op, "field replacement", self.class_name, allow_null=True)
        obj = x.object_select(op.datum.variant(), self.exclude, self.include, self.renames)
        schema = None
        if op.schema is not None:
            f, g = x.fresh("f"), x.fresh("f")
            kept_fields = f"filter({schemas.fields(op.schema)}, {f} -> {self._kept(schemas.field_name(f))})"
            renamed = f"transform({kept_fields}, {g} -> {schemas.named(g, self._renamed(schemas.field_name(g)))})"
            schema = schemas.with_fields(op.schema, renamed)
        return edited(rec, op, self.which, obj, schema, kind="variant")


def _syntax(_name: str, value: object) -> str | None:
    return None if str(value).upper() in ("V1", "V2") else "String must be one of (case insensitive): V1, V2"


FIELD_SYNTAX_VERSION = key(
    "field.syntax.version",
    "STRING",
    "Defines the version of the syntax to access fields. V1: a field name names a top-level field. V2: it is a "
    "dotted path into nested fields; wrap a name that contains dots in backticks.",
    default="V1",
    importance="HIGH",
    validator=_syntax,
)


class ValueToKey(Transformation):
    class_name = f"{PACKAGE}.ValueToKey"
    doc = "Makes the key an object of chosen fields of the value."
    CONFIG = config(
        key(
            "fields",
            "LIST",
            "Value fields copied into the new key (dotted paths with field.syntax.version=V2).",
            importance="HIGH",
            validator=non_empty_list,
        ),
        REPLACE_NULL_WITH_DEFAULT,
        # Kafka 4.4: nested fields, as ExtractField reads them; each key field keeps the name as written.
        FIELD_SYNTAX_VERSION,
    )

    def configure(self) -> None:
        syntax = str(self.config["field.syntax.version"])
        self.paths = [(str(name), field_path(str(name), syntax)) for name in self.config["fields"]]

    def apply(self, rec: Rec) -> Rec:
        op = operand(rec, "value")
        rec = require_object(rec, op, "copying fields from value to key", self.class_name, allow_null=False)
        values, schemas_of = [], []
        for name, path in self.paths:
            value = field_at(op, path)
            schema = None if op.schema is None else schemas.field_at(op.schema, path)
            values.append(f"{x.text(name)}, coalesce({value}, {x.NULL_VARIANT})")
            if op.schema is not None and schema is not None:
                missing = f"NOT {op.schemaless} AND {schema} IS NULL"
                rec = rec.fail(missing, x.text(f"Field does not exist: {name}"), self.class_name)
                schemas_of.append(schemas.named(schema, x.text(name)))
        new_key = f"map({', '.join(values)})"
        key_schema = None
        if op.schema is not None:
            key_schema = op.pick(x.NULL_VARIANT, schemas.struct(f"array({', '.join(schemas_of)})"))
        return rec.with_datum("key", Datum(new_key, "map", key_schema))


def field_at(op: Operand, path: list[str]) -> str:
    """The VARIANT at a path of field names in the part; NULL where a step finds no object or no such field."""
    first, *rest = path
    value = op.datum.field(first)
    for name in rest:
        value = x.object_get(value, name)
    return value


def field_path(path: str, syntax: str) -> list[str]:
    """ExtractField's field path: one name (V1), or dotted with `backquoted` names holding dots (V2)."""
    if syntax.upper() == "V1":
        return [path]
    parts: list[str] = []
    current, quoted = "", False
    for i, ch in enumerate(path):
        if ch == "`" and not quoted and current == "":
            quoted = True
        elif ch == "`" and quoted and (i + 1 == len(path) or path[i + 1] == "."):
            quoted = False
        elif ch == "." and not quoted:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


class ExtractField(Transformation):
    class_name = f"{PACKAGE}.ExtractField"
    doc = "Replaces the key or value by one of its fields (a null key or value stays null)."
    CONFIG = config(
        key("field", "STRING", "The field to extract (a dotted path with field.syntax.version=V2)."),
        REPLACE_NULL_WITH_DEFAULT,
        FIELD_SYNTAX_VERSION,
    )

    def configure(self) -> None:
        self.path = field_path(str(self.config["field"]), str(self.config["field.syntax.version"]))

    def apply(self, rec: Rec) -> Rec:
        if (extracted := on_struct(rec, self.which, self._on_struct)) is not None:
            return extracted
        op = operand(rec, self.which)
        rec = require_object(rec, op, "field extraction", self.class_name, allow_null=True)
        value = field_at(op, self.path)
        schema = None if op.schema is None else schemas.field_at(op.schema, self.path)
        if op.schema is not None and schema is not None:
            unknown = f"NOT {op.schemaless} AND {schema} IS NULL"
            message = x.text(f"Unknown field: {self.config['field']}")
            rec = rec.fail(unknown, message, self.class_name, exception=ILLEGAL_ARGUMENT)
            schema = op.pick(x.NULL_VARIANT, schema)
        return rec.with_datum(self.which, Datum.of_variant(value, schema))

    def _on_struct(self, rec: Rec, shape: Shape) -> Rec | None:
        """Connect's applyWithSchema on a typed struct: the field's value with the field's schema, as a
        typed struct or a value the converter writes without a VARIANT (see `field_datum`). None (the
        general path) for a nested path, a field the struct lacks, or a type `field_datum` declines."""
        if len(self.path) != 1:
            return None
        name = self.path[0]
        entry = next((f for f in shape.connect["fields"] if f["field"] == name), None)
        schema = rec.datum(self.which).schema
        if entry is None or schema is None:
            return None
        connect = {k: v for k, v in entry.items() if k != "field"}
        nullable = shape.nullable or bool(connect.get("optional"))
        new_schema = x.variant_of(connect)
        if shape.nullable:
            # A null part keeps the schema it came with (Connect returns such a record unchanged in
            # InsertField, ReplaceField, ...), so its field schema comes from that one, and a name
            # that schema lacks fails as in the general path.
            null_schema = schemas.field(schema, name)
            new_schema = x.when(f"{shape.struct} IS NULL", null_schema, new_schema)
            unknown = f"{shape.struct} IS NULL AND {null_schema} IS NULL"
            message = x.text(f"Unknown field: {self.config['field']}")
            rec = rec.fail(unknown, message, self.class_name, exception=ILLEGAL_ARGUMENT)
        datum = field_datum(struct_field(shape, name), connect, nullable, new_schema)
        return None if datum is None else rec.with_datum(self.which, datum)


def field_datum(value: str, connect: dict[str, object], nullable: bool, schema: str) -> Datum | None:
    """A struct field's value (`value`, in the payload form of its Connect schema `connect`) as a Datum
    that every converter writes as it writes the same value read from the struct's VARIANT: a struct as
    a Shape, a string as text, numbers and booleans with their JSON text (Spark's cast to STRING writes
    what `to_json` of the VARIANT writes), lists and maps with `to_json`. None for bytes (the converters
    write a VARIANT's bytes as base64, and no cheaper form is shared by all of them) and for floats and
    doubles: a VARIANT's NaN and infinities are JSON strings ("NaN") but bare text (NaN) for
    StringConverter, and a Datum has one text form for both."""
    kind = connect.get("type")
    if kind == "struct":
        return Datum.of_shape(Shape(value, dict(connect), nullable), schema)
    if kind == "string":
        return Datum(value, "string", schema)
    if kind in ("int8", "int16", "int32", "int64", "boolean"):
        return Datum(x.to_variant(value), "variant", schema, f"CAST({value} AS STRING)")
    if kind in ("array", "map"):
        return Datum(x.from_map(value), "variant", schema, f"to_json({value}, map('ignoreNullFields', 'false'))")
    return None


class HoistField(Transformation):
    class_name = f"{PACKAGE}.HoistField"
    doc = "Wraps the key or value in a Struct (with schema) or Map (without) under one field name."
    CONFIG = config(key("field", "STRING", "Name of the one field of the new Struct or Map."))

    def apply(self, rec: Rec) -> Rec:
        name = str(self.config["field"])
        datum = rec.datum(self.which)
        obj = f"map({x.text(name)}, {datum.variant()})"
        schema = None
        if datum.schema is not None:
            wrapped = schemas.struct(f"array({schemas.named(datum.schema, x.text(name))})")
            schema = x.when(f"{datum.schema} IS NOT NULL", wrapped)
        return rec.with_datum(self.which, Datum(obj, "map", schema))


InsertFieldKey, InsertFieldValue = key_and_value(InsertField)
ReplaceFieldKey, ReplaceFieldValue = key_and_value(ReplaceField)
ExtractFieldKey, ExtractFieldValue = key_and_value(ExtractField)
HoistFieldKey, HoistFieldValue = key_and_value(HoistField)

ALL: tuple[type[Transformation], ...] = (
    InsertFieldKey,
    InsertFieldValue,
    ReplaceFieldKey,
    ReplaceFieldValue,
    ValueToKey,
    ExtractFieldKey,
    ExtractFieldValue,
    HoistFieldKey,
    HoistFieldValue,
)
