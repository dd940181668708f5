"""How many records a sink's micro-batch may hold (kafka_io.batch_limit)."""

from __future__ import annotations

from sparklink.api.task_config import MAX_RECORDS_PER_BATCH, MIN_RECORDS_PER_BATCH, TaskSettings
from sparklink.worker.execution import kafka_io


def test_the_config_bound_wins_then_a_minimum_means_no_bound_then_the_kind_of_task_decides() -> None:
    bounded = TaskSettings.parse({MAX_RECORDS_PER_BATCH: "500", MIN_RECORDS_PER_BATCH: "100"})
    assert kafka_io.batch_limit(bounded, holds_batch=True) == 500
    assert kafka_io.batch_limit(bounded, holds_batch=False) == 500
    waiting = TaskSettings.parse({MIN_RECORDS_PER_BATCH: "100"})
    assert kafka_io.batch_limit(waiting, holds_batch=True) is None
    plain = TaskSettings.parse({})
    assert kafka_io.batch_limit(plain, holds_batch=True) == kafka_io.SINK_BATCH_RECORDS
    assert kafka_io.batch_limit(plain, holds_batch=False) == kafka_io.SINK_STREAMED_BATCH_RECORDS
    assert kafka_io.SINK_STREAMED_BATCH_RECORDS > kafka_io.SINK_BATCH_RECORDS
