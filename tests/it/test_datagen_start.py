"""datagen's head start: a task's `rate` stream is dated one second back, so its first trigger has
records to write (Spark's rate source counts whole seconds since its creation). Against real Spark,
since the date lives in Spark's own checkpoint layout and an upgrade could move it."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

from sparklink.api.connector import TaskContext
from sparklink.connectors.datagen import DatagenTask, seed_rate_start
from tests.helpers import unique, wait_for


def _first_records(spark: Any, ctx: TaskContext) -> list[Any]:
    """Run the task's stream into a memory table until it has records; returns them by seq."""
    table = unique("datagen_start").replace("-", "_")
    stream = DatagenTask().stream(ctx)
    query = (
        stream.writeStream.format("memory")
        .queryName(table)
        .option("checkpointLocation", str(ctx.checkpoint))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        wait_for(lambda: spark.sql(f"SELECT count(*) FROM {table}").first()[0] > 0, 120, "the first records")
    finally:
        query.stop()
    return list(spark.sql(f"SELECT seq, value.ts AS ts FROM {table} ORDER BY seq").collect())


def _ctx(spark: Any, tmp_path: Path, name: str) -> TaskContext:
    config = {"topic": "t", "task.rate": "20", "value.shape": "json"}
    return TaskContext("gen", 0, config, spark, checkpoint=str(tmp_path / name))


def test_spark_dates_the_rate_source_from_the_seeded_start(spark: Any, tmp_path: Path) -> None:
    ctx = _ctx(spark, tmp_path, "seeded")
    start_ms = int(time.time() * 1000) - 5000
    seed_rate_start(Path(str(ctx.checkpoint)), start_ms / 1000)
    # stream() seeds only an empty checkpoint: the date set here must survive it.
    rows = _first_records(spark, ctx)
    assert rows[0]["seq"] == 0
    assert datetime.fromisoformat(rows[0]["ts"]).timestamp() * 1000 == start_ms


def test_a_started_task_has_its_first_seconds_records_at_once(spark: Any, tmp_path: Path) -> None:
    before = time.time()
    rows = _first_records(spark, _ctx(spark, tmp_path, "fresh"))
    # Record 0 is dated before the task started (the head start), so the first trigger had a
    # whole second of records; without it, record 0 is dated when the query created its stream.
    first = datetime.fromisoformat(rows[0]["ts"]).timestamp()
    assert rows[0]["seq"] == 0
    assert first < before
