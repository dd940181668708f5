"""The SQL a chain compiles to stays cheap for Spark's parser: no expression makes ANTLR read far ahead.

Spark's parser decides what a CASE, a CAST or a bare parenthesis starts only after reading it to its end,
so such a wrapper around a large expression, nested, is re-read at every level; the first parse of such
SQL in a JVM took seconds (ANTLR fills its prediction cache for each token sequence it reads ahead). The
measure here is ANTLR's own profile of the parse: the longest lookahead of any decision, in tokens, which
depends on the SQL's shape alone (not on the machine or on what the JVM parsed before).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from py4j.java_gateway import get_field
from pyspark.sql import DataFrame

from sparklink.worker.transforms import frames, pipeline, sql_step
from sparklink.worker.transforms.pipeline import compile_pipeline
from sparklink.worker.transforms.smt.mask import MaskField
from tests.transforms.test_typed_values import CONVERTERS, MASKABLE, general_path, mask, varied_batch

MAX_LOOKAHEAD = 500
"""Tokens: a CASE of one field's mask reads about 230 ahead; the wrappers this guards against read the whole
expression (16,000 tokens for the chain below before they were written as function calls)."""


def longest_lookahead(spark: Any, sql: str) -> int:
    """The most tokens any prediction read ahead while Spark's parser (its grammar, in SLL mode as Spark
    parses first) read the expression `sql`."""
    jvm = spark._jvm
    parser_pkg, antlr = jvm.org.apache.spark.sql.catalyst.parser, jvm.org.antlr.v4.runtime
    lexer = parser_pkg.SqlBaseLexer(parser_pkg.UpperCaseCharStream(antlr.CharStreams.fromString(sql)))
    parser = parser_pkg.SqlBaseParser(antlr.CommonTokenStream(lexer))
    parser.getInterpreter().setPredictionMode(antlr.atn.PredictionMode.SLL)
    parser.setProfile(True)
    parser.singleExpression()
    assert parser.getNumberOfSyntaxErrors() == 0, sql[:200]
    return max(get_field(info, "SLL_MaxLook") for info in parser.getParseInfo().getDecisionInfo())


@pytest.fixture
def selected(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every expression the pipeline's steps hand to Spark (through `select_sql`) from here on."""
    seen: list[str] = []

    def recording(frame: DataFrame, exprs: Sequence[str]) -> DataFrame:
        seen.extend(exprs)
        return select(frame, exprs)

    select = frames.select_sql
    for module in (frames, pipeline, sql_step):
        monkeypatch.setattr(module, "select_sql", recording)
    return seen


def test_a_wide_mask_field_on_the_general_path_parses_without_reading_far_ahead(
    spark: Any, monkeypatch: pytest.MonkeyPatch, selected: list[str]
) -> None:
    general_path(monkeypatch, MaskField)
    # With a schema: each field masked for either kind of record, as many fields as a struct has.
    compile_pipeline(mask(MASKABLE, CONVERTERS[0]), {}, "source").run(varied_batch(spark)).release()
    largest = max(selected, key=len)
    assert len(largest) > 30_000, "the chain no longer makes the large expression this test is about"
    lookahead = {sql[:60]: longest_lookahead(spark, sql) for sql in selected}
    assert max(lookahead.values()) <= MAX_LOOKAHEAD, lookahead
