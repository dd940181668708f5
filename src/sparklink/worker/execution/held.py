"""Columns of numbers a task's query reads as constants, held by a JVM function object rather than
written into the plan as literals: `TaskContext.held`. Caller: the registry (tasks.py), once per worker;
each run's context carries it (factory.py).

Spark compiles a stage's generated Java again for every new int or long literal in it, in the driver and
in the executor (jvm/sql/HeldNumber.java): a datagen task's id and resume position made every task start
and restart compile its stage twice, 45-230 ms each on the fail-over bench's loaded machine. Held, the
tasks after the first reuse the first one's classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparklink.api.connector import HeldNumber, NumberType
from sparklink.worker.execution.spark import functions_jar_loaded

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession


def held_numbers(spark: SparkSession) -> HeldNumber | None:
    """The session's maker of held numbers; None without our jar (a task then writes literals).

    The JVM class is looked up here, once: each lookup is a py4j round trip."""
    if not functions_jar_loaded(spark):
        return None
    from pyspark.sql.classic.column import Column

    jvm = spark._jvm
    assert jvm is not None, "a classic session"
    holder = jvm.io.sparklink.spark.HeldNumber
    makers = {"int": holder.ofInt, "bigint": holder.ofLong}

    def held(value: int, sql_type: NumberType) -> Column:
        return Column(makers[sql_type](value))

    return held
