"""Type-changing SMTs: Cast and TimestampConverter. Caller: the transform catalog.

Values keep JsonConverter's payload encoding (Timestamp as epoch ms, Date as epoch days, Time as ms of
the day), so a cast or conversion never needs to know which converter produced the record. Date
patterns are Spark's (compatible with SimpleDateFormat for the usual letters) and apply in UTC.
"""

from __future__ import annotations

from typing import Any

from sparklink.api.config import Message
from sparklink.worker.transforms import exprs as x
from sparklink.worker.transforms import schemas
from sparklink.worker.transforms.plugin import REPLACE_NULL_WITH_DEFAULT, PluginConfigError, config, key
from sparklink.worker.transforms.record import Datum, Rec
from sparklink.worker.transforms.smt.base import (
    PACKAGE,
    Transformation,
    each_listed,
    edited,
    first_listed_error,
    key_and_value,
    operand,
    require_object,
)

OUTPUT_TYPES = ["INT8", "INT16", "INT32", "INT64", "FLOAT32", "FLOAT64", "BOOLEAN", "STRING"]
INPUT_TYPES = [*OUTPUT_TYPES, "BYTES"]
ALL_TYPES = [*INPUT_TYPES, "ARRAY", "MAP", "STRUCT"]
WHOLE_VALUE = ""
INTEGRAL_SQL = "('TINYINT', 'SMALLINT', 'INT', 'BIGINT')"
CONNECT_EXCEPTION = "org.apache.kafka.connect.errors.ConnectException"


def parse_cast_spec(mappings: list[str]) -> dict[str, str]:
    """Cast's `spec`: field:type pairs, or one type for the whole value; raises ValueError(Connect's text)."""
    if not mappings:
        raise ValueError("Must specify at least one field to cast.")
    out: dict[str, str] = {}
    whole = False
    for mapping in mappings:
        parts = mapping.split(":")
        if len(parts) > 2:
            raise ValueError(
                f"Invalid value [{', '.join(mappings)}] for configuration renames: Invalid rename mapping: {mapping}"
            )
        name, type_name = (WHOLE_VALUE, parts[0]) if len(parts) == 1 else (parts[0].strip(), parts[1])
        target = type_name.strip().upper()
        if target not in ALL_TYPES:
            raise ValueError(f"Invalid type found in casting spec: {type_name.strip()}")
        if target not in OUTPUT_TYPES:
            supported = ", ".join(OUTPUT_TYPES)
            raise ValueError(
                f"Cast transformation does not support casting to {target}; supported types are [{supported}]"
            )
        whole = whole or len(parts) == 1
        out[name] = target
    if whole and len(mappings) > 1:
        raise ValueError(
            "Cast transformations that specify a type to cast the entire value to may only specify a single cast in "
            "their spec"
        )
    return out


def _check_spec(_name: str, value: Any) -> str | None:
    try:
        parse_cast_spec(list(value))
    except ValueError as exc:
        return Message(str(exc))
    return None


def _input_type(v: str, schema: str | None) -> str:
    """Connect's Schema.Type of a value: from its schema when it has one, else from the VARIANT."""
    t = x.kind(v)
    inferred = x.case(
        (f"{t} IN ('TINYINT', 'SMALLINT', 'INT', 'BIGINT')", "'INT64'"),
        (f"({t} LIKE 'DECIMAL%' OR {t} IN ('FLOAT', 'DOUBLE'))", "'FLOAT64'"),
        (f"{t} = 'STRING'", "'STRING'"),
        (f"{t} = 'BOOLEAN'", "'BOOLEAN'"),
        (f"{t} = 'BINARY'", "'BYTES'"),
        (f"{t} LIKE 'ARRAY%'", "'ARRAY'"),
        (f"{t} LIKE 'OBJECT%'", "'MAP'"),
    )
    if schema is None:
        return inferred
    declared = f"upper({schemas.type_of(schema)})"
    declared = x.case(
        (f"{declared} = 'FLOAT'", "'FLOAT32'"), (f"{declared} = 'DOUBLE'", "'FLOAT64'"), otherwise=declared
    )
    return x.when(f"{schema} IS NULL", inferred, declared)


