"""Where a store's records go: a Kafka compacted topic, or a list in memory for unit tests.

Both backends take the same encoded (key, value) records, so the in-memory twin exercises the exact
Kafka Connect formats that the Kafka backend writes.
"""

from __future__ import annotations

import json
import threading
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


class LogStore:
    """Base of the three stores: an in-memory view rebuilt from, and kept in step with, a backend.

    Writes are serialised and acknowledged by the backend before the view changes; the view's own
    lock is held only while records are applied, so readers never wait for a broker round trip.
    """

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._lock = threading.RLock()
        self._write_lock = threading.Lock()

    def start(self) -> None:
        self.backend.start(self._apply)

    def stop(self) -> None:
        self.backend.stop()

    def _write(self, records: Sequence[tuple[bytes, bytes | None]]) -> None:
        if not records:
            return
        with self._write_lock:
            self.backend.write(records)
            with self._lock:
                for key, value in records:
                    self._apply(key, value)

    def _apply(self, raw_key: bytes | None, raw_value: bytes | None) -> None:
        raise NotImplementedError
