"""The SQL a field-listing transform compiles to grows in step with the number of fields it lists.

Spark's analyser and code generator take time in proportion to an expression's size: a transform that
nested the value's expression once per listed field (3 copies a field) made a 16-field MaskField or Cast
take Spark minutes to compile. Measured on the compiled text, so no Spark is needed.
"""

from __future__ import annotations

import pytest

from sparklink.worker.transforms.record import NO_ERROR, Datum, Rec, Shape
from sparklink.worker.transforms.smt.mask import MaskFieldValue
from sparklink.worker.transforms.smt.types import CastValue


def compiled_size(transform: object, with_schema: bool) -> int:
    value = Datum.of_variant("value_column", "schema_column" if with_schema else None)
    rec = Rec("topic", "partition", "offset", "timestamp", "headers", value, value, NO_ERROR, "false", "source")
    out = transform.apply(rec)  # type: ignore[attr-defined]
    return len(out.value.col) + len(out.value.schema or "") + len(out.error)


def mask(fields: int) -> object:
    return MaskFieldValue({"fields": ",".join(f"f{i}" for i in range(fields)), "replacement": "7"})


def cast(fields: int) -> object:
    targets = ["int8", "int32", "float64", "string", "boolean"]
    return CastValue({"spec": ",".join(f"f{i}:{targets[i % len(targets)]}" for i in range(fields))})


@pytest.mark.parametrize("with_schema", [False, True], ids=["schemaless", "with schema"])
@pytest.mark.parametrize("make", [mask, cast], ids=["MaskField", "Cast"])
def test_twice_the_fields_compile_to_at_most_twice_the_sql(make, with_schema: bool):
    sizes = {n: compiled_size(make(n), with_schema) for n in (2, 4, 8)}
    assert sizes[4] <= 2 * sizes[2], sizes
    assert sizes[8] <= 2 * sizes[4], sizes


def test_a_struct_part_is_converted_to_a_variant_once_however_many_fields_are_masked():
    """A nullable struct takes MaskField's general path, which reads the part as a VARIANT once per field:
    written out, each read would convert the whole struct again."""

    def conversions(fields: int) -> tuple[int, int]:
        connect = {
            "type": "struct",
            "fields": [{"field": f"f{i}", "type": "string", "optional": True} for i in range(8)],
        }
        value = Datum.of_shape(Shape("value_struct", connect, nullable=True), "schema_column")
        rec = Rec("topic", "partition", "offset", "timestamp", "headers", value, value, NO_ERROR, "false", "source")
        out = mask(fields).apply(rec)  # type: ignore[attr-defined]
        return out.value.col.count("to_variant_object(value_struct)"), out.error.count(
            "to_variant_object(value_struct)"
        )

    assert conversions(2)[0] == conversions(8)[0] == 1
    assert conversions(2)[1] == conversions(8)[1]  # the checks of the part's type, and the fields' errors
