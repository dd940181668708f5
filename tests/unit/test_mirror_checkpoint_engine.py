"""The checkpoint engine's start-up: what it does when reading MM2's internal topics fails.

The internal topics are read by a twin of `PartitionZeroReader` that replays records or raises the
error a broker would give; the translation and the stores are the real ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException

from sparklink.connectors.mirror import checkpoint_reader, formats
from sparklink.connectors.mirror.checkpoint_reader import CheckpointEngine
from sparklink.connectors.mirror.formats import Checkpoint, OffsetSync

CONFIG = {
    "source.cluster.alias": "a",
    "target.cluster.alias": "b",
    "source.cluster.bootstrap.servers": "127.0.0.1:1",
    "target.cluster.bootstrap.servers": "127.0.0.1:1",
    "task.assigned.groups": "app",
    "emit.checkpoints.interval.seconds": "1",
}
SYNCS = "mm2-offset-syncs.b.internal"
CHECKPOINTS = "a.checkpoints.internal"
Handler = Callable[[bytes | None, bytes | None], None]


class TopicsTwin:
    """Records per internal topic, and errors to raise on the next reads of a topic."""

    def __init__(self) -> None:
        self.records: dict[str, list[tuple[bytes, bytes]]] = {SYNCS: [], CHECKPOINTS: []}
        self.failures: dict[str, list[Exception]] = {SYNCS: [], CHECKPOINTS: []}
        self.open: set[int] = set()

    def reader(self, _config: dict[str, object], topic: str) -> Reader:
        return Reader(self, topic)


class Reader:
    def __init__(self, topics: TopicsTwin, topic: str) -> None:
        self.topics, self.topic, self.position = topics, topic, 0
        topics.open.add(id(self))

    def read_to_end(self, handle: Handler) -> None:
        if self.topics.failures[self.topic]:
            raise self.topics.failures[self.topic].pop(0)
        records = self.topics.records[self.topic]
        for key, value in records[self.position :]:
            handle(key, value)
        self.position = len(records)

    def close(self) -> None:
        self.topics.open.discard(id(self))


@pytest.fixture
def topics(monkeypatch: pytest.MonkeyPatch) -> Iterator[TopicsTwin]:
    twin = TopicsTwin()
    monkeypatch.setattr(checkpoint_reader, "PartitionZeroReader", twin.reader)
    yield twin


def sync(upstream: int, downstream: int) -> tuple[bytes, bytes]:
    return formats.encode_offset_sync(OffsetSync("orders", 0, upstream, downstream))


def kafka_error(code: int) -> KafkaException:
    return KafkaException(KafkaError(code))


def test_a_failed_first_read_is_retried_and_loses_no_sync(topics: TopicsTwin) -> None:
    topics.records[SYNCS] = [sync(0, 0), sync(50, 40), sync(99, 90)]
    topics.failures[SYNCS] = [kafka_error(KafkaError._TIMED_OUT)]
    engine = CheckpointEngine(CONFIG)

    assert engine.tick() == []  # the syncs could not be read: no checkpoint, no failure
    assert engine.sync_reader is None and topics.open == set()

    engine.tick()
    # The checkpoints topic was read, so every sync counts, not only the latest one.
    assert not engine.syncs.initialization_must_read_to_end
    assert engine.syncs.translate_downstream("orders", 0, 60) == 41


def test_a_timeout_on_the_checkpoints_topic_is_retried_instead_of_degrading(topics: TopicsTwin) -> None:
    earlier = Checkpoint("app", "a.orders", 0, 30, 25, "")
    topics.records[CHECKPOINTS] = [formats.encode_checkpoint(earlier)]
    topics.records[SYNCS] = [sync(0, 0), sync(50, 40), sync(99, 90)]
    topics.failures[CHECKPOINTS] = [TimeoutError("could not read to offset 1 in 60s")]
    engine = CheckpointEngine(CONFIG)

    engine.tick()
    assert engine.sync_reader is None

    engine.tick()
    assert engine.checkpoints.checkpoints == {"app": {("a.orders", 0): earlier}}
    assert engine.syncs.translate_downstream("orders", 0, 60) == 41


def test_no_right_to_read_checkpoints_degrades_to_the_latest_sync_like_mm2(topics: TopicsTwin) -> None:
    topics.records[SYNCS] = [sync(0, 0), sync(50, 40), sync(99, 90)]
    topics.failures[CHECKPOINTS] = [kafka_error(KafkaError.TOPIC_AUTHORIZATION_FAILED)]
    engine = CheckpointEngine(CONFIG)

    engine.tick()

    assert engine.syncs.initialization_must_read_to_end
    assert engine.syncs.translate_downstream("orders", 0, 60) == -1  # only sync 99 is left
    assert engine.syncs.translate_downstream("orders", 0, 99) == 90


def test_a_failed_later_read_keeps_the_syncs_already_read(topics: TopicsTwin) -> None:
    topics.records[SYNCS] = [sync(0, 0)]
    engine = CheckpointEngine(CONFIG)
    engine.tick()
    topics.records[SYNCS].append(sync(50, 40))
    topics.failures[SYNCS] = [kafka_error(KafkaError._TRANSPORT)]

    assert engine.tick() == []
    assert engine.syncs.translate_downstream("orders", 0, 60) == 1  # only sync 0 so far

    engine.tick()
    assert engine.syncs.translate_downstream("orders", 0, 60) == 41
