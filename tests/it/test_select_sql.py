"""`frames.select_sql`: a select of SQL expressions sent to the JVM in one string, which must select exactly
what PySpark's `selectExpr` does, in fewer py4j round trips."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import py4j.clientserver

from sparklink.worker.transforms.frames import SEPARATOR, select_sql


def _round_trips(call: Callable[[], Any]) -> tuple[Any, int]:
    """What `call` returns, and how many commands it sent to the JVM."""
    connection = py4j.clientserver.ClientServerConnection
    original = connection.send_command
    sent = 0

    def counting(self: Any, command: str) -> Any:
        nonlocal sent
        sent += 1
        return original(self, command)

    connection.send_command = counting  # type: ignore[method-assign]
    try:
        return call(), sent
    finally:
        connection.send_command = original  # type: ignore[method-assign]


def test_select_sql_selects_what_select_expr_selects_in_a_few_round_trips(spark: Any) -> None:
    frame = spark.range(3).selectExpr("id", "CAST(id AS STRING) AS name")
    exprs = [
        "id",
        "name AS `a, b`",  # a comma, as in any list of expressions
        "'' AS empty",  # an empty string literal: the split keeps empty pieces
        "concat(name, ',', '-') AS joined",
        *(f"id * {n} AS times_{n}" for n in range(5)),
    ]
    expected, plain = _round_trips(lambda: frame.selectExpr(*exprs))
    select_sql(frame, ["id"])  # the JVM's split is looked up once per process
    selected, ours = _round_trips(lambda: select_sql(frame, exprs))
    assert selected.schema == expected.schema
    assert selected.collect() == expected.collect()
    assert ours <= 3 < plain, (ours, plain)


def test_an_expression_holding_the_separator_is_selected_whole(spark: Any) -> None:
    frame = spark.range(1)
    exprs = ["id", f"'x{SEPARATOR}y' AS text"]  # split at the NUL, these would be two broken expressions
    selected = select_sql(frame, exprs)
    assert [tuple(row) for row in selected.collect()] == [(0, f"x{SEPARATOR}y")]
