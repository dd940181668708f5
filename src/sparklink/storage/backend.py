"""Where a store's records go: a Kafka compacted topic, or a list in memory for unit tests.

Both backends take the same encoded (key, value) records, so the in-memory twin exercises the exact
Kafka Connect formats that the Kafka backend writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from sparklink.storage.kafka_log import KafkaLog

Apply = Callable[[bytes | None, bytes | None], None]


class Backend(Protocol):
    def start(self, apply: Apply) -> None: ...
    def write(self, records: Sequence[tuple[bytes, bytes | None]]) -> None: ...
    def stop(self) -> None: ...


class MemoryBackend:
    """Keeps the records in a list; a new store started on the same backend replays them."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None]] = []

    def start(self, apply: Apply) -> None:
        for key, value in self.records:
            apply(key, value)

    def write(self, records: Sequence[tuple[bytes, bytes | None]]) -> None:
        self.records.extend(records)

    def stop(self) -> None:
        pass


class KafkaBackend:
    def __init__(self, log: KafkaLog) -> None:
        self.log = log

    def start(self, apply: Apply) -> None:
        self.log.start(apply)

    def write(self, records: Sequence[tuple[bytes, bytes | None]]) -> None:
        self.log.send_many(list(records))

    def stop(self) -> None:
        self.log.stop()


def encode(value: Any) -> bytes:
    """Compact JSON as Kafka's JsonConverter (schemas off) writes it."""
    return json.dumps(value, separators=(",", ":")).encode()


def decode(raw: bytes | None) -> Any:
    return None if raw is None else json.loads(raw)
