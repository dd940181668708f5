"""TaskContext.use_data_source: a Python data source is registered once per SparkSession.

Spark logs a WARN each time a name is registered again ("replaced a previously registered data
source"), which every task start of a file, JDBC or mirror checkpoint source used to do. The session
here is a stand-in that records registrations; the rule under test is the context's.
"""

from __future__ import annotations

from typing import Any

from sparklink.api.connector import TaskContext


class Registrations:
    def __init__(self) -> None:
        self.calls: list[type[Any]] = []

    def register(self, source: type[Any]) -> None:
        self.calls.append(source)


class Session:
    def __init__(self) -> None:
        self.dataSource = Registrations()


class LinesSource:
    pass


class PollSource:
    pass


def context(spark: Session, task_id: int = 0) -> TaskContext:
    return TaskContext("c", task_id, {}, spark)  # type: ignore[arg-type]


def test_each_source_is_registered_once_per_session_across_task_starts() -> None:
    spark = Session()
    for task_id in range(3):
        ctx = context(spark, task_id)
        ctx.use_data_source(LinesSource)
        ctx.use_data_source(PollSource)
    assert spark.dataSource.calls == [LinesSource, PollSource]


def test_a_new_session_gets_its_own_registration() -> None:
    first, second = Session(), Session()
    context(first).use_data_source(LinesSource)
    context(second).use_data_source(LinesSource)
    assert first.dataSource.calls == [LinesSource] and second.dataSource.calls == [LinesSource]
