"""Held numbers (worker/execution/held.py): columns of a task's id or position that Spark's generated code
reads by reference, so that tasks differing only in them share one compiled stage."""

from __future__ import annotations

from typing import Any

from sparklink.worker.execution.held import held_numbers


def _generated_code(spark: Any, frame: Any) -> list[str]:
    """The Java source of each whole-stage codegen subtree of `frame`'s plan, as Spark compiles it."""
    explained = str(spark._jvm.PythonSQLUtils.explainString(frame._jdf.queryExecution(), "codegen"))
    parts = explained.split("Generated code:")[1:]
    assert parts, explained
    return [part.split("== Subtree")[0] for part in parts]


def test_held_numbers_read_as_their_values_and_types_and_generate_the_same_code_for_any_value(spark: Any) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, LongType, StructField

    held = held_numbers(spark)
    assert held is not None, "run the bootstrap: it builds jvm/sql"

    def frame(task: int, start: int, number: Any) -> Any:
        seq = (F.col("id") + number(start, "bigint")).alias("seq")
        return spark.range(3).select(seq, number(task, "int").alias("task"))

    first, second = frame(0, 100, held), frame(3, 2**40, held)
    assert [tuple(r) for r in first.collect()] == [(100, 0), (101, 0), (102, 0)]
    assert [tuple(r) for r in second.collect()] == [(2**40, 3), (2**40 + 1, 3), (2**40 + 2, 3)]
    assert list(second.schema) == [
        StructField("seq", LongType(), nullable=False),
        StructField("task", IntegerType(), nullable=False),
    ]
    assert _generated_code(spark, first) == _generated_code(spark, second)

    # What they replace: the same numbers as literals are written into the code, which then differs.
    def literal(value: int, sql_type: str) -> Any:
        return F.lit(value).cast(sql_type)

    assert _generated_code(spark, frame(0, 100, literal)) != _generated_code(spark, frame(3, 2**40, literal))


def test_a_datagen_task_holds_its_id_position_and_limit_rather_than_literals(spark: Any, tmp_path: Any) -> None:
    from sparklink.api.connector import TaskContext
    from sparklink.connectors.datagen import DatagenTask

    held = held_numbers(spark)
    assert held is not None
    asked: list[tuple[int, str]] = []

    def recording(value: int, sql_type: Any) -> Any:
        asked.append((value, sql_type))
        return held(value, sql_type)

    config = {"topic": "t", "records.per.second": "10", "task.rate": "5", "task.records": "500"}
    ctx = TaskContext(
        "gen", 3, config, spark, resume=[({"task": 3}, {"position": 41})], checkpoint=str(tmp_path), held=recording
    )
    DatagenTask().stream(ctx)
    assert sorted(asked) == [(3, "int"), (41, "bigint"), (500, "bigint")]


def test_two_datagen_tasks_at_different_positions_generate_the_same_code(spark: Any, tmp_path: Any) -> None:
    """Each task's id, start and key prefix reach the generated code by reference, so a fail-over that
    starts task 3 where task 0 ran compiles nothing new."""
    from sparklink.api.connector import TaskContext
    from sparklink.connectors.datagen import DatagenTask

    held = held_numbers(spark)
    assert held is not None

    def code(task: int, position: int) -> list[str]:
        config = {"topic": "t", "records.per.second": "10", "task.rate": "5", "task.records": "500"}
        resume = [({"task": task}, {"position": position})]
        ctx = TaskContext("gen", task, config, spark, resume=resume, checkpoint=str(tmp_path / str(task)), held=held)
        return _generated_code(spark, DatagenTask().stream(ctx))

    first = code(0, 7)
    assert "references[" in "".join(first)
    assert first == code(3, 2**33)
