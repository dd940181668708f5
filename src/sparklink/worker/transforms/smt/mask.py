"""MaskField: listed fields replaced by their type's empty value or a replacement, as Connect's MaskField does.
Caller: the transform catalog. On a typed struct (no VARIANT built) where Connect's answer is known from the
field's type, else on the VARIANT value with Connect's per-record errors.

A replacement is converted as Connect converts it (`Values.convertToLong` and friends, from the text):
`new BigDecimal(text)`, truncated toward zero and cut to the field's width for an integer field (so "1.5"
masks an int to 1 and "300" an int8 to 44), rounded to a double for a floating one; text BigDecimal cannot
read ("abc", "NaN") fails the record with Connect's message.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

from sparklink.worker.transforms import exprs as x
from sparklink.worker.transforms import schemas
from sparklink.worker.transforms.plugin import REPLACE_NULL_WITH_DEFAULT, config, key, non_empty_list
from sparklink.worker.transforms.record import Rec, Shape
from sparklink.worker.transforms.smt.base import (
    PACKAGE,
    Operand,
    Transformation,
    each_listed,
    edited,
    first_listed_error,
    key_and_value,
    listed,
    on_struct,
    operand,
    require_object,
    reshaped,
    struct_field,
)

_BIG_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
"""What java.math.BigDecimal(String) reads (ASCII digits): Python's Decimal also takes NaN, Infinity and _."""

INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def wrapped(n: int, bits: int) -> int:
    """Java's narrowing of an integer to a signed `bits`-wide one: its low bits, two's complement."""
    size = 1 << bits
    return (n + size // 2) % size - size // 2


def connect_long(text: str) -> int | None:
    """`new BigDecimal(text).longValue()`, or None where BigDecimal refuses the text."""
    if not _BIG_DECIMAL.fullmatch(text):
        return None
    number = Decimal(text)
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)
    if exponent >= 64:
        return 0  # d * 10**e with e >= 64 is a multiple of 2**64: its low 64 bits are 0
    if -exponent > len(text):
        return 0  # |number| < 1 (checked before int() so that 1e-999999999 costs nothing)
    return wrapped(int(number), 64)


def connect_double(text: str) -> float | None:
    """`new BigDecimal(text).doubleValue()`, or None where BigDecimal refuses the text."""
    return float(Decimal(text)) if _BIG_DECIMAL.fullmatch(text) else None


