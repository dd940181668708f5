"""The DescribeQuorum v1 encoding we send and the answers we read (the wire format of KIP-595/KIP-836)."""

from __future__ import annotations

import io
import struct

import pytest

from sparklink.platform import kraft_quorum as q


def answer(partition_error: int = 0, leader: int = 1001) -> bytes:
    def replica(node: int, caught_up: int) -> bytes:
        return struct.pack(">iqqq", node, 50, caught_up - 10, caught_up) + q._uvarint(0)

    body = struct.pack(">h", 0) + q._uvarint(2) + q._compact_string(q.METADATA_TOPIC) + q._uvarint(2)
    body += struct.pack(">ihiiq", 0, partition_error, leader, 7, 50)
    body += q._uvarint(3) + replica(1000, 900) + replica(1001, 1000)  # two voters
    body += q._uvarint(2) + replica(1, 990)  # one observer (a broker)
    body += q._uvarint(0) + q._uvarint(0) + q._uvarint(0)  # partition, topic, response tagged fields
    return body


def test_the_request_is_describe_quorum_v1_for_the_metadata_partition() -> None:
    data = io.BytesIO(q._request(42))
    assert struct.unpack(">hhi", data.read(8)) == (55, 1, 42)
    data.read(struct.unpack(">h", data.read(2))[0])  # client id
    q._skip_tags(data)
    assert q._uvarint_read(data) == 2 and q._compact_string_read(data) == "__cluster_metadata"


def test_an_answer_gives_the_leader_and_each_voters_catch_up_time() -> None:
    info = q._parse(io.BytesIO(answer()))
    assert (info.leader_id, info.leader_epoch, info.high_watermark) == (1001, 7, 50)
    assert [(v.replica_id, v.last_caught_up_timestamp) for v in info.voters] == [(1000, 900), (1001, 1000)]
    assert [o.replica_id for o in info.observers] == [1]


def test_a_follower_says_it_is_not_the_leader() -> None:
    with pytest.raises(q.QuorumError, match="not the quorum leader"):
        q._parse(io.BytesIO(answer(partition_error=q.NOT_LEADER_OR_FOLLOWER)))


def test_no_address_answering_names_each_one() -> None:
    with pytest.raises(q.QuorumError, match=r"127\.0\.0\.1:1"):
        q.describe_quorum(["127.0.0.1:1"], timeout=1)
