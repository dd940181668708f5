"""DescribeQuorum (KIP-595/KIP-836) over Kafka's wire protocol: the KRaft leader and each voter's lag.

Callers: `KafkaCluster.active_controller` and the roller's quorum check. The pinned confluent-kafka
(librdkafka 2.16) has no describeMetadataQuorum, so this sends the one request itself: API key 55, version 1
(flexible encoding), on a controller's listener, which answers when it is the leader (a follower answers
NOT_LEADER_OR_FOLLOWER and the next address is tried) - or on a broker's, which forwards it. On a secured
cluster the controller listener is mutual TLS: pass an SSL context holding a client certificate it trusts.
"""

from __future__ import annotations

import io
import itertools
import socket
import ssl
import struct
from collections.abc import Iterable
from dataclasses import dataclass

API_KEY = 55
API_VERSION = 1
METADATA_TOPIC = "__cluster_metadata"
CLIENT_ID = b"sparklink-quorum"
NOT_LEADER_OR_FOLLOWER = 6
_correlation = itertools.count(1)


class QuorumError(RuntimeError):
    """No address answered DescribeQuorum; the message names what each one said."""


@dataclass(frozen=True)
class ReplicaState:
    replica_id: int
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int


@dataclass(frozen=True)
class QuorumInfo:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaState, ...]
    observers: tuple[ReplicaState, ...]


def describe_quorum(addresses: Iterable[str], timeout: float = 5.0, tls: ssl.SSLContext | None = None) -> QuorumInfo:
    """Ask each `host:port` in turn (over TLS with `tls`); the first full answer wins."""
    problems: list[str] = []
    for address in addresses:
        host, _, port = address.rpartition(":")
        try:
            return _ask(host, int(port), timeout, tls)
        except (OSError, QuorumError, struct.error, ValueError) as exc:
            problems.append(f"{address}: {exc}")
    raise QuorumError("DescribeQuorum failed on every address (" + "; ".join(problems) + ")")


def _ask(host: str, port: int, timeout: float, tls: ssl.SSLContext | None) -> QuorumInfo:
    correlation_id = next(_correlation) & 0x7FFFFFFF
    with socket.create_connection((host, port), timeout=timeout) as raw:
        sock = tls.wrap_socket(raw, server_hostname=host) if tls else raw
        sock.settimeout(timeout)
        sock.sendall(_frame(_request(correlation_id)))
        size = struct.unpack(">i", _read_exactly(sock, 4))[0]
        payload = io.BytesIO(_read_exactly(sock, size))
    if _int32(payload) != correlation_id:
        raise QuorumError("the answer does not match the request")
    _skip_tags(payload)  # response header v1
    return _parse(payload)


def _request(correlation_id: int) -> bytes:
    out = io.BytesIO()
    # Request header v2: api key, version, correlation id, client id (int16-length string), tagged fields.
    out.write(struct.pack(">hhih", API_KEY, API_VERSION, correlation_id, len(CLIENT_ID)))
    out.write(CLIENT_ID)
    out.write(_uvarint(0))
    # Body: topics [ {name, partitions [ {index} ]} ], each struct closed with empty tagged fields.
    out.write(_uvarint(1 + 1))
    out.write(_compact_string(METADATA_TOPIC))
    out.write(_uvarint(1 + 1))
    out.write(struct.pack(">i", 0))
    out.write(_uvarint(0))
    out.write(_uvarint(0))
    out.write(_uvarint(0))
    return out.getvalue()


def _parse(data: io.BytesIO) -> QuorumInfo:
    error = _int16(data)
    if error:
        raise QuorumError(f"DescribeQuorum error code {error}")
    topics = _uvarint_read(data) - 1
    for _ in range(topics):
        _compact_string_read(data)
        for _ in range(_uvarint_read(data) - 1):
            _int32(data)  # partition index
            partition_error = _int16(data)
            leader_id, leader_epoch = _int32(data), _int32(data)
            high_watermark = _int64(data)
            voters = _replicas(data)
            observers = _replicas(data)
            _skip_tags(data)
            if partition_error == NOT_LEADER_OR_FOLLOWER:
                raise QuorumError(f"not the quorum leader (leader is {leader_id})")
            if partition_error:
                raise QuorumError(f"DescribeQuorum partition error code {partition_error}")
            return QuorumInfo(leader_id, leader_epoch, high_watermark, voters, observers)
    raise QuorumError("DescribeQuorum answered without the metadata partition")


def _replicas(data: io.BytesIO) -> tuple[ReplicaState, ...]:
    out = []
    for _ in range(_uvarint_read(data) - 1):
        replica = ReplicaState(_int32(data), _int64(data), _int64(data), _int64(data))
        _skip_tags(data)
        out.append(replica)
    return tuple(out)


def _frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        chunk = sock.recv(n - len(chunks))
        if not chunk:
            raise QuorumError("the connection closed before the answer was complete")
        chunks += chunk
    return bytes(chunks)


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _uvarint_read(data: io.BytesIO) -> int:
    shift = result = 0
    while True:
        raw = data.read(1)
        if not raw:
            raise QuorumError("truncated answer")
        result |= (raw[0] & 0x7F) << shift
        if not raw[0] & 0x80:
            return result
        shift += 7


def _compact_string(value: str) -> bytes:
    encoded = value.encode()
    return _uvarint(len(encoded) + 1) + encoded


def _compact_string_read(data: io.BytesIO) -> str:
    return data.read(_uvarint_read(data) - 1).decode()


def _skip_tags(data: io.BytesIO) -> None:
    for _ in range(_uvarint_read(data)):
        _uvarint_read(data)
        data.read(_uvarint_read(data))


def _int16(data: io.BytesIO) -> int:
    return int(struct.unpack(">h", data.read(2))[0])


def _int32(data: io.BytesIO) -> int:
    return int(struct.unpack(">i", data.read(4))[0])


def _int64(data: io.BytesIO) -> int:
    return int(struct.unpack(">q", data.read(8))[0])
