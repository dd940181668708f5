"""Each SMT and predicate against the cases of Apache Kafka's own unit tests (connect/transforms/src/test),
run as Spark expressions: input record -> expected output record, Connect's error message, or dropped."""

from __future__ import annotations

from typing import Any

import pytest

from tests.transforms.harness import PKG, Case, check, run_cases

INSERT_ALL = {
    "topic.field": "topic_field!",
    "partition.field": "partition_field",
    "timestamp.field": "timestamp_field?",
    "static.field": "instance_id",
    "static.value": "my-instance-id",
}
SCHEMAS_ON = {"key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true"}


def with_props(cls: str, props: dict[str, str], **extra: str) -> dict[str, str]:
    config = {"transforms": "t", "transforms.t.type": f"{PKG}.{cls}", **extra}
    config.update({f"transforms.t.{k}": v for k, v in props.items()})
    return config


def filter_when(predicate: str, **props: str) -> dict[str, str]:
    """A Filter applied where the predicate holds."""
    config = with_props("Filter", {}, **{"transforms.t.predicate": "p", "predicates": "p"})
    config["predicates.p.type"] = f"{PKG}.predicates.{predicate}"
    config.update({f"predicates.p.{k}": v for k, v in props.items()})
    return config


def envelope(schema: dict[str, Any], payload: Any) -> dict[str, Any]:
    return {"schema": schema, "payload": payload}


def struct(*fields: tuple[str, str, bool], **extra: Any) -> dict[str, Any]:
    return {
        "type": "struct",
        "fields": [{"type": t, "optional": o, "field": n} for n, t, o in fields],
        "optional": False,
        **extra,
    }


MAGIC_SCHEMA = struct(("magic", "int64", True), name="name", version=1, doc="doc")
ABC_SCHEMA = struct(
    ("dont", "string", False), ("abc", "int32", False), ("foo", "boolean", False), ("etc", "string", False)
)

