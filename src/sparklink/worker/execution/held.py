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

    The JVM classes and members are looked up here, once: each lookup is a py4j round trip, and a
    task start asks for two numbers (6 ms each with the lookups, on a quiet machine)."""
    if not functions_jar_loaded(spark):
        return None
    from pyspark.sql.classic.column import Column, _to_seq

    jvm = spark._jvm
    assert jvm is not None, "a classic session"
    holder, types = jvm.io.sparklink.spark.HeldNumber, jvm.org.apache.spark.sql.types.DataTypes
    makers = {"int": (holder.ofInt, types.IntegerType), "bigint": (holder.ofLong, types.LongType)}
    udf = jvm.org.apache.spark.sql.functions.udf
    no_arguments = _to_seq(spark.sparkContext, [])

    def held(value: int, sql_type: NumberType) -> Column:
        make, data_type = makers[sql_type]
        # A UDF of no arguments: never folded into a literal by the optimizer, as a constant would be.
        return Column(udf(make(value), data_type).asNonNullable().apply(no_arguments))

    return held
