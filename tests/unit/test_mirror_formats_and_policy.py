"""MM2 record formats (byte layouts) and topic naming, without Kafka or Spark."""

from __future__ import annotations

import struct

import pytest

from sparklink.connectors.mirror import formats
from sparklink.connectors.mirror.filters import IncludeExclude
from sparklink.connectors.mirror.policy import ReplicationPolicy


def test_offset_sync_bytes_are_kafka_protocol_types_big_endian() -> None:
    key, value = formats.encode_offset_sync(formats.OffsetSync("tö", 7, 5, 300))
    assert key == b"\x00\x03t\xc3\xb6" + b"\x00\x00\x00\x07"
    assert value == struct.pack(">qq", 5, 300)  # no version header
    assert formats.decode_offset_sync(key, value) == formats.OffsetSync("tö", 7, 5, 300)


def test_checkpoint_bytes_carry_a_version_header_and_metadata() -> None:
    cp = formats.Checkpoint("g", "src.t", 2, 95, 89, "meta")
    key, value = formats.encode_checkpoint(cp)
    assert key == b"\x00\x01g" + b"\x00\x05src.t" + b"\x00\x00\x00\x02"
    assert value == b"\x00\x00" + struct.pack(">qq", 95, 89) + b"\x00\x04meta"
    assert formats.decode_checkpoint(key, value) == cp


def test_heartbeat_bytes() -> None:
    key, value = formats.encode_heartbeat(formats.Heartbeat("a", "bb", 1_700_000_000_123))
    assert key == b"\x00\x01a\x00\x02bb"
    assert value == b"\x00\x00" + struct.pack(">q", 1_700_000_000_123)
    assert formats.decode_heartbeat(key, value) == formats.Heartbeat("a", "bb", 1_700_000_000_123)


@pytest.mark.parametrize(
    ("key", "value"),
    [(b"\x00", b""), (b"\xff\xff", b"\x00" * 16), (b"\x00\x05ab", b"\x00" * 16), (None, b"\x00" * 16)],
)
def test_truncated_or_negative_lengths_are_format_errors(key: bytes | None, value: bytes) -> None:
    with pytest.raises(formats.FormatError):
        formats.decode_offset_sync(key, value)


def test_checkpoint_with_unknown_version_is_refused() -> None:
    key, value = formats.encode_checkpoint(formats.Checkpoint("g", "t", 0, 1, 1))
    with pytest.raises(formats.FormatError):
        formats.decode_checkpoint(key, b"\x00\x01" + value[2:])


def test_default_policy_names_remote_and_internal_topics() -> None:
    policy = ReplicationPolicy()
    assert policy.format_remote_topic("us", "orders") == "us.orders"
    assert policy.topic_source("us.orders") == "us"
    assert policy.upstream_topic("eu.us.orders") == "us.orders"
    assert policy.original_topic("eu.us.orders") == "orders"
    assert policy.topic_source("orders") is None and policy.upstream_topic("orders") is None
    assert policy.offset_syncs_topic("eu") == "mm2-offset-syncs.eu.internal"
    assert policy.checkpoints_topic("us") == "us.checkpoints.internal"
    assert policy.is_heartbeats_topic("eu.us.heartbeats") and not policy.is_heartbeats_topic("x.beats")
    assert policy.is_internal_topic("__consumer_offsets") and policy.is_internal_topic(".hidden")
    assert policy.is_internal_topic("mm2-offsets.us.internal") and policy.is_internal_topic("us.checkpoints.internal")
    # Only mm2* and checkpoints count as MM2 internal topics (4.3.1), not any *.internal topic.
    assert not policy.is_internal_topic("app.internal")


def test_custom_separator_applies_to_internal_topics_unless_disabled() -> None:
    custom = ReplicationPolicy.from_config({"replication.policy.separator": "_"})
    assert custom.format_remote_topic("us", "orders") == "us_orders"
    assert custom.topic_source("us_orders") == "us"
    assert custom.offset_syncs_topic("eu") == "mm2-offset-syncs_eu_internal"
    assert custom.checkpoints_topic("us") == "us_checkpoints_internal"
    legacy = ReplicationPolicy.from_config(
        {"replication.policy.separator": "_", "replication.policy.internal.topic.separator.enabled": "false"}
    )
    assert legacy.offset_syncs_topic("eu") == "mm2-offset-syncs.eu.internal"
    assert legacy.checkpoints_topic("us") == "us.checkpoints.internal"
    assert legacy.format_remote_topic("us", "orders") == "us_orders"


def test_separator_split_follows_java_rules() -> None:
    policy = ReplicationPolicy()
    assert policy.topic_source("a.") is None  # trailing empty parts are dropped
    assert policy.topic_source(".a") == ""


def test_identity_policy_keeps_names_except_heartbeats() -> None:
    policy = ReplicationPolicy.from_config(
        {
            "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
            "source.cluster.alias": "us",
        }
    )
    assert policy.format_remote_topic("us", "orders") == "orders"
    assert policy.topic_source("orders") == "us"
    assert policy.upstream_topic("orders") == "orders"
    assert policy.original_topic("orders") == "orders"
    assert policy.format_remote_topic("us", "heartbeats") == "us.heartbeats"
    assert policy.topic_source("us.heartbeats") == "us"


def test_unknown_policy_class_is_refused() -> None:
    with pytest.raises(ValueError, match=r"replication\.policy\.class"):
        ReplicationPolicy.from_config({"replication.policy.class": "com.example.Mine"})


def test_filters_match_whole_names_and_excludes_win() -> None:
    topics = IncludeExclude.of(["orders.*", "payments"], ["mm2.*\\.internal", ".*\\.replica", "__.*"])
    assert topics.accepts("orders-eu") and topics.accepts("payments")
    assert not topics.accepts("payments-x")  # Java matches(): the whole name
    assert not topics.accepts("orders.replica")
    assert not IncludeExclude.of([], []).accepts("anything")  # a blank list matches nothing
