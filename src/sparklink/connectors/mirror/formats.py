"""MirrorMaker 2's binary record formats: OffsetSync, Checkpoint and Heartbeat keys and values.

Callers: the source task (writes offset syncs), the checkpoint reader (reads syncs, reads and writes
checkpoints), the heartbeat task (key bytes; the value is built in Spark SQL from the same layout)
and the tests. Kafka protocol types, big-endian: STRING = int16 length + UTF-8 bytes, INT16/32/64.

- OffsetSync (connect-mirror OffsetSync): key {topic STRING, partition INT32};
  value {upstreamOffset INT64, offset INT64}, no version header.
- Checkpoint (connect-mirror-client Checkpoint): key {group STRING, topic STRING, partition INT32};
  value {version INT16 = 0} + {upstreamOffset INT64, offset INT64, metadata STRING}.
- Heartbeat (connect-mirror-client Heartbeat): key {sourceClusterAlias STRING, targetClusterAlias
  STRING}; value {version INT16 = 0} + {timestamp INT64}.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

VERSION = 0
_SHORT_MAX = 32767


class FormatError(ValueError):
    """Bytes that do not hold the expected record (Kafka's SchemaException)."""


@dataclass(frozen=True)
class OffsetSync:
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int


@dataclass(frozen=True)
class Checkpoint:
    group: str
    topic: str  # the topic's name on the target cluster
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str = ""


@dataclass(frozen=True)
class Heartbeat:
    source_cluster_alias: str
    target_cluster_alias: str
    timestamp: int


# ---------------------------------------------------------------------- primitives
def string(value: str) -> bytes:
    raw = value.encode("utf-8")
    if len(raw) > _SHORT_MAX:
        raise FormatError(f"String length {len(raw)} is larger than the maximum string length.")
    return struct.pack(">h", len(raw)) + raw


class _Reader:
    def __init__(self, raw: bytes | None, what: str) -> None:
        if raw is None:
            raise FormatError(f"{what} is null")
        self.raw = raw
        self.pos = 0
        self.what = what

    def take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.raw):
            raise FormatError(f"{self.what}: {len(self.raw)} bytes are too few")
        (value,) = struct.unpack_from(fmt, self.raw, self.pos)
        self.pos += size
        return int(value)

    def string(self) -> str:
        length = self.take(">h")
        if length < 0:
            raise FormatError(f"String length {length} cannot be negative")
        if self.pos + length > len(self.raw):
            raise FormatError(
                f"Error reading string of length {length}, only {len(self.raw) - self.pos} bytes available"
            )
        text = self.raw[self.pos : self.pos + length].decode("utf-8")
        self.pos += length
        return text

    def version(self) -> int:
        version = self.take(">h")
        if version != VERSION:
            raise FormatError(f"{self.what}: unsupported version {version}")
        return version


# ---------------------------------------------------------------------- OffsetSync
def offset_sync_key(topic: str, partition: int) -> bytes:
    return string(topic) + struct.pack(">i", partition)


def offset_sync_value(upstream_offset: int, downstream_offset: int) -> bytes:
    return struct.pack(">qq", upstream_offset, downstream_offset)


def encode_offset_sync(sync: OffsetSync) -> tuple[bytes, bytes]:
    return offset_sync_key(sync.topic, sync.partition), offset_sync_value(sync.upstream_offset, sync.downstream_offset)


def decode_offset_sync(key: bytes | None, value: bytes | None) -> OffsetSync:
    k, v = _Reader(key, "offset sync key"), _Reader(value, "offset sync value")
    topic, partition = k.string(), k.take(">i")
    return OffsetSync(topic, partition, v.take(">q"), v.take(">q"))


# ---------------------------------------------------------------------- Checkpoint
def encode_checkpoint(checkpoint: Checkpoint) -> tuple[bytes, bytes]:
    key = string(checkpoint.group) + string(checkpoint.topic) + struct.pack(">i", checkpoint.partition)
    value = struct.pack(">hqq", VERSION, checkpoint.upstream_offset, checkpoint.downstream_offset) + string(
        checkpoint.metadata
    )
    return key, value


def decode_checkpoint(key: bytes | None, value: bytes | None) -> Checkpoint:
    k, v = _Reader(key, "checkpoint key"), _Reader(value, "checkpoint value")
    group, topic, partition = k.string(), k.string(), k.take(">i")
    v.version()
    upstream, downstream = v.take(">q"), v.take(">q")
    return Checkpoint(group, topic, partition, upstream, downstream, v.string())


# ---------------------------------------------------------------------- Heartbeat
def heartbeat_key(source_cluster_alias: str, target_cluster_alias: str) -> bytes:
    return string(source_cluster_alias) + string(target_cluster_alias)


def encode_heartbeat(heartbeat: Heartbeat) -> tuple[bytes, bytes]:
    key = heartbeat_key(heartbeat.source_cluster_alias, heartbeat.target_cluster_alias)
    return key, struct.pack(">hq", VERSION, heartbeat.timestamp)


def decode_heartbeat(key: bytes | None, value: bytes | None) -> Heartbeat:
    k, v = _Reader(key, "heartbeat key"), _Reader(value, "heartbeat value")
    source, target = k.string(), k.string()
    v.version()
    return Heartbeat(source, target, v.take(">q"))
