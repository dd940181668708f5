"""The storage defaults a local cluster's nodes start with."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparklink.platform.kafka import KafkaCluster
from sparklink.platform.kafka_node_settings import DEDUPE_BUFFER_DEFAULT, dedupe_buffer_size

MIB = 1024 * 1024


@pytest.mark.parametrize(
    ("heap", "expected"),
    [("256m", 16 * MIB), ("512m", 32 * MIB), ("262144k", 16 * MIB), ("1G", 64 * MIB), ("4g", DEDUPE_BUFFER_DEFAULT)],
)
def test_the_dedupe_buffer_is_a_sixteenth_of_the_heap_up_to_kafkas_default(heap: str, expected: int) -> None:
    assert dedupe_buffer_size(heap) == expected


@pytest.mark.parametrize("heap", ["", "lots", "m", "1.5g"])
def test_a_heap_the_platform_cannot_read_keeps_kafkas_default_dedupe_buffer(heap: str) -> None:
    assert dedupe_buffer_size(heap) == DEDUPE_BUFFER_DEFAULT


def test_a_node_gets_the_dedupe_buffer_of_its_own_heap_and_extra_config_still_wins(tmp_path: Path) -> None:
    cluster = KafkaCluster.create_nodes(
        tmp_path / "c", [(0, "broker,controller", ""), (1, "broker", "1g")], heap="256m"
    )
    assert cluster.node_settings(0)["log.cleaner.dedupe.buffer.size"] == str(16 * MIB)
    assert cluster.node_settings(1)["log.cleaner.dedupe.buffer.size"] == str(64 * MIB)
    cluster.extra_config["log.cleaner.dedupe.buffer.size"] = str(8 * MIB)
    assert cluster.node_settings(1)["log.cleaner.dedupe.buffer.size"] == str(8 * MIB)
