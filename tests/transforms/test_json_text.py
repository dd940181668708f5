"""A text sink's JSON chain edited as text (transforms/json_text.py, jvm/sql/JsonEdit.java): for every value,
well-formed or not, the sink gets the same line and the same error as through the VARIANT path, and the
text edit answers for the plain objects (so they never take the VARIANT path)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.sql import functions as F

from sparklink.api.text import as_text
from sparklink.worker.transforms.json_text import JSON_EDIT
from sparklink.worker.transforms.pipeline import compile_pipeline
from tests.transforms.harness import JSON, PKG, kafka_batch

SINK = {
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": JSON,
    "value.converter.schemas.enable": "false",
    "errors.tolerance": "all",
}
BENCH_CHAIN = {  # bench.transforms' chain
    "transforms": "route,insert,replace",
    "transforms.route.type": f"{PKG}.RegexRouter",
    "transforms.route.regex": "t(.*)",
    "transforms.route.replacement": "$1-routed",
    "transforms.insert.type": f"{PKG}.InsertField$Value",
    "transforms.insert.static.field": "origin",
    "transforms.insert.static.value": 'bench "é"\n',
    "transforms.replace.type": f"{PKG}.ReplaceField$Value",
    "transforms.replace.exclude": "payload",
    "transforms.replace.renames": "seq:sequence",
}
INCLUDE_THEN_INSERT = {  # an include list, then a field put over a kept one, then a second select
    "transforms": "keep,insert,rename",
    "transforms.keep.type": f"{PKG}.ReplaceField$Value",
    "transforms.keep.include": "seq,obj,name,origin,\uff42,😀",
    "transforms.insert.type": f"{PKG}.InsertField$Value",
    "transforms.insert.static.field": "name!",
    "transforms.insert.static.value": "put",
    "transforms.rename.type": f"{PKG}.ReplaceField$Value",
    "transforms.rename.renames": "obj:nested,name:who",
}
CHAINS = {"converter only": {}, "bench chain": BENCH_CHAIN, "include then insert": INCLUDE_THEN_INSERT}

PAYLOAD = "x" * 300
OBJECTS: list[bytes] = [  # values the text edit answers for
    json.dumps({"task": 0, "seq": 1, "ts": "2026-01-01T00:00:00.000Z", "payload": PAYLOAD}).encode(),
    json.dumps({"seq": 2, "name": 'é\u0000\n\t\b\f\r"\\/ ☃ 😀 \u001f', "payload": "p"}, ensure_ascii=False).encode(),
    json.dumps({"seq": 2, "name": "escaped é ☃ 😀"}).encode(),  # \\u escapes in the input
    json.dumps({"seq": 2, "name": 'ascii \t\b\f\r\n"\\/ \u0001\u001f\u007f'}).encode(),
    b'{"seq":3,"obj":{"b":1,"a":[1,2.5,{"z":null},-0.0,1E3,1.50]},"f":1.25,"e":1e3,'
    b'"big":123456789012345678901234567890,"t":true,"n":null,"z":-0,"min":-9223372036854775808}',
    b' \n{ "seq" : 4 , "payload" : "p" ,"name":"ws" }\t ',
    b'{"payload":{"x":[1,{"y":2}]},"seq":5}',
    b"{}",
    b'{"origin":"other","seq":6}',
    '{"\uff42":1,"😀":2,"b":3,"a":{"\uff42":1,"😀":2}}'.encode(),  # UTF-16 order differs from code point order
    b'{"seq":7,"name":null,"obj":[],"payload":null}',
    # Long and non-ASCII text, 18- and 19-digit integers, fractions, empty and escaped names.
    '{"name":"ünïcödé ☃☃☃☃ 😀😀 past a word or two","seq":0,"z":-0,"t":true,"f":false}'.encode(),
    b'{"seq":123456789012345678,"n":-123456789012345678,"big":1234567890123456789,"e":1e5,"d":-1.0}',
    b'{"":1,"t":true}',
    b'{"a\\"b":1,"seq":"name with an escape"}',
    b'\xef\xbb\xbf{"seq":11}',  # a byte order mark, which Jackson passes over
    b'{"' + b"n" * 1500 + b'":1}',
    b'{"payload":"a\\"b\\\\c","seq":12}',
    b'{"payload":"' + "é".encode() * 600 + b'","seq":13}',
    # What the top-level walk (jvm/sql/JsonScan.java) passes to Jackson, or over: brackets and escaped
    # quotes inside strings, escapes in names, numbers that are not short integers, left-out scalars.
    b'{"payload":{"a":"}]\\"{[","b":[{"c":"]"}]},"seq":15,"q":"1234567\\"890"}',
    b'{"\\u0041b":1,"seq":16,"s":"\\u00e9\\/"}',
    b'{"seq":17,"f":1E-3,"g":-1.5e+2,"h":0.0,"i":-0,"j":1234567890123456789012}',
    b'{ "a" : [ 1 , "x" , { } ] , "seq" : 18 , "payload" : [ ] }',
    b'{"payload":12,"seq":19}',
    b'{"payload":true,"seq":20,"other":false}',
    b'{"payload":"\\"quoted\\" \\u00e9","seq":21}',
    ('{"seq":22,"name":"' + "abcdefg\x7f" * 5 + 'é"}').encode(),
]
OTHERS: list[bytes | None] = [  # values the VARIANT path decides: errors, Connect null, scalars, deep nesting
    None,
    b"",
    b"null",
    b'"a string"',
    b"42",
    b"[1,2]",
    b'{"seq":1,',
    b'{"seq":1,"seq":2}',
    b'{"a":{"x":1,"x":2}}',
    b'{"payload":{"x":1,"x":2},"seq":8}',
    b'{"payload":[{"x":1,"x":2}],"seq":8}',
    b'{"payload":[1,,2],"seq":8}',
    b'{"payload":"a","seq":8,"payload":"b"}',
    b'{"a":"\xff"}',
    b'{"a":1} x',
    b'{"a":1}{"b":2}',
    b'{"a":01}',
    b"{'a':1}",
    b'{"seq":9,"sequence":"two fields renamed to one name"}',
    b'{\x0c"a":1}',
    b'{"a":truex}',
    b'{"a":nul}',
    b'{"a":TRUE}',
    b'{"a":-}',
    b'{"a":1.}',
    b'{"a":-01}',
    b'{"a":1,}',
    b'{"a" 1}',
    b'{"a":1 "b":2}',
    b'{"a":"x',
    b'{"a":"x\x01y"}',
    b'{"":1,"":2}',
    b'{"payload":"a\\n","seq":14,"payload":"b"}',
    # Faults the top-level walk must leave to the VARIANT path, and nesting deeper than it reads.
    b'{"a":"x\\q"}',
    b'{"payload":"\\q","seq":1}',
    b'{"payload":"\\u12","seq":1}',
    b'{"a\\x":1}',
    b'{"a":"\\"}',
    b'{"a":[1,2}',
    b'{"a":{"b":1]}',
    b'{"a":[1,2]]}',
    b'{"a":1-2}',
    b'{"a":+1}',
    b'{"a":1e}',
    b'{"payload":01,"seq":1}',
    b'{"payload":tru,"seq":1}',
    b'{"payload":[1,2],"seq":1]',
    b'{"a":1}\x00',
    b'{"a":' + b"[" * 600 + b"]" * 600 + b"}",
]


def _lines(spark: Any, config: dict[str, str], values: list[bytes | None], value_as_text: bool) -> list[Any]:
    pipeline = compile_pipeline({**SINK, **config}, {}, "sink", "json-text", 0, value_as_text=value_as_text)
    pipeline.cache_split = False
    batch = kafka_batch(spark, [{"value": v, "offset": i, "topic": "text"} for i, v in enumerate(values)])
    outcome = pipeline.run(batch.coalesce(1))
    value_type = outcome.records.schema["value"].dataType.typeName()
    records = outcome.records.selectExpr("offset", "topic", f"{as_text('value', value_type)} AS line")
    lines = {r["offset"]: (r["topic"], r["line"]) for r in records.collect()}
    assert outcome.errant is not None
    errors = {
        r["offset"]: r["message"] for r in outcome.errant.selectExpr("original.offset", "error.message").collect()
    }
    assert not lines.keys() & errors.keys()
    return [lines.get(i, ("failed", errors.get(i))) for i in range(len(values))]


@pytest.mark.parametrize("chain", CHAINS, ids=list(CHAINS))
def test_text_sink_gets_what_the_variant_path_gives(spark: Any, chain: str) -> None:
    values = [*OBJECTS, *OTHERS]
    as_text_lines = _lines(spark, CHAINS[chain], values, value_as_text=True)
    variant_lines = _lines(spark, CHAINS[chain], values, value_as_text=False)
    for value, got, expected in zip(values, as_text_lines, variant_lines, strict=True):
        assert got == expected, f"{value!r}: {got!r} as text, {expected!r} through the VARIANT path"
    assert any(topic == "failed" for topic, _ in variant_lines)  # the error cases are errors


def test_the_edit_answers_for_objects_and_leaves_the_rest_to_the_variant_path(spark: Any) -> None:
    pipeline = compile_pipeline({**SINK, **BENCH_CHAIN}, {}, "sink", "json-text", 0, value_as_text=True)
    plan = pipeline.run(kafka_batch(spark, [{"value": OBJECTS[0]}])).records
    assert JSON_EDIT in plan._jdf.queryExecution().analyzed().toString()

    values = [*OBJECTS, *OTHERS]
    batch = kafka_batch(spark, [{"value": v, "offset": i} for i, v in enumerate(values)])
    spec = json.dumps([["payload"], ["put", "origin", "o"], ["select", [], [], ["seq"], ["sequence"]]])
    answered = batch.select("offset", F.expr(f"{JSON_EDIT}(value, '{spec}')").isNotNull().alias("answered"))
    by_offset = {r["offset"]: r["answered"] for r in answered.collect()}
    assert [by_offset[i] for i in range(len(OBJECTS))] == [True] * len(OBJECTS)
    assert not any(by_offset[i] for i in range(len(OBJECTS), len(values)))


def test_a_chain_that_reads_the_value_keeps_the_variant_path(spark: Any) -> None:
    masked = {
        "transforms": "mask",
        "transforms.mask.type": f"{PKG}.MaskField$Value",
        "transforms.mask.fields": "name",
    }
    pipeline = compile_pipeline({**SINK, **masked}, {}, "sink", "json-text", 0, value_as_text=True)
    records = pipeline.run(kafka_batch(spark, [{"value": OBJECTS[1]}])).records
    assert JSON_EDIT not in records._jdf.queryExecution().analyzed().toString()
    assert records.schema["value"].dataType.typeName() == "variant"
