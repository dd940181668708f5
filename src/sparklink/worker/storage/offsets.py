"""Source connector offsets in Connect's offsets-topic format.

Key: compact JSON `["<connector>",{partition}]`; value: the offset map as JSON, or a tombstone to
remove the partition (OffsetStorageWriter / OffsetUtils with schemas disabled).
"""

from __future__ import annotations

import json
from typing import Any

from sparklink.worker.storage.backend import Backend, LogStore, decode, encode

Partition = dict[str, Any]
Offset = dict[str, Any]


class OffsetStore(LogStore):
    def __init__(self, backend: Backend) -> None:
        super().__init__(backend)
        # connector -> canonical partition JSON -> (partition, offset)
        self._offsets: dict[str, dict[str, tuple[Partition, Offset]]] = {}

    def get(self, connector: str) -> list[tuple[Partition, Offset]]:
        with self._lock:
            return list(self._offsets.get(connector, {}).values())

    def put(self, connector: str, offsets: list[tuple[Partition, Offset | None]]) -> None:
        """Write offsets (None removes the partition) and wait for the brokers to acknowledge."""
        records = [(encode([connector, p]), None if o is None else encode(o)) for p, o in offsets]
        self._write(records)

    def reset(self, connector: str) -> None:
        """Tombstone every partition the connector has."""
        self.put(connector, [(p, None) for p, _ in self.get(connector)])

    def _apply(self, raw_key: bytes | None, raw_value: bytes | None) -> None:
        if raw_key is None:
            return
        try:
            key = json.loads(raw_key)
        except ValueError:
            return  # not written by a Connect-compatible worker; Connect skips these too
        if not (isinstance(key, list) and len(key) == 2 and isinstance(key[1], dict)):
            return
        connector, partition = str(key[0]), key[1]
        canonical = json.dumps(partition, sort_keys=True)
        value = decode(raw_value)
        with self._lock:
            if value is None:
                self._offsets.get(connector, {}).pop(canonical, None)
            else:
                self._offsets.setdefault(connector, {})[canonical] = (partition, value)