def cast_value(v: str, target: str, schema: str | None = None) -> tuple[str, str]:
    """(VARIANT cast to `target`, error text or NULL) following Cast.castValueToType."""
    t = x.kind(v)
    null = x.is_null(v)
    source = _input_type(v, schema)
    is_str, is_bool = f"{t} = 'STRING'", f"{t} = 'BOOLEAN'"
    as_text = f"try_variant_get({v}, '$', 'string')"
    as_bool = f"try_variant_get({v}, '$', 'boolean')"
    spark_type = schemas.PRIMITIVES[target.lower()]
    if target == "BOOLEAN":
        out = x.case(
            (is_bool, as_bool),
            (is_str, f"lower({as_text}) = 'true'"),
            otherwise=f"try_variant_get({v}, '$', 'bigint') != 0",
        )
    elif target == "STRING":
        out = x.when(f"{t} = 'BINARY'", f"base64(try_variant_get({v}, '$', 'binary'))", as_text)
    else:
        out = x.case(
            (is_bool, f"CAST(CASE WHEN {as_bool} THEN 1 ELSE 0 END AS {spark_type})"),
            (is_str, f"try_cast({as_text} AS {spark_type})"),
            otherwise=f"try_variant_get({v}, '$', '{spark_type}')",
        )
    unsupported = x.concat(
        "'Cast transformation does not support casting from '",
        f"coalesce({source}, 'UNKNOWN')",
        x.text(f"; supported types are [{', '.join(INPUT_TYPES)}]"),
    )
    out_of_range = x.concat("'Value ('", x.string_of(v), "') was out of range for requested data type'")
    error = x.case(
        (null, "CAST(NULL AS STRING)"),
        (f"NOT coalesce({source} IN ({', '.join(x.text(i) for i in INPUT_TYPES)}), false)", unsupported),
        (f"{out} IS NULL", out_of_range),
    )
    return x.when(f"NOT {null}", x.to_variant(out)), error


class Cast(Transformation):
    class_name = f"{PACKAGE}.Cast"
    doc = "Changes the type of fields, or of the whole key or value; bytes become base64 strings."
    CONFIG = config(
        key(
            "spec",
            "LIST",
            "field:type pairs (e.g. id:int64,flag:boolean), or one type for the whole key or value. Types: int8, "
            "int16, int32, int64, float32, float64, boolean, string (the only target for bytes).",
            importance="HIGH",
            validator=_check_spec,
        ),
        REPLACE_NULL_WITH_DEFAULT,
    )

    def configure(self) -> None:
        self.casts = parse_cast_spec(list(self.config["spec"]))
        by_target: dict[str, list[str]] = {}
        for name, target in self.casts.items():
            by_target.setdefault(target, []).append(name)
        # (target type, the fields cast to it): the cast is one CASE branch per target rather than per field.
        self.targets = list(by_target.items())

    def apply(self, rec: Rec) -> Rec:
        op = operand(rec, self.which)
        if WHOLE_VALUE in self.casts:
            target = self.casts[WHOLE_VALUE]
            value, error = cast_value(op.datum.variant(), target, op.schema)
            rec = rec.fail(f"{error} IS NOT NULL", error, self.class_name)
            schema = None
            if op.schema is not None:
                new = schemas.optional(
                    x.variant_of(schemas.primitive(target.lower(), False)), schemas.is_optional(op.schema)
                )
                schema = x.when(f"{op.schema} IS NOT NULL", new)
            return rec.with_datum(self.which, Datum(value, "variant", schema))
        rec = require_object(rec, op, "cast types", self.class_name, allow_null=True)
        names = list(self.casts)
        part_schema = op.schema

        def cast_error(name: str, v: str) -> str:
            """cast_value's error for the field named by SQL `name` (a lambda variable over the listed
            names): a CASE over the distinct targets."""
            field_schema = None if part_schema is None else schemas.field_named(part_schema, name)
            targets = [(x.in_list(name, fields), cast_value(v, t, field_schema)[1]) for t, fields in self.targets]
            return x.case(*targets)

        error = first_listed_error(op, names, cast_error)
        rec = rec.fail(f"NOT {op.datum.is_null()} AND {error} IS NOT NULL", error, self.class_name)

        def cast_field(name: str, v: str) -> str:
            """Field `name` cast to its own target (each_listed builds each field's edit by itself)."""
            field_schema = None if part_schema is None else schemas.field(part_schema, name)
            return cast_value(v, self.casts[name], field_schema)[0]

        obj = each_listed(op, names, cast_field)
        schema = None
        if op.schema is not None:
            f = x.fresh("f")
            branches = []
            for name, target in self.casts.items():
                entry = x.variant_of({**schemas.primitive(target.lower(), False), "field": name})
                branches.append(
                    (f"{schemas.field_name(f)} = {x.text(name)}", schemas.optional(entry, schemas.is_optional(f)))
                )
            retyped = x.case(*branches, otherwise=f)
            schema = schemas.with_fields(op.schema, f"transform({schemas.fields(op.schema)}, {f} -> {retyped})")
        return edited(rec, op, self.which, obj, schema, kind="variant")


