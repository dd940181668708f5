"""A pipeline's DataFrames built on a streaming query's first micro-batch and moved onto each later one.
Caller: pipeline.Pipeline.run.

Building a batch's DataFrames step by step has the JVM analyse each step as it is made: about ten
analyses per batch, 0.14 s of the driver's time between two micro-batches of a file sink (bench.sink's
chain) while no Spark task runs. The batches of one query run share their columns' identities, so
the JVM's `io.sparklink.spark.PlanRebase` swaps the first batch for the next in the analysed plans
instead (jvm/sql/PlanRebase.java: what it refuses, and why). Where it refuses (a restarted query's
batches have new ids) or the session did not load our jar, the pipeline builds the batch's DataFrames as
before, and later batches move from those.

A sink's pipeline need not wait for the first batch at all: `stand_in` gives, before its query starts, an
empty batch with the columns every micro-batch of the query will have, and `Pipeline.prebuild` builds
the DataFrames on it while Spark starts the query; the first batch then moves from those too.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Replay:
    """The DataFrames a pipeline built on `first`: the records to write, the errant ones, and the
    frames it cached for the batch (cached again for each batch moved onto)."""

    first: DataFrame
    records: DataFrame
    errant: DataFrame | None
    cached: tuple[DataFrame, ...]

    def onto(self, batch: DataFrame) -> tuple[DataFrame, DataFrame | None, list[DataFrame]] | None:
        """The same DataFrames over `batch` (the cached ones persisted), or None where the JVM refuses
        the swap or cannot make it."""
        cached: list[DataFrame] = []
        for frame in self.cached:
            moved = _swap(frame, self.first, batch)
            if moved is None:
                _drop(cached)
                return None
            # Persisted before the frames over it are swapped, as when they are built: Spark finds the
            # cached data by the plan when a job runs.
            cached.append(moved.persist())
        records = _swap(self.records, self.first, batch)
        errant = _swap(self.errant, self.first, batch) if self.errant is not None else None
        if records is None or (self.errant is not None and errant is None):
            _drop(cached)
            return None
        return records, errant, cached


def stand_in(stream: DataFrame) -> DataFrame | None:
    """An empty batch with the columns (and their ids) of the micro-batches a query over `stream` hands
    to its batch function, or None where the session did not load our jar."""
    return _rebase(stream, "standIn", stream)


def _drop(cached: list[DataFrame]) -> None:
    """Nothing moved: the frames cached for it so far are let go."""
    for frame in cached:
        frame.unpersist()


def _swap(template: DataFrame, first: DataFrame, batch: DataFrame) -> DataFrame | None:
    return _rebase(batch, "onto", template, first, batch)


def _rebase(on: DataFrame, method: str, *frames: DataFrame) -> DataFrame | None:
    """`PlanRebase.<method>` over `frames`' plans, as a DataFrame of `on`'s session; None where the JVM
    answers none, or the session did not load our jar or has no JVM of its own (then each batch is built,
    an optimisation lost, nothing else)."""
    from py4j.protocol import Py4JError
    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

    session = on.sparkSession
    try:
        rebase = session._jvm.io.sparklink.spark.PlanRebase  # type: ignore[union-attr]
        answer = getattr(rebase, method)(*(frame._jdf for frame in frames))  # type: ignore[attr-defined]
    except (Py4JError, AttributeError) as exc:
        log.debug("plans are built for each batch: %s", exc)
        return None
    return None if answer is None else ClassicDataFrame(answer, session)
