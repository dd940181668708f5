"""A sink batch's Kafka offsets, read from files laid out as Spark's checkpoint writes them (the layout was
taken from a real Kafka source query's checkpoint); the integration tests run it on real queries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparklink.worker.execution.offset_log import OffsetLogError, batch_range

METADATA = {"batchWatermarkMs": 0, "batchTimestampMs": 1795484373500, "conf": {"spark.sql.shuffle.partitions": "2"}}


def write_batch(checkpoint: Path, batch_id: int, offsets: dict[str, dict[str, int]]) -> None:
    path = checkpoint / "offsets" / str(batch_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"v1\n{json.dumps(METADATA)}\n{json.dumps(offsets)}")


def write_start(checkpoint: Path, offsets: dict[str, dict[str, int]]) -> None:
    path = checkpoint / "sources" / "0" / "0"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\0v1\n" + json.dumps(offsets).encode())  # the Kafka source's file starts with a zero byte


def test_the_first_batch_runs_from_the_offsets_the_query_started_at(tmp_path: Path) -> None:
    write_start(tmp_path, {"orders": {"0": 5, "1": 0}})
    write_batch(tmp_path, 0, {"orders": {"0": 20, "1": 7}})
    covered = batch_range(tmp_path, 0)
    assert covered.start == {("orders", 0): 5, ("orders", 1): 0}
    assert covered.end == {("orders", 0): 20, ("orders", 1): 7}
    assert covered.offsets == 22


def test_a_later_batch_runs_from_the_end_of_the_one_before(tmp_path: Path) -> None:
    write_start(tmp_path, {"orders": {"0": 0}})
    write_batch(tmp_path, 0, {"orders": {"0": 10}, "audit": {"3": 4}})
    write_batch(tmp_path, 1, {"orders": {"0": 10}, "audit": {"3": 9}})
    covered = batch_range(tmp_path, 1)
    assert covered.start == {("orders", 0): 10, ("audit", 3): 4}
    assert covered.offsets == 5  # orders/0 did not move


def test_a_partition_new_in_a_batch_counts_nothing_it_cannot_know(tmp_path: Path) -> None:
    write_start(tmp_path, {"orders": {"0": 0}})
    write_batch(tmp_path, 0, {"orders": {"0": 3, "1": 8}})
    assert batch_range(tmp_path, 0).offsets == 3


def test_a_missing_batch_or_a_source_that_is_not_kafka_is_a_clear_error(tmp_path: Path) -> None:
    write_start(tmp_path, {"orders": {"0": 0}})
    with pytest.raises(OffsetLogError, match=r"cannot read the Kafka offsets in .*offsets/0"):
        batch_range(tmp_path, 0)
    path = tmp_path / "offsets" / "0"
    path.parent.mkdir()
    path.write_text(f"v1\n{json.dumps(METADATA)}\n5")  # a rate source's offset
    with pytest.raises(OffsetLogError, match="does not hold one Kafka source's offsets"):
        batch_range(tmp_path, 0)
