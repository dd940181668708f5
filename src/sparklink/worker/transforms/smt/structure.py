"""Structure SMTs: Flatten and SetSchemaMetadata. Caller: the transform catalog.

Flatten works level by level in Spark SQL (no recursion in an expression), so it flattens objects
nested up to FLATTEN_DEPTH levels; deeper objects stay objects under their joined name.
"""

from __future__ import annotations

from sparklink.worker.transforms import exprs as x
from sparklink.worker.transforms import schemas
from sparklink.worker.transforms.plugin import REPLACE_NULL_WITH_DEFAULT, PluginConfigError, config, key
from sparklink.worker.transforms.record import Datum, Rec
from sparklink.worker.transforms.smt.base import PACKAGE, Transformation, edited, key_and_value, operand, require_object

FLATTEN_DEPTH = 8


class Flatten(Transformation):
    class_name = f"{PACKAGE}.Flatten"
    doc = "Lifts the fields of nested Structs (with schema) or Maps (without) to the top, joining their names."
    CONFIG = config(key("delimiter", "STRING", "Text put between the names of nesting levels.", default="."))

    def _flatten_values(self, obj: str) -> str:
        delimiter = x.text(str(self.config["delimiter"]))
        entries = f"map_entries({obj})"
        for _ in range(FLATTEN_DEPTH):
            e, c = x.fresh("e"), x.fresh("c")
            inner = x.as_map(f"{e}.value")
            joined = f"transform(map_entries({inner}), {c} -> named_struct('key', concat({e}.key, {delimiter}, {c}.key), 'value', {c}.value))"  # noqa: E501
            entries = f"flatten(transform({entries}, {e} -> {x.when(f'{inner} IS NOT NULL', joined, f'array({e})')}))"
        return f"map_from_entries({entries})"

    def _flatten_schema(self, schema: str) -> str:
        delimiter = x.text(str(self.config["delimiter"]))
        entries = schemas.fields(schema)
        for _ in range(FLATTEN_DEPTH):
            f, c = x.fresh("f"), x.fresh("c")
            name = f"concat({schemas.field_name(f)}, {delimiter}, {schemas.field_name(c)})"
            flag = f"({schemas.is_optional(f)} OR {schemas.is_optional(c)})"
            joined = f"transform({schemas.fields(f)}, {c} -> {schemas.optional(schemas.named(c, name), flag)})"
            struct_field = f"{schemas.type_of(f)} = 'struct'"
            entries = f"flatten(transform({entries}, {f} -> {x.when(struct_field, joined, f'array({f})')}))"
        return schemas.with_fields(schema, entries)

    def apply(self, rec: Rec) -> Rec:
        op = operand(rec, self.which)
        rec = require_object(rec, op, "flattening", self.class_name, allow_null=True)
        schema = self._flatten_schema(op.schema) if op.schema is not None else None
        return edited(rec, op, self.which, self._flatten_values(op.obj), schema)


class SetSchemaMetadata(Transformation):
    class_name = f"{PACKAGE}.SetSchemaMetadata"
    doc = "Sets the name and/or version of the key or value schema."
    CONFIG = config(
        key("schema.name", "STRING", "The schema name to set.", default=None, importance="HIGH"),
        key("schema.version", "INT", "The schema version to set.", default=None, importance="HIGH"),
        REPLACE_NULL_WITH_DEFAULT,
    )

    def configure(self) -> None:
        if self.config["schema.name"] is None and self.config["schema.version"] is None:
            raise PluginConfigError("Neither schema name nor version configured")

    def apply(self, rec: Rec) -> Rec:
        datum = rec.datum(self.which)
        missing = x.text("Schema required for [updating schema metadata]")
        if datum.schema is None:
            return rec.fail(f"NOT {datum.is_null()}", missing, self.class_name)
        rec = rec.fail(f"NOT {datum.is_null()} AND {datum.schema} IS NULL", missing, self.class_name)
        schema = datum.schema
        if self.config["schema.name"] is not None:
            schema = schemas.with_key(schema, "name", x.to_variant(x.text(str(self.config["schema.name"]))))
        if self.config["schema.version"] is not None:
            schema = schemas.with_key(schema, "version", x.to_variant(str(int(self.config["schema.version"]))))
        new_schema = x.when(f"{datum.schema} IS NOT NULL", schema)
        return rec.with_datum(self.which, Datum(datum.col, datum.kind, new_schema))


FlattenKey, FlattenValue = key_and_value(Flatten)
SetSchemaMetadataKey, SetSchemaMetadataValue = key_and_value(SetSchemaMetadata)
ALL: tuple[type[Transformation], ...] = (FlattenKey, FlattenValue, SetSchemaMetadataKey, SetSchemaMetadataValue)