STRING, UNIX, DATE, TIME, TIMESTAMP = "string", "unix", "Date", "Time", "Timestamp"
DAY_MS = 86_400_000


class TimestampConverter(Transformation):
    class_name = f"{PACKAGE}.TimestampConverter"
    doc = "Converts a timestamp field, or the whole key or value, between epoch numbers, text and Connect's types."
    CONFIG = config(
        key(
            "field",
            "STRING",
            "The field holding the timestamp; empty when the whole key or value is the timestamp.",
            default="",
            importance="HIGH",
        ),
        key(
            "target.type",
            "STRING",
            "What to convert to: string, unix, Date, Time or Timestamp.",
            importance="HIGH",
            validator=lambda _n, v: (
                None
                if v in (STRING, UNIX, DATE, TIME, TIMESTAMP)
                else "String must be one of: string, unix, Date, Time, Timestamp"
            ),
        ),
        key(
            "format",
            "STRING",
            "Date pattern (SimpleDateFormat letters, UTC) for reading text timestamps and writing target.type=string.",
            default="",
        ),
        key(
            "unix.precision",
            "STRING",
            "Unit of epoch numbers read or written: seconds, milliseconds, microseconds or nanoseconds "
            "(conversions keep millisecond precision).",
            default="milliseconds",
            importance="LOW",
            validator=lambda _n, v: (
                None
                if v in ("nanoseconds", "microseconds", "milliseconds", "seconds")
                else "String must be one of: nanoseconds, microseconds, milliseconds, seconds"
            ),
        ),
        REPLACE_NULL_WITH_DEFAULT,
    )

    def configure(self) -> None:
        self.target = str(self.config["target.type"])
        self.format = str(self.config["format"]).strip()
        self.precision = str(self.config["unix.precision"])
        if self.target == STRING and not self.format:
            raise PluginConfigError(
                "TimestampConverter requires format option to be specified when using string timestamps"
            )

    def _millis(self, v: str, source: str) -> tuple[str, str]:
        """(epoch ms as bigint, error text) for a value of a known input representation."""
        t = x.kind(v)
        number = f"try_variant_get({v}, '$', 'bigint')"
        as_text = f"try_variant_get({v}, '$', 'string')"
        unix = {
            "seconds": f"({number} * 1000)",
            "milliseconds": number,
            "microseconds": f"({number} DIV 1000)",
            "nanoseconds": f"({number} DIV 1000000)",
        }[self.precision]
        parsed = f"unix_millis({x.parse_utc(as_text, self.format)})" if self.format else "CAST(NULL AS BIGINT)"
        millis = x.case(
            (f"{source} = {x.text(STRING)}", parsed),
            (f"{source} = {x.text(UNIX)}", unix),
            (f"{source} = {x.text(TIMESTAMP)}", number),
            (f"{source} = {x.text(DATE)}", f"({number} * {DAY_MS})"),
            (f"{source} = {x.text(TIME)}", number),
        )
        found = x.java_class(v)
        is_string, is_unix = f"{source} = {x.text(STRING)}", f"{source} = {x.text(UNIX)}"
        error = x.case(
            (
                f"{is_string} AND {t} != 'STRING'",
                x.concat("'Expected string timestamp to be a String, but found class '", found),
            ),
            (
                f"{is_unix} AND {t} NOT IN {INTEGRAL_SQL}",
                x.concat("'Expected Unix timestamp to be a Long, but found class '", found),
            ),
            (
                f"{is_string} AND {millis} IS NULL",
                x.concat(
                    "'Could not parse timestamp: value ('", as_text, x.text(f") does not match pattern ({self.format})")
                ),
            ),
            (
                f"{millis} IS NULL",
                x.concat("'TimestampConverter does not support class '", found, "' objects as timestamps'"),
            ),
        )
        return millis, error

    def _output(self, millis: str) -> str:
        if self.target == STRING:
            return x.to_variant(x.utc_text(f"timestamp_millis({millis})", self.format))
        if self.target == UNIX:
            scaled = {
                "seconds": f"({millis} DIV 1000)",
                "milliseconds": millis,
                "microseconds": f"({millis} * 1000)",
                "nanoseconds": f"({millis} * 1000000)",
            }[self.precision]
            return x.to_variant(scaled)
        if self.target == DATE:
            return x.to_variant(f"CAST(floor({millis} / {DAY_MS}) AS INT)")
        if self.target == TIME:
            return x.to_variant(f"CAST(pmod({millis}, {DAY_MS}) AS INT)")
        return x.to_variant(millis)

    def _target_schema(self, optional: str) -> str:
        base = {
            STRING: schemas.primitive("string"),
            UNIX: schemas.primitive("int64"),
            DATE: schemas.logical(schemas.DATE),
            TIME: schemas.logical(schemas.TIME),
            TIMESTAMP: schemas.timestamp(),
        }[self.target]
        return schemas.optional(x.variant_of(base), optional)

    def _source(self, v: str, schema: str | None) -> str:
        """Which representation a value has: from its schema, else inferred from the value."""
        t = x.kind(v)
        inferred = x.case((f"{t} = 'STRING'", x.text(STRING)), (f"{t} IN {INTEGRAL_SQL}", x.text(UNIX)))
        if schema is None:
            return inferred
        name, type_ = schemas.name_of(schema), schemas.type_of(schema)
        declared = x.case(
            (f"{name} = {x.text(schemas.TIMESTAMP)}", x.text(TIMESTAMP)),
            (f"{name} = {x.text(schemas.DATE)}", x.text(DATE)),
            (f"{name} = {x.text(schemas.TIME)}", x.text(TIME)),
            (f"{type_} = 'string'", x.text(STRING)),
            (f"{type_} = 'int64'", x.text(UNIX)),
        )
        return x.when(f"{schema} IS NULL", inferred, declared)

    def _convert(self, rec: Rec, v: str, schema: str | None) -> tuple[Rec, str]:
        source = self._source(v, schema)
        millis, error = self._millis(v, source)
        present = f"NOT {x.is_null(v)}"
        if schema is not None:
            unknown = f"{schema} IS NOT NULL AND {source} IS NULL"
            message = x.concat(
                "'Schema '", f"to_json({schema})", "' does not correspond to a known timestamp type format'"
            )
            rec = rec.fail(f"{present} AND {unknown}", message, self.class_name, exception=CONNECT_EXCEPTION)
        rec = rec.fail(f"{present} AND {error} IS NOT NULL", error, self.class_name)
        return rec, x.when(present, self._output(millis))

    def apply(self, rec: Rec) -> Rec:
        op = operand(rec, self.which)
        name = str(self.config["field"])
        if not name:
            rec, value = self._convert(rec, op.datum.variant(), op.schema)
            schema = None
            if op.schema is not None:
                schema = x.when(f"{op.schema} IS NOT NULL", self._target_schema(schemas.is_optional(op.schema)))
            return rec.with_datum(self.which, Datum.of_variant(value, schema))
        rec = require_object(rec, op, "converting timestamp formats", self.class_name, allow_null=True)
        field_schema = schemas.field(op.schema, name) if op.schema is not None else None
        rec, value = self._convert(rec, op.datum.field(name), field_schema)
        obj = x.object_put(op.datum.variant(), name, f"coalesce({value}, {x.NULL_VARIANT})")
        schema = None
        if op.schema is not None:
            f = x.fresh("f")
            entry = schemas.named(self._target_schema(schemas.is_optional(f)), x.text(name))
            retyped = x.when(f"{schemas.field_name(f)} = {x.text(name)}", entry, f)
            schema = schemas.with_fields(op.schema, f"transform({schemas.fields(op.schema)}, {f} -> {retyped})")
        return edited(rec, op, self.which, obj, schema, kind="variant")


CastKey, CastValue = key_and_value(Cast)
TimestampConverterKey, TimestampConverterValue = key_and_value(TimestampConverter)
ALL: tuple[type[Transformation], ...] = (CastKey, CastValue, TimestampConverterKey, TimestampConverterValue)