CASES = [
    # ---------------------------------------------------------------- InsertField (InsertFieldTest)
    Case(
        "InsertField schemalessInsertConfiguredFields",
        with_props("InsertField$Value", INSERT_ALL),
        value={"magic": 42},
        timestamp=123,
        expect={
            "value": {
                "magic": 42,
                "topic_field": "test",
                "partition_field": 0,
                "timestamp_field": 123,
                "instance_id": "my-instance-id",
            }
        },
    ),
    Case(
        "InsertField copySchemaAndInsertConfiguredFields",
        with_props("InsertField$Value", INSERT_ALL, **SCHEMAS_ON),
        value=envelope(MAGIC_SCHEMA, {"magic": 42}),
        timestamp=789,
        expect={
            "value": {
                "magic": 42,
                "topic_field": "test",
                "partition_field": 0,
                "timestamp_field": 789,
                "instance_id": "my-instance-id",
            },
            "value_schema": {
                **MAGIC_SCHEMA,
                "fields": [
                    {"type": "int64", "optional": True, "field": "magic"},
                    {"type": "string", "optional": False, "field": "topic_field"},
                    {"type": "int32", "optional": True, "field": "partition_field"},
                    {
                        "type": "int64",
                        "optional": True,
                        "name": "org.apache.kafka.connect.data.Timestamp",
                        "version": 1,
                        "field": "timestamp_field",
                    },
                    {"type": "string", "optional": True, "field": "instance_id"},
                ],
            },
        },
    ),
    Case(
        "InsertField insertConfiguredFieldsIntoTombstoneEventWithoutSchemaLeavesValueUnchanged",
        with_props("InsertField$Value", INSERT_ALL),
        value=None,
        expect={"value": None},
    ),
    Case(
        "InsertField insertConfiguredFieldsIntoTombstoneEventWithSchemaLeavesValueUnchanged",
        with_props("InsertField$Value", INSERT_ALL, **SCHEMAS_ON),
        value=envelope(MAGIC_SCHEMA, None),
        expect={"value": None, "value_schema": MAGIC_SCHEMA},
    ),
    Case(
        "InsertField insertKeyFieldsIntoTombstoneEvent",
        with_props("InsertField$Key", INSERT_ALL),
        key={"magic": 42},
        value=None,
        timestamp=None,
        expect={
            "key": {"magic": 42, "topic_field": "test", "partition_field": 0, "instance_id": "my-instance-id"},
            "value": None,
        },
    ),
    Case(
        "InsertField insertIntoNullKeyLeavesRecordUnchanged",
        with_props("InsertField$Key", INSERT_ALL),
        key=None,
        value={"magic": 42},
        expect={"key": None, "value": {"magic": 42}},
    ),
    Case(
        "InsertField topLevelStructRequired",
        with_props("InsertField$Value", {"topic.field": "topic_field"}, **SCHEMAS_ON),
        value=envelope({"type": "int32", "optional": False}, 42),
        expect={"error": "Only Struct objects supported for [field insertion], found: java.lang.Long"},
    ),
    Case(
        "InsertField schemaless value must be a Map",
        with_props("InsertField$Value", {"topic.field": "t"}),
        value="text",
        expect={
            "error": "Only Map objects supported in absence of schema for [field insertion], found: java.lang.String"
        },
    ),
    Case(
        "InsertField offset.field on a sink record",
        with_props("InsertField$Value", {"offset.field": "off"}),
        value={"a": 1},
        offset=17,
        expect={"value": {"a": 1, "off": 17}},
    ),
    # ---------------------------------------------------------------- ReplaceField (ReplaceFieldTest)
    Case(
        "ReplaceField schemaless",
        with_props("ReplaceField$Value", {"exclude": "dont", "renames": "abc:xyz,foo:bar"}),
        value={"dont": "whatever", "abc": 42, "foo": True, "etc": "etc"},
        expect={"value": {"xyz": 42, "bar": True, "etc": "etc"}},
    ),
    Case(
        "ReplaceField withSchema",
        with_props("ReplaceField$Value", {"include": "abc,foo", "renames": "abc:xyz,foo:bar"}, **SCHEMAS_ON),
        value=envelope(ABC_SCHEMA, {"dont": "whatever", "abc": 42, "foo": True, "etc": "etc"}),
        expect={
            "value": {"xyz": 42, "bar": True},
            "value_schema": struct(("xyz", "int32", False), ("bar", "boolean", False)),
        },
    ),
    Case(
        "ReplaceField tombstoneSchemaless",
        with_props("ReplaceField$Value", {"include": "abc,foo", "renames": "abc:xyz,foo:bar"}),
        value=None,
        expect={"value": None},
    ),
    Case(
        "ReplaceField tombstoneWithSchema",
        with_props("ReplaceField$Value", {"include": "abc,foo", "renames": "abc:xyz,foo:bar"}, **SCHEMAS_ON),
        value=envelope(ABC_SCHEMA, None),
        expect={"value": None, "value_schema": ABC_SCHEMA},
    ),
    Case(
        "ReplaceField$Key include",
        with_props("ReplaceField$Key", {"include": "abc"}),
        key={"abc": 1, "x": 2},
        value={"v": 1},
        expect={"key": {"abc": 1}, "value": {"v": 1}},
    ),
    # ---------------------------------------------------------------- MaskField (MaskFieldTest)
    Case(
        "MaskField testSchemaless",
        with_props("MaskField$Value", {"fields": "bool,int,long,double,string,list,map"}),
        value={
            "magic": 42,
            "bool": True,
            "int": 42,
            "long": 42,
            "double": 42.0,
            "string": "55.121.20.20",
            "list": [42],
            "map": {"key": "value"},
        },
        expect={
            "value": {
                "magic": 42,
                "bool": False,
                "int": 0,
                "long": 0,
                "double": 0.0,
                "string": "",
                "list": [],
                "map": {},
            }
        },
    ),
    Case(
        "MaskField testSchemalessWithReplacement int",
        with_props("MaskField$Value", {"fields": "int", "replacement": "123"}),
        value={"int": 42},
        expect={"value": {"int": 123}},
    ),
    Case(
        "MaskField testSchemalessWithReplacement double",
        with_props("MaskField$Value", {"fields": "double", "replacement": "123.0"}),
        value={"double": 42.5},
        expect={"value": {"double": 123.0}},
    ),
    Case(
        "MaskField testSchemalessWithReplacement string",
        with_props("MaskField$Value", {"fields": "string", "replacement": "123"}),
        value={"string": "55.121.20.20"},
        expect={"value": {"string": "123"}},
    ),
    Case(
        "MaskField testSchemalessUnsupportedReplacementType bool",
        with_props("MaskField$Value", {"fields": "bool", "replacement": "false"}),
        value={"bool": True},
        expect={"error": "Cannot mask value of type"},
    ),
    Case(
        "MaskField testSchemalessUnsupportedReplacementType list",
        with_props("MaskField$Value", {"fields": "list", "replacement": "123"}),
        value={"list": [42]},
        expect={"error": "Cannot mask value of type"},
    ),
    # Beyond MaskFieldTest: a replacement is read as Connect's Values reads it (new BigDecimal(text), then
    # the field's width), checked against connect-transforms 4.3.1 itself.
    Case(
        "MaskField schemaless a fractional replacement truncates for an integer",
        with_props("MaskField$Value", {"fields": "int,long", "replacement": "1.5"}),
        value={"int": 42, "long": 7_000_000_000},
        expect={"value": {"int": 1, "long": 1}},
    ),
    Case(
        "MaskField schemaless an exponent replacement",
        with_props("MaskField$Value", {"fields": "int,double", "replacement": "1e3"}),
        value={"int": 42, "double": 42.5},
        expect={"value": {"int": 1000, "double": 1000.0}},
    ),
    Case(
        "MaskField schemaless a replacement no BigDecimal reads",
        with_props("MaskField$Value", {"fields": "int", "replacement": "NaN"}),
        value={"int": 42},
        expect={"error": "Unable to convert NaN (class java.lang.String) to a number"},
    ),
    Case(
        "MaskField withSchema a replacement is cut to the field's width",
        with_props("MaskField$Value", {"fields": "i8,i16,i32,i64", "replacement": "300"}, **SCHEMAS_ON),
        value=envelope(
            struct(("i8", "int8", False), ("i16", "int16", False), ("i32", "int32", False), ("i64", "int64", False)),
            {"i8": 1, "i16": 2, "i32": 3, "i64": 4},
        ),
        expect={"value": {"i8": 44, "i16": 300, "i32": 300, "i64": 300}},
    ),
    Case(
        "MaskField withSchema a replacement beyond a long keeps its low bits",
        with_props("MaskField$Value", {"fields": "i32,i64", "replacement": "99999999999999999999"}, **SCHEMAS_ON),
        value=envelope(struct(("i32", "int32", False), ("i64", "int64", False)), {"i32": 1, "i64": 2}),
        expect={"value": {"i32": 1661992959, "i64": 7766279631452241919}},
    ),
    Case(
        "MaskField testWithSchema",
        with_props("MaskField$Value", {"fields": "bool,int,string,array,map"}, **SCHEMAS_ON),
        value=envelope(
            {
                "type": "struct",
                "optional": False,
                "fields": [
                    {"type": "int32", "optional": False, "field": "magic"},
                    {"type": "boolean", "optional": False, "field": "bool"},
                    {"type": "int32", "optional": False, "field": "int"},
                    {"type": "string", "optional": False, "field": "string"},
                    {
                        "type": "array",
                        "items": {"type": "int32", "optional": False},
                        "optional": False,
                        "field": "array",
                    },
                    {
                        "type": "map",
                        "keys": {"type": "string", "optional": False},
                        "values": {"type": "string", "optional": False},
                        "optional": False,
                        "field": "map",
                    },
                ],
            },
            {"magic": 42, "bool": True, "int": 42, "string": "hmm", "array": [1, 2, 3], "map": {"what": "what"}},
        ),
        expect={"value": {"magic": 42, "bool": False, "int": 0, "string": "", "array": [], "map": {}}},
    ),
    Case(
        "MaskField withSchema a struct field cannot be masked (a map field can)",
        with_props("MaskField$Value", {"fields": "inner"}, **SCHEMAS_ON),
        value=envelope(
            {
                "type": "struct",
                "optional": False,
                "fields": [
                    {
                        "type": "struct",
                        "optional": True,
                        "field": "inner",
                        "fields": [{"type": "int32", "optional": True, "field": "a"}],
                    },
                ],
            },
            {"inner": {"a": 1}},
        ),
        expect={"error": "Cannot mask value of type: class org.apache.kafka.connect.data.Struct"},
    ),
    # ---------------------------------------------------------------- ValueToKey (ValueToKeyTest)
    Case(
        "ValueToKey schemaless",
        with_props("ValueToKey", {"fields": "a,b"}),
        value={"a": 1, "b": 2, "c": 3},
        expect={"key": {"a": 1, "b": 2}, "key_schema": None, "value": {"a": 1, "b": 2, "c": 3}},
    ),
    Case(
        "ValueToKey withSchema",
        with_props("ValueToKey", {"fields": "a,b"}, **SCHEMAS_ON),
        value=envelope(
            struct(("a", "int32", False), ("b", "int32", False), ("c", "int32", False)), {"a": 1, "b": 2, "c": 3}
        ),
        expect={"key": {"a": 1, "b": 2}, "key_schema": struct(("a", "int32", False), ("b", "int32", False))},
    ),
    Case(
        "ValueToKey nonExistingField",
        with_props("ValueToKey", {"fields": "not_exist"}, **SCHEMAS_ON),
        value=envelope(struct(("a", "int32", False)), {"a": 1}),
        expect={"error": "Field does not exist: not_exist"},
    ),
    # Kafka 4.4: field.syntax.version for ValueToKey; a key field keeps the dotted name it was asked by.
    Case(
        "ValueToKey schemalessNestedPath",
        with_props("ValueToKey", {"fields": "a.b,c", "field.syntax.version": "V2"}),
        value={"a": {"b": 1, "x": 9}, "c": 2},
        expect={"key": {"a.b": 1, "c": 2}, "key_schema": None},
    ),
    Case(
        "ValueToKey V1 reads a dotted name at the top level",
        with_props("ValueToKey", {"fields": "a.b"}),
        value={"a.b": 3, "a": {"b": 1}},
        expect={"key": {"a.b": 3}},
    ),
    Case(
        "ValueToKey withSchemaAndNestedPath",
        with_props("ValueToKey", {"fields": "a.b,c", "field.syntax.version": "V2"}, **SCHEMAS_ON),
        value=envelope(
            {
                "type": "struct",
                "optional": False,
                "fields": [
                    {**struct(("b", "int32", False), ("x", "int32", False)), "field": "a"},
                    {"type": "int32", "optional": False, "field": "c"},
                ],
            },
            {"a": {"b": 1, "x": 9}, "c": 2},
        ),
        expect={"key": {"a.b": 1, "c": 2}, "key_schema": struct(("a.b", "int32", False), ("c", "int32", False))},
    ),
    Case(
        "ValueToKey nonExistingNestedFieldWithSchema",
        with_props("ValueToKey", {"fields": "a.nope", "field.syntax.version": "V2"}, **SCHEMAS_ON),
        value=envelope(
            {"type": "struct", "optional": False, "fields": [{**struct(("b", "int32", False)), "field": "a"}]},
            {"a": {"b": 1}},
        ),
        expect={"error": "Field does not exist: a.nope"},
    ),
    # ---------------------------------------------------------------- ExtractField (ExtractFieldTest)
    Case(
        "ExtractField schemaless",
        with_props("ExtractField$Key", {"field": "magic"}),
        key={"magic": 42},
        expect={"key": 42, "key_schema": None},
    ),
    Case(
        "ExtractField schemalessAndNestedPath",
        with_props("ExtractField$Key", {"field": "magic.foo", "field.syntax.version": "V2"}),
        key={"magic": {"foo": 42}},
        expect={"key": 42},
    ),
    Case(
        "ExtractField nullSchemaless",
        with_props("ExtractField$Key", {"field": "magic"}),
        key=None,
        expect={"key": None},
    ),
    Case(
        "ExtractField withSchema",
        with_props("ExtractField$Key", {"field": "magic"}, **SCHEMAS_ON),
        key=envelope(struct(("magic", "int32", False)), {"magic": 42}),
        expect={"key": 42, "key_schema": {"type": "int32", "optional": False}},
    ),
    Case(
        "ExtractField withSchemaAndNestedPath",
        with_props("ExtractField$Key", {"field": "magic.foo", "field.syntax.version": "V2"}, **SCHEMAS_ON),
        key=envelope(
            {"type": "struct", "optional": False, "fields": [{**struct(("foo", "int32", False)), "field": "magic"}]},
            {"magic": {"foo": 42}},
        ),
        expect={"key": 42, "key_schema": {"type": "int32", "optional": False}},
    ),
    Case(
        "ExtractField nonExistentFieldSchemalessShouldReturnNull",
        with_props("ExtractField$Key", {"field": "nonexistent"}),
        key={"magic": 42},
        expect={"key": None},
    ),
    Case(
        "ExtractField nonExistentNestedFieldSchemalessShouldReturnNull",
        with_props("ExtractField$Key", {"field": "magic.nonexistent", "field.syntax.version": "V2"}),
        key={"magic": {"foo": 42}},
        expect={"key": None},
    ),
    Case(
        "ExtractField nonExistentFieldWithSchemaShouldFail",
        with_props("ExtractField$Key", {"field": "nonexistent"}, **SCHEMAS_ON),
        key=envelope(struct(("magic", "int32", False)), {"magic": 42}),
        expect={"error": "Unknown field: nonexistent"},
    ),
    # ---------------------------------------------------------------- HoistField (HoistFieldTest)
    Case(
        "HoistField schemaless",
        with_props("HoistField$Key", {"field": "magic"}),
        key=42,
        expect={"key": {"magic": 42}, "key_schema": None},
    ),
    Case(
        "HoistField withSchema",
        with_props("HoistField$Key", {"field": "magic"}, **SCHEMAS_ON),
        key=envelope({"type": "int32", "optional": False}, 42),
        expect={"key": {"magic": 42}, "key_schema": struct(("magic", "int32", False))},
    ),
    # ---------------------------------------------------------------- Cast (CastTest)
    Case(
        "Cast castWholeRecordValueSchemalessInt8",
        with_props("Cast$Value", {"spec": "int8"}),
        value=42,
        expect={"value": 42},
    ),
    Case(
        "Cast castWholeRecordValueSchemalessString",
        with_props("Cast$Value", {"spec": "string"}),
        value=42,
        expect={"value": "42"},
    ),
    Case(
        "Cast castWholeRecordValueSchemalessBoolean",
        with_props("Cast$Value", {"spec": "boolean"}),
        value=42,
        expect={"value": True},
    ),
    Case(
        "Cast castWholeRecordValueSchemalessFloat64",
        with_props("Cast$Value", {"spec": "float64"}),
        value=42,
        expect={"value": 42.0},
    ),
    Case(
        "Cast castWholeRecordKeySchemalessStringToInt32",
        with_props("Cast$Key", {"spec": "int32"}),
        key="42",
        expect={"key": 42},
    ),
    Case(
        "Cast castFieldsSchemaless",
        with_props(
            "Cast$Value",
            {
                "spec": "int8:int16,int16:int32,int32:int64,int64:boolean,"
                "float32:float64,float64:boolean,boolean:int8,string:int32"
            },
        ),
        value={
            "int8": 8,
            "int16": 16,
            "int32": 32,
            "int64": 64,
            "float32": 32.0,
            "float64": -64.0,
            "boolean": True,
            "string": "42",
            "optional": None,
        },
        expect={
            "value": {
                "int8": 8,
                "int16": 16,
                "int32": 32,
                "int64": True,
                "float32": 32.0,
                "float64": True,
                "boolean": 1,
                "string": 42,
                "optional": None,
            }
        },
    ),
    Case(
        "Cast castFieldsWithSchema",
        with_props("Cast$Value", {"spec": "a:string,b:float64"}, **SCHEMAS_ON),
        value=envelope(
            struct(("a", "int32", False), ("b", "int32", True), ("c", "string", False)), {"a": 42, "b": 7, "c": "x"}
        ),
        expect={
            "value": {"a": "42", "b": 7.0, "c": "x"},
            "value_schema": struct(("a", "string", False), ("b", "double", True), ("c", "string", False)),
        },
    ),
    Case(
        "Cast castWholeRecordValueWithSchemaString",
        with_props("Cast$Value", {"spec": "string"}, **SCHEMAS_ON),
        value=envelope({"type": "int32", "optional": False}, 42),
        expect={"value": "42", "value_schema": {"type": "string", "optional": False}},
    ),
    Case(
        "Cast castFieldsSchemaless unsupported MAP",
        with_props("Cast$Value", {"spec": "m:string"}),
        value={"m": {"a": 1}},
        expect={"error": "Cast transformation does not support casting from MAP"},
    ),
    Case(
        "Cast castWholeRecordValueSchemaless unparsable string",
        with_props("Cast$Value", {"spec": "int32"}),
        value="forty-two",
        expect={"error": "Value (forty-two) was out of range for requested data type"},
    ),
    # ---------------------------------------------------------------- TimestampConverter (TimestampConverterTest)
    Case(
        "TimestampConverter testSchemalessUnixToString",
        with_props("TimestampConverter$Value", {"target.type": "string", "format": "yyyy MM dd HH mm ss SSS"}),
        value=86401234,
        expect={"value": "1970 01 02 00 00 01 234"},
    ),
    Case(
        "TimestampConverter testSchemalessStringToUnix",
        with_props("TimestampConverter$Value", {"target.type": "unix", "format": "yyyy MM dd HH mm ss SSS"}),
        value="1970 01 02 00 00 01 234",
        expect={"value": 86401234},
    ),
    Case(
        "TimestampConverter testSchemalessUnixToTimestamp",
        with_props("TimestampConverter$Value", {"target.type": "Timestamp"}),
        value=86401234,
        expect={"value": 86401234},
    ),
    Case(
        "TimestampConverter testSchemalessUnixToDate",
        with_props("TimestampConverter$Value", {"target.type": "Date"}),
        value=86401234,
        expect={"value": 1},
    ),
    Case(
        "TimestampConverter testSchemalessUnixToTime",
        with_props("TimestampConverter$Value", {"target.type": "Time"}),
        value=86401234,
        expect={"value": 1234},
    ),
    Case(
        "TimestampConverter testSchemalessUnixSecondsToTimestamp",
        with_props("TimestampConverter$Value", {"target.type": "Timestamp", "unix.precision": "seconds"}),
        value=86401,
        expect={"value": 86401000},
    ),
    Case(
        "TimestampConverter testSchemalessFieldConversion",
        with_props("TimestampConverter$Value", {"field": "ts", "target.type": "string", "format": "yyyy-MM-dd"}),
        value={"ts": 86401234, "other": "x"},
        expect={"value": {"ts": "1970-01-02", "other": "x"}},
    ),
    Case(
        "TimestampConverter testWithSchemaTimestampToUnix",
        with_props("TimestampConverter$Value", {"target.type": "unix"}, **SCHEMAS_ON),
        value=envelope(
            {"type": "int64", "optional": False, "name": "org.apache.kafka.connect.data.Timestamp", "version": 1},
            86401234,
        ),
        expect={"value": 86401234, "value_schema": {"type": "int64", "optional": False}},
    ),
    Case(
        "TimestampConverter unparsable string",
        with_props("TimestampConverter$Value", {"target.type": "unix", "format": "yyyy-MM-dd"}),
        value="not a date",
        expect={"error": "Could not parse timestamp: value (not a date) does not match pattern (yyyy-MM-dd)"},
    ),
    # ---------------------------------------------------------------- routers (RegexRouterTest, TimestampRouterTest)
    *[
        Case(
            f"RegexRouter {name}",
            with_props("RegexRouter", {"regex": regex, "replacement": replacement}),
            topic=topic,
            expect={"topic": out},
        )
        for name, regex, replacement, topic, out in [
            ("staticReplacement", "foo", "bar", "foo", "bar"),
            ("doesntMatch", "foo", "bar", "orig", "orig"),
            ("identity", "(.*)", "$1", "orig", "orig"),
            ("addPrefix", "(.*)", "prefix-$1", "orig", "prefix-orig"),
            ("addSuffix", "(.*)", "$1-suffix", "orig", "orig-suffix"),
            ("slice", r"(.*)-(\d\d\d\d\d\d\d\d)", "$1", "index-20160117", "index"),
        ]
    ],
    Case(
        "TimestampRouter defaultConfiguration",
        with_props("TimestampRouter", {}),
        timestamp=1483425001864,
        expect={"topic": "test-20170103"},
    ),
    Case(
        "TimestampRouter missing timestamp",
        with_props("TimestampRouter", {}),
        timestamp=None,
        expect={"error": "Timestamp missing on record"},
    ),
    # ---------------------------------------------------------------- Flatten (FlattenTest)
    Case(
        "Flatten testNestedMapWithDelimiter",
        with_props("Flatten$Value", {"delimiter": "#"}),
        value={"A": {"B": {"int32": 32, "float64": 64.0, "boolean": True, "string": "stringy"}}},
        expect={"value": {"A#B#int32": 32, "A#B#float64": 64.0, "A#B#boolean": True, "A#B#string": "stringy"}},
    ),
    Case(
        "Flatten testOptionalFieldMap",
        with_props("Flatten$Value", {}),
        value={"B": {"opt_int32": None}},
        expect={"value": {"B.opt_int32": None}},
    ),
    Case(
        "Flatten arrays are not modified",
        with_props("Flatten$Value", {}),
        value={"a": [1, {"b": 2}], "c": {"d": [3]}},
        expect={"value": {"a": [1, {"b": 2}], "c.d": [3]}},
    ),
    Case(
        "Flatten topLevelMapRequired",
        with_props("Flatten$Value", {}),
        value=42,
        expect={"error": "Only Map objects supported in absence of schema for [flattening], found: java.lang.Long"},
    ),
    Case(
        "Flatten testNestedStruct",
        with_props("Flatten$Value", {}, **SCHEMAS_ON),
        value=envelope(
            {
                "type": "struct",
                "optional": False,
                "fields": [
                    {
                        "type": "struct",
                        "optional": False,
                        "field": "A",
                        "fields": [{**struct(("int32", "int32", False), ("string", "string", False)), "field": "B"}],
                    }
                ],
            },
            {"A": {"B": {"int32": 32, "string": "stringy"}}},
        ),
        expect={
            "value": {"A.B.int32": 32, "A.B.string": "stringy"},
            "value_schema": struct(("A.B.int32", "int32", False), ("A.B.string", "string", False)),
        },
    ),
    # ---------------------------------------------------------------- HeaderFromTest, InsertHeaderTest, DropHeadersTest
    Case(
        "HeaderFrom copy schemaless",
        with_props("HeaderFrom$Value", {"fields": "field1", "headers": "inserted1", "operation": "copy"}),
        value={"field1": "field1-value", "field2": "field2-value"},
        headers=[("existing", b"existing-value")],
        expect={
            "value": {"field1": "field1-value", "field2": "field2-value"},
            "headers": [("existing", "existing-value"), ("inserted1", "field1-value")],
        },
    ),
    Case(
        "HeaderFrom move schemaless",
        with_props(
            "HeaderFrom$Value", {"fields": "field1,field2", "headers": "inserted1,inserted1", "operation": "move"}
        ),
        value={"field1": "field1-value", "field2": "field2-value", "field3": 3},
        expect={
            "value": {"field3": 3},
            "headers": [("inserted1", "field1-value"), ("inserted1", "field2-value")],
        },
    ),
    Case(
        "HeaderFrom move withSchema",
        with_props("HeaderFrom$Key", {"fields": "field1", "headers": "inserted1", "operation": "move"}, **SCHEMAS_ON),
        key=envelope(struct(("field1", "string", False), ("field2", "string", False)), {"field1": "a", "field2": "b"}),
        expect={
            "key": {"field2": "b"},
            "key_schema": struct(("field2", "string", False)),
            "headers": [("inserted1", "a")],
        },
    ),
    Case(
        "InsertHeader insertionWithExistingOtherHeader",
        with_props("InsertHeader", {"header": "inserted", "value.literal": "inserted-value"}),
        value={"v": 1},
        headers=[("existing", b"existing-value")],
        expect={"headers": [("existing", "existing-value"), ("inserted", "inserted-value")]},
    ),
    Case(
        "DropHeaders dropExistingHeaderWithMultipleValues",
        with_props("DropHeaders", {"headers": "dropped"}),
        value={"v": 1},
        headers=[("not-dropped", b"a"), ("dropped", b"b"), ("dropped", b"c"), ("also-not", b"d")],
        expect={"headers": [("not-dropped", "a"), ("also-not", "d")]},
    ),
    # ---------------------------------------------------------------- SetSchemaMetadata (SetSchemaMetadataTest)
    Case(
        "SetSchemaMetadata schemaNameAndVersionUpdate",
        with_props("SetSchemaMetadata$Value", {"schema.name": "foo", "schema.version": "42"}, **SCHEMAS_ON),
        value=envelope(struct(("a", "int32", False)), {"a": 1}),
        expect={"value": {"a": 1}, "value_schema": {**struct(("a", "int32", False)), "name": "foo", "version": 42}},
    ),
    Case(
        "SetSchemaMetadata schemaless value needs a schema",
        with_props("SetSchemaMetadata$Value", {"schema.name": "foo"}),
        value={"a": 1},
        expect={"error": "Schema required for [updating schema metadata]"},
    ),
    Case(
        "SetSchemaMetadata ignoreRecordWithNullValue",
        with_props("SetSchemaMetadata$Value", {"schema.name": "foo"}),
        value=None,
        expect={"value": None},
    ),
    # ---------------------------------------------------------------- Filter
    Case("Filter drops every record", with_props("Filter", {}), value={"v": 1}, expect={"dropped": True}),
    # ---------------------------------------------------------------- predicates (TopicNameMatchesTest, ...)
    *[
        Case(
            f"TopicNameMatches testTest {topic}",
            filter_when("TopicNameMatches", pattern="my-prefix-.*"),
            value={"v": 1},
            topic=topic,
            expect={"dropped": True} if dropped else {"topic": topic},
        )
        for topic, dropped in [
            ("my-prefix-", True),
            ("my-prefix-foo", True),
            ("x-my-prefix-", False),
            ("x-my-prefix-foo", False),
            ("your-prefix-", False),
            ("your-prefix-foo", False),
        ]
    ],
    *[
        Case(
            f"HasHeaderKey testTest {'-'.join(names) or 'none'}",
            filter_when("HasHeaderKey", name="foo"),
            value={"v": 1},
            headers=[(n, b"x") for n in names],
            expect={"dropped": True} if dropped else {"value": {"v": 1}},
        )
        for names, dropped in [
            (["foo"], True),
            (["foo", "bar"], True),
            (["bar", "foo", "bar", "foo"], True),
            (["bar"], False),
            (["bar", "bar"], False),
            ([], False),
        ]
    ],
    Case("RecordIsTombstone tombstone", filter_when("RecordIsTombstone"), value=None, expect={"dropped": True}),
    Case("RecordIsTombstone value", filter_when("RecordIsTombstone"), value={"a": 1}, expect={"value": {"a": 1}}),
    Case(
        "RecordIsTombstone negated",
        {**filter_when("RecordIsTombstone"), "transforms.t.negate": "true"},
        value={"a": 1},
        expect={"dropped": True},
    ),
]


@pytest.fixture(scope="module")
def results(spark: Any) -> dict[str, dict[str, Any]]:
    return run_cases(spark, CASES)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_transform_case(case: Case, results: dict[str, dict[str, Any]]) -> None:
    check(case, results)