class MaskField(Transformation):
    class_name = f"{PACKAGE}.MaskField"
    doc = 'Replaces field values by the empty value of their type (0, false, "", [] or {}) or a replacement.'
    CONFIG = config(
        key("fields", "LIST", "Fields to mask.", importance="HIGH", validator=non_empty_list),
        key(
            "replacement",
            "STRING",
            "Value for masked numeric or string fields instead of the empty value.",
            default=None,
            importance="LOW",
            validator=lambda _n, v: None if str(v) else "String must be non-empty",
        ),
        REPLACE_NULL_WITH_DEFAULT,
    )

    def _masked(self, v: str, field_type: str | None = None) -> tuple[str, str]:
        """(masked VARIANT, error text or NULL) for one field value (VARIANT); `field_type` is the SQL for the
        field's Connect type where a schema gives one (schemaless, JsonConverter reads every integer as a Long)."""
        t = x.kind(v)
        numeric = f"{t} IN ('TINYINT', 'SMALLINT', 'INT', 'BIGINT')"
        decimal = f"({t} LIKE 'DECIMAL%' OR {t} IN ('FLOAT', 'DOUBLE'))"
        null = x.is_null(v)
        replacement = self.config["replacement"]
        if replacement is None:
            masked = x.case(
                (null, v),
                (f"{t} = 'STRING'", x.variant_of("")),
                (numeric, x.variant_of(0)),
                (decimal, x.to_variant("CAST(0 AS DOUBLE)")),
                (f"{t} = 'BOOLEAN'", x.variant_of(False)),
                (f"{t} LIKE 'ARRAY%'", x.variant_of([])),
                (f"{t} LIKE 'OBJECT%'", x.variant_of({})),
            )
            error = x.when(
                f"NOT {null} AND {masked} IS NULL", x.concat("'Cannot mask value of type: '", x.java_class(v))
            )
            return f"coalesce({masked}, {v})", error
        as_long, as_double = connect_long(replacement), connect_double(replacement)
        masked = x.case(
            (null, v),
            (f"{t} = 'STRING'", x.to_variant(x.text(replacement))),
            (numeric, self._integer(as_long, field_type) if as_long is not None else x.NULL_VARIANT),
            (decimal, x.to_variant(x.lit(as_double)) if as_double is not None else x.NULL_VARIANT),
        )
        unconvertible = x.text(f"Unable to convert {replacement} (class java.lang.String) to a number")
        cannot = x.concat("'Cannot mask value of type class '", x.java_class(v), "' with custom replacement.'")
        error = x.case(
            (null, "CAST(NULL AS STRING)"),
            (f"({numeric} OR {decimal}) AND {masked} IS NULL", unconvertible),
            (f"{masked} IS NULL", cannot),
        )
        return f"coalesce({masked}, {v})", error

    @staticmethod
    def _integer(as_long: int, field_type: str | None) -> str:
        """The replacement for an integer field: cut to the width its schema gives, as Connect's Values does."""
        if field_type is None:
            return x.variant_of(as_long)
        narrower = [(f"{field_type} = {x.text(t)}", x.variant_of(wrapped(as_long, b))) for t, b in INT_BITS.items()]
        return x.case(*narrower[:-1], otherwise=x.variant_of(as_long))

    def _struct_masked(self, value: str, connect: dict[str, object]) -> str | None:
        """A struct field's masked value, as the general path masks the same value read from the VARIANT
        (a number's text is all the converter keeps of its type). None where the general path fails
        the record (bytes, structs, a replacement for a boolean, list or map or that is no number)."""
        kind, replacement = connect.get("type"), self.config["replacement"]
        masked: str | None = None
        if kind == "string":
            masked = x.text("" if replacement is None else str(replacement))
        elif isinstance(kind, str) and kind in INT_BITS:
            as_long = 0 if replacement is None else connect_long(str(replacement))
            if as_long is not None:
                masked = f"CAST({wrapped(as_long, INT_BITS[kind])} AS BIGINT)"
        elif kind in ("float", "double"):
            as_double = 0.0 if replacement is None else connect_double(str(replacement))
            if as_double is not None and math.isfinite(as_double):
                masked = x.lit(as_double)
        elif replacement is None and kind == "boolean":
            masked = "false"
        elif replacement is None and kind == "array":
            masked = f"filter({value}, {x.fresh('e')} -> false)"
        elif replacement is None and kind == "map":
            masked = f"map_filter({value}, ({x.fresh('k')}, {x.fresh('v')}) -> false)"
        return None if masked is None else x.when(f"{value} IS NOT NULL", masked)

    def _on_struct(self, rec: Rec, shape: Shape) -> Rec | None:
        """Connect's applyWithSchema on a typed struct: listed fields masked, the others and the schema
        as they are. None (the general path) for a struct that may be null (MaskField fails a null
        part) or a listed field `_struct_masked` declines."""
        if shape.nullable:
            return None
        names = set(self.config["fields"])
        fields = []
        for entry in shape.connect["fields"]:
            name = str(entry["field"])
            value: str | None = struct_field(shape, name)
            if name in names:
                value = self._struct_masked(struct_field(shape, name), entry)
            if value is None:
                return None
            fields.append((name, value))
        return reshaped(rec, self.which, shape, fields, shape.connect)

    def _fail_structs(self, rec: Rec, op: Operand, listed: str) -> Rec:
        """With a schema, a listed field that holds a Struct fails the record, as Connect cannot mask one (a Map,
        which the VARIANT holds alike, masks to {}): only the field's schema tells them apart."""
        assert op.schema is not None
        struct = "class org.apache.kafka.connect.data.Struct"
        if self.config["replacement"] is None:
            message = x.text(f"Cannot mask value of type: {struct}")
        else:
            message = x.text(f"Cannot mask value of type {struct} with custom replacement.")
        n = x.fresh("n")
        held = f"NOT {x.is_null(op.datum.field_named(n))}"
        is_struct = f"coalesce({_field_type(op.schema, n)}, '') = 'struct'"
        failing = f"NOT {op.schemaless} AND coalesce(exists({listed}, {n} -> {is_struct} AND {held}), false)"
        return rec.fail(failing, message, self.class_name)

    def apply(self, rec: Rec) -> Rec:
        if (masked_struct := on_struct(rec, self.which, self._on_struct)) is not None:
            return masked_struct
        op = operand(rec, self.which)
        rec = require_object(rec, op, "mask fields", self.class_name, allow_null=False)
        names = list(dict.fromkeys(self.config["fields"]))
        if op.schema is not None:
            rec = self._fail_structs(rec, op, listed(names))
        error = first_listed_error(op, names, lambda _n, v: self._masked(v)[1])
        rec = rec.fail(f"{error} IS NOT NULL", error, self.class_name)
        schema = op.schema

        def masked(k: str, v: str) -> str:
            return self._masked(v, None if schema is None else _field_type(schema, x.text(k)))[0]

        return edited(rec, op, self.which, each_listed(op, names, masked), None, keep_null=False, kind="variant")


def _field_type(schema: str, name: str) -> str:
    """The Connect type of the struct field named by SQL expression `name` in `schema`; NULL if absent."""
    return schemas.type_of(schemas.field_named(schema, name))


MaskFieldKey, MaskFieldValue = key_and_value(MaskField)

ALL: tuple[type[Transformation], ...] = (MaskFieldKey, MaskFieldValue)
