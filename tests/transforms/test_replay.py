"""A pipeline moves the DataFrames it built on a streaming query's first micro-batch onto each later
batch (transforms/replay.py, jvm/sql/PlanRebase.java): the records and errant records must be exactly
those a pipeline building each batch afresh gets, in a query run and in the next (new column ids), and a
plan that reads anything besides the batch is never moved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from sparklink.worker.transforms import replay
from sparklink.worker.transforms.pipeline import Pipeline, compile_pipeline
from tests.helpers import wait_for
from tests.transforms.harness import PKG, SCHEMALESS

CONFIG = {
    **SCHEMALESS,
    "transforms": "route,insert,drop",
    "transforms.route.type": f"{PKG}.RegexRouter",
    "transforms.route.regex": "(.*)",
    "transforms.route.replacement": "copied-$1",
    "transforms.insert.type": f"{PKG}.InsertField$Value",
    "transforms.insert.static.field": "origin",
    "transforms.insert.static.value": "replay-test",
    "transforms.drop.type": f"{PKG}.ReplaceField$Value",
    "transforms.drop.exclude": "payload",
}
ROWS_PER_BATCH = 12
BATCHES = 4

# The rate source's counter as Kafka records: every seventh value is not JSON (an errant record).
KAFKA_COLUMNS = [
    "CAST(CAST(value AS STRING) AS BINARY) AS key",
    "CAST(CASE WHEN value % 7 = 3 THEN '{not json' ELSE to_json(named_struct('n', value, 'payload', "
    "repeat('x', 40), 'double', value * 2)) END AS BINARY) AS value",
    "'orders' AS topic",
    "0 AS partition",
    "value AS offset",
    "timestamp",
    "0 AS timestampType",
    "CAST(array() AS ARRAY<STRUCT<key: STRING, value: BINARY>>) AS headers",
]


def _rows(frame: DataFrame | None) -> list[str]:
    return [] if frame is None else sorted(frame.toJSON().collect())


def _result(pipeline: Pipeline, batch: DataFrame) -> tuple[list[str], list[str]]:
    outcome = pipeline.run(batch)
    try:
        errant = outcome.errant.selectExpr("original.offset", "error IS NOT NULL") if outcome.errant else None
        return _rows(outcome.records.selectExpr("topic", "CAST(value AS STRING)", "key")), _rows(errant)
    finally:
        outcome.release()


def test_later_micro_batches_get_the_records_a_fresh_build_gets(spark: Any, tmp_path: Path) -> None:
    replayed = compile_pipeline(CONFIG, {}, "sink", "replay-test", 0)
    # A source's batch reaches its pipeline inside an observation of its offsets (kafka_io.write_observed),
    # a new one for every batch: the whole observed batch is swapped.
    observed = compile_pipeline(CONFIG, {}, "sink", "replay-test", 0)
    seen: list[tuple[int, list[str], list[str], list[str], list[str]]] = []
    first: list[DataFrame] = []
    swaps: list[bool] = []

    def each(batch: DataFrame, batch_id: int) -> None:
        if len(seen) >= BATCHES:
            return
        if first:
            # Moved alone, the batch's own plan comes out over this batch; joined with another relation
            # (a table could change between batches) it is not moved.
            alone = replay._swap(first[0].selectExpr("offset + 1 AS next"), first[0], batch)
            joined = first[0].crossJoin(batch.sparkSession.range(2))
            swaps.append(alone is not None and _rows(alone) == _rows(batch.selectExpr("offset + 1 AS next")))
            swaps.append(replay._swap(joined, first[0], batch) is None)
        else:
            first.append(batch)
        records, errant = _result(replayed, batch)
        watched = batch.observe(Observation(), F.count(F.lit(1)).alias("records"))
        swaps.append(_result(observed, watched) == (records, errant))
        fresh_records, fresh_errant = _result(compile_pipeline(CONFIG, {}, "sink", "replay-test", 0), batch)
        seen.append((batch_id, records, errant, fresh_records, fresh_errant))

    # Two query runs through the same pipelines, as a task's run restarts its query after a Kafka outage:
    # the second run's batches have columns of new ids, so its first batch is built and the rest moved.
    runs = []
    for run in range(2):
        seen.clear()
        first.clear()
        stream = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", ROWS_PER_BATCH).load()
        query = (
            stream.selectExpr(*KAFKA_COLUMNS)
            .writeStream.foreachBatch(each)
            .option("checkpointLocation", str(tmp_path / f"checkpoint-{run}"))
            .trigger(processingTime="0 seconds")
            .start()
        )
        try:
            wait_for(
                lambda q=query: len(seen) >= BATCHES or q.exception(), timeout=120, what=f"{BATCHES} micro-batches"
            )
        finally:
            query.stop()
        assert query.exception() is None
        runs.append(list(seen))

    assert swaps == [True] * 2 * (BATCHES + 2 * (BATCHES - 1))  # observed == plain each batch; two swaps each later
    assert replayed.replayed_batches == 2 * (BATCHES - 1), "every batch after a run's first moved onto, none built"
    assert observed.replayed_batches == 2 * (BATCHES - 1)
    for seen_in_run in runs:
        for batch_id, records, errant, fresh_records, fresh_errant in seen_in_run:
            assert (records, errant) == (fresh_records, fresh_errant), f"batch {batch_id}"
            assert len(records) + len(errant) == ROWS_PER_BATCH, f"batch {batch_id}"
        # Not all alike: each batch's own records came through (their keys differ batch to batch).
        firsts = [records[0] for _, records, *_ in seen_in_run]
        assert len(set(firsts)) == BATCHES
        assert '\\"origin\\":\\"replay-test\\"' in firsts[-1] and "copied-orders" in firsts[-1]
        assert not any("payload" in r for _, records, *_ in seen_in_run for r in records)
        assert sum(len(errant) for _, _, errant, *_ in seen_in_run) > 0, "some values were not JSON"


def test_a_pipeline_built_before_the_query_starts_moves_onto_its_first_batch(spark: Any, tmp_path: Path) -> None:
    # A sink task builds its pipeline on a stand-in batch while its query starts (sink_run._prebuilding):
    # the stand-in has the columns of every batch of a query over the stream, so even the first batch is
    # moved onto, and gets what a fresh build gets.
    prebuilt = compile_pipeline(CONFIG, {}, "sink", "replay-test", 0)
    stream = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", ROWS_PER_BATCH).load()
    records_stream = stream.selectExpr(*KAFKA_COLUMNS)
    assert prebuilt.prebuild(records_stream)
    assert prebuilt.replayed_batches == 0
    seen: list[tuple[int, tuple[list[str], list[str]], tuple[list[str], list[str]]]] = []

    def each(batch: DataFrame, batch_id: int) -> None:
        if len(seen) < 2:
            fresh = _result(compile_pipeline(CONFIG, {}, "sink", "replay-test", 0), batch)
            seen.append((batch_id, _result(prebuilt, batch), fresh))

    query = (
        records_stream.writeStream.foreachBatch(each)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="0 seconds")
        .start()
    )
    try:
        wait_for(lambda: len(seen) >= 2 or query.exception(), timeout=120, what="2 micro-batches")
    finally:
        query.stop()
    assert query.exception() is None
    assert prebuilt.replayed_batches == 2, "the first batch moved onto too, none built"
    for batch_id, moved, fresh in seen:
        assert moved == fresh, f"batch {batch_id}"
        assert len(moved[0]) + len(moved[1]) == ROWS_PER_BATCH, f"batch {batch_id}"
        assert moved[0] and "copied-orders" in moved[0][0]


def test_nothing_is_built_ahead_where_each_batch_must_be_built(spark: Any) -> None:
    # Records that pass through need no plan; a SQL step's statement may read tables that change, so its
    # pipeline is built on every batch and nothing is built ahead for it.
    stream = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", ROWS_PER_BATCH).load()
    records_stream = stream.selectExpr(*KAFKA_COLUMNS)
    passthrough = compile_pipeline({}, {}, "sink", "replay-test", 0)
    assert passthrough.passthrough
    assert not passthrough.prebuild(records_stream)
    sql = compile_pipeline(
        {
            **SCHEMALESS,
            "transforms": "q",
            "transforms.q.type": "sql",
            "transforms.q.statement": "SELECT * FROM records",
        },
        {},
        "sink",
        "replay-test",
        0,
    )
    assert sql.has_sql_step
    assert not sql.prebuild(records_stream)
    assert not sql._replays
