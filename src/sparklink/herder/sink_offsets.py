"""Sink connector offsets (KIP-875): the consumer group `connect-<name>` is their only home.

Parses and validates the body of an alter request with Connect's exact messages, and reads, alters
and resets the group through the Admin API. Caller: the herder, only while the connector is STOPPED.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from sparklink.api.errors import BadRequestError, ConnectError
from sparklink.kafka_clients import client_config

TOPIC_KEY, PARTITION_KEY, OFFSET_KEY = "kafka_topic", "kafka_partition", "kafka_offset"


def parse(offsets: list[tuple[Any, Any]]) -> dict[tuple[str, int], int | None]:
    """{(topic, partition): offset or None} from the request's partition/offset pairs, or a 400."""
    out: dict[tuple[str, int], int | None] = {}
    for partition, offset in offsets:
        if partition is None:
            raise BadRequestError("The partition for a sink connector offset cannot be null or missing")
        if not isinstance(partition, dict) or TOPIC_KEY not in partition or PARTITION_KEY not in partition:
            raise BadRequestError(
                f"The partition for a sink connector offset must contain the keys '{TOPIC_KEY}' and '{PARTITION_KEY}'"
            )
        topic, number = partition[TOPIC_KEY], partition[PARTITION_KEY]
        if not isinstance(topic, str):
            raise BadRequestError("Kafka topic names must be valid strings and may not be null")
        if number is None:
            raise BadRequestError("Kafka partitions must be valid numbers and may not be null")
        part = _integer(
            number,
            f"Failed to parse the following Kafka partition value in the provided offsets: '{number}'. "
            "Partition values for sink connectors need to be integers.",
        )
        if offset is None:
            out[(topic, part)] = None
            continue
        if not isinstance(offset, dict) or OFFSET_KEY not in offset:
            raise BadRequestError(
                f"The offset for a sink connector should either be null or contain the key '{OFFSET_KEY}'"
            )
        value = offset[OFFSET_KEY]
        out[(topic, part)] = _integer(
            value,
            f"Failed to parse the following Kafka offset value in the provided offsets: '{value}'. "
            "Offset values for sink connectors need to be integers.",
        )
    return out


def _integer(value: Any, message: str) -> int:
    if isinstance(value, bool):
        raise BadRequestError(message)
    if isinstance(value, int):
        return value
    try:
        return int(str(value))
    except ValueError:
        raise BadRequestError(message) from None


def read(bootstrap: str, group: str) -> list[dict[str, Any]]:
    admin = AdminClient(client_config(bootstrap))
    try:
        result = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(30)
    except KafkaException as exc:
        if "GROUP_ID_NOT_FOUND" in str(exc):
            return []
        raise
    return [
        {"partition": {TOPIC_KEY: tp.topic, PARTITION_KEY: tp.partition}, "offset": {OFFSET_KEY: tp.offset}}
        for tp in sorted(result.topic_partitions or [], key=lambda t: (t.topic, t.partition))
        if tp.offset >= 0
    ]


def _ensure_no_members(admin: AdminClient, connector: str, group: str, verb: str) -> None:
    description = admin.describe_consumer_groups([group])[group].result(30)
    if description.members:
        raise ConnectError(
            f"Failed to {verb} consumer group offsets for connector {connector} either because its tasks haven't "
            f"stopped completely yet or the connector was resumed before the request to {verb} its offsets could "
            "be successfully completed. If the connector is in a stopped state, this operation can be safely "
            "retried. If it doesn't eventually succeed, the Connect cluster may need to be restarted to get rid "
            "of the zombie sink tasks."
        )


def alter(bootstrap: str, connector: str, group: str, changes: dict[tuple[str, int], int | None]) -> None:
    admin = AdminClient(client_config(bootstrap))
    _ensure_no_members(admin, connector, group, "alter")
    current = {
        (o["partition"][TOPIC_KEY], o["partition"][PARTITION_KEY]): o["offset"][OFFSET_KEY]
        for o in read(bootstrap, group)
    }
    removed = [tp for tp, off in changes.items() if off is None and tp in current]
    if removed:
        # The Admin API of this client has no per-partition offset delete; the group is empty (checked
        # above), so dropping it and committing back the partitions that stay is equivalent.
        _delete_group(admin, group)
        keep = {tp: off for tp, off in current.items() if tp not in changes}
        _commit(admin, group, keep)
    _commit(admin, group, {tp: off for tp, off in changes.items() if off is not None})


def reset(bootstrap: str, connector: str, group: str) -> None:
    admin = AdminClient(client_config(bootstrap))
    _ensure_no_members(admin, connector, group, "reset")
    _delete_group(admin, group)


def _commit(admin: AdminClient, group: str, offsets: dict[tuple[str, int], int]) -> None:
    if not offsets:
        return
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p, o) for (t, p), o in offsets.items()])
    admin.alter_consumer_group_offsets([request])[group].result(30)


def _delete_group(admin: AdminClient, group: str) -> None:
    try:
        admin.delete_consumer_groups([group])[group].result(30)
    except KafkaException as exc:
        if "GROUP_ID_NOT_FOUND" not in str(exc):  # already gone: reset is idempotent
            raise
