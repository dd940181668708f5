"""Spark types as Connect data: the Connect schema a source column's Spark type implies, and the JSON
payload JsonConverter would write for its values. Caller: frames (a source's columns becoming records).

Kept apart from schemas.py because it reads pyspark's type classes: the plugins' config declarations
(which the herder validates with) import schemas.py and so stay free of Spark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparklink.worker.transforms import exprs as x
from sparklink.worker.transforms import schemas

if TYPE_CHECKING:
    from pyspark.sql.types import DataType


def of_spark_type(data_type: DataType, nullable: bool = True) -> dict[str, Any] | None:
    """The Connect schema for a Spark type; None where Connect data would be schemaless (VARIANT)."""
    from pyspark.sql import types as T

    simple: dict[type, str] = {
        T.StringType: "string",
        T.BinaryType: "bytes",
        T.BooleanType: "boolean",
        T.ByteType: "int8",
        T.ShortType: "int16",
        T.IntegerType: "int32",
        T.LongType: "int64",
        T.FloatType: "float",
        T.DoubleType: "double",
        T.DecimalType: "double",
    }
    for cls, name in simple.items():
        if isinstance(data_type, cls):
            return {"type": name, "optional": nullable}
    if isinstance(data_type, T.TimestampType | T.TimestampNTZType):
        return schemas.timestamp(nullable)
    if isinstance(data_type, T.DateType):
        return schemas.logical(schemas.DATE, nullable)
    if isinstance(data_type, T.ArrayType):
        items = of_spark_type(data_type.elementType, data_type.containsNull)
        return None if items is None else {"type": "array", "items": items, "optional": nullable}
    if isinstance(data_type, T.MapType):
        keys = of_spark_type(data_type.keyType, False)
        values = of_spark_type(data_type.valueType, data_type.valueContainsNull)
        if keys is None or values is None:
            return None
        return {"type": "map", "keys": keys, "values": values, "optional": nullable}
    if isinstance(data_type, T.StructType):
        fields = []
        for f in data_type.fields:
            schema = of_spark_type(f.dataType, f.nullable)
            if schema is None:
                return None
            fields.append({**schema, "field": f.name})
        return {"type": "struct", "fields": fields, "optional": nullable}
    return None


def payload_of(col: str, data_type: DataType) -> str:
    """A Spark value as the JSON payload JsonConverter would write: timestamps as epoch ms, dates as days."""
    from pyspark.sql import types as T

    if isinstance(data_type, T.TimestampType | T.TimestampNTZType):
        return f"unix_millis(CAST({col} AS TIMESTAMP))"
    if isinstance(data_type, T.DateType):
        return f"unix_date({col})"
    if isinstance(data_type, T.DecimalType):
        return f"CAST({col} AS DOUBLE)"
    if isinstance(data_type, T.StructType):
        parts = ", ".join(
            f"{x.text(f.name)}, {payload_of(f'{col}.{x.ident(f.name)}', f.dataType)}" for f in data_type.fields
        )
        return x.when(f"{col} IS NOT NULL", f"named_struct({parts})")
    # Elements already in payload form are taken as they are: an identity `transform` is a lambda
    # Spark evaluates without generated code, per element.
    if isinstance(data_type, T.ArrayType):
        e = x.fresh("e")
        element = payload_of(e, data_type.elementType)
        return col if element == e else f"transform({col}, {e} -> {element})"
    if isinstance(data_type, T.MapType):
        k, v = x.fresh("k"), x.fresh("v")
        mapped = payload_of(v, data_type.valueType)
        return col if mapped == v else f"transform_values({col}, ({k}, {v}) -> {mapped})"
    return col
