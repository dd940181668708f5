"""MaskField's reading of a replacement against what connect-api 4.3.1's Values gives for the same text
(`MaskField.Value` with `replacement` run on Connect itself; the figures below are its output)."""

from __future__ import annotations

import pytest

from sparklink.worker.transforms.smt.mask import connect_double, connect_long, wrapped


@pytest.mark.parametrize(
    ("text", "as_long", "as_int8", "as_int32"),
    [
        ("300", 300, 44, 300),
        ("1.5", 1, 1, 1),
        ("1e3", 1000, -24, 1000),
        ("-129", -129, 127, -129),
        ("+5", 5, 5, 5),
        (".5", 0, 0, 0),
        ("-1.9", -1, -1, -1),
        ("99999999999999999999", 7766279631452241919, -1, 1661992959),
        ("1e64", 0, 0, 0),
        ("1e-999999999", 0, 0, 0),
    ],
)
def test_an_integer_replacement_reads_as_bigdecimal_then_narrows(text: str, as_long: int, as_int8: int, as_int32: int):
    read = connect_long(text)
    assert read == as_long
    assert wrapped(read, 8) == as_int8
    assert wrapped(read, 32) == as_int32


@pytest.mark.parametrize("text", ["abc", "NaN", "Infinity", "1_0", "", "0x10", "1e", "."])
def test_text_bigdecimal_refuses_is_no_number(text: str):
    assert connect_long(text) is None
    assert connect_double(text) is None


def test_a_floating_replacement_is_the_nearest_double():
    assert connect_double("1.5") == 1.5
    assert connect_double("99999999999999999999") == 1e20
    assert connect_double("-129") == -129.0
