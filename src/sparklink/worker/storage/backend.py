"""Where a store's records go: a Kafka compacted topic, or a list in memory for unit tests.

Both backends take the same encoded (key, value) records, so the in-memory twin exercises the exact
Kafka Connect formats that the Kafka backend writes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from sparklink.worker.storage.kafka_log import KafkaLog

Apply = Callable[[bytes | None, bytes | None], None]


class Backend(Protocol):
    def start(self, apply: Apply) -> None: ...
    def write(self, records: Sequence[tuple[bytes, bytes | None]]) -> None: ...
    def stop(self) -> None: ...

    @property
    def echoes(self) -> bool:
        """True if written records come back through `apply` (a log followed for several writers)."""
        ...

    def position(self) -> int:
        """How much of the log the view has applied (compared across workers of a group)."""
        ...

    def read_to_end(self) -> None:
        """Return once everything written so far, by anyone, has been applied."""
        ...


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

    echoes = False

    def position(self) -> int:
        return len(self.records)

    def read_to_end(self) -> None:
        pass


class KafkaBackend:
    """A compacted topic; with `follow`, tailed for the writes of the other workers of a group."""

    def __init__(self, log: KafkaLog, follow: bool = False) -> None:
        self.log = log
        self.follow = follow

    def start(self, apply: Apply) -> None:
        self.log.start(apply, follow=self.follow)

    @property
    def echoes(self) -> bool:
        return self.follow

    def position(self) -> int:
        return self.log.position()

    def read_to_end(self) -> None:
        self.log.read_to_end()

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

    @property
    def position(self) -> int:
        return self.backend.position()

    def refresh(self) -> None:
        """Apply everything written so far by any worker (Connect's readToEnd)."""
        self.backend.read_to_end()

    def _write(self, records: Sequence[tuple[bytes, bytes | None]]) -> None:
        if not records:
            return
        with self._write_lock:
            self.backend.write(records)
            if self.backend.echoes:
                return  # applied as it was read back
            with self._lock:
                for key, value in records:
                    self._apply(key, value)

    def _apply(self, raw_key: bytes | None, raw_value: bytes | None) -> None:
        raise NotImplementedError


class TextKeyStore(LogStore):
    """A store whose records have text keys and JSON values (the config and status topics): each record
    is applied under the view's lock; a record without a key is skipped, as Connect's stores skip it."""

    def _apply(self, raw_key: bytes | None, raw_value: bytes | None) -> None:
        if raw_key is None:
            return
        key, value = raw_key.decode(), decode(raw_value)
        with self._lock:
            self._apply_record(key, value)

    def _apply_record(self, key: str, value: Any) -> None:
        raise NotImplementedError
