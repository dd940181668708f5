"""Offset requests (KIP-875) checked as Connect checks them, with its exact messages.

Source offsets must be JSON objects with string keys and primitive values (Connect's OffsetUtils);
sink offsets name a topic partition and a Kafka offset (SinkUtils#parseSinkConnectorOffsets). The
connector then accepts or refuses the change, and says whether it applied it itself, which picks the
success message; `Editor` then writes the change where the offsets live (the offsets topic, or the
sink's consumer group). Caller: the herder, only while the connector is STOPPED.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from pydantic import JsonValue

from sparklink.api.connector import Offset, Partition
from sparklink.api.errors import BadRequestError
from sparklink.api.task_config import sink_group
from sparklink.worker.herder.model import ConnectorOffset
from sparklink.worker.herder.runner import ConnectorRunner
from sparklink.worker.storage.group_offsets import GroupOffsetStore
from sparklink.worker.storage.offsets import OffsetStore

TOPIC_KEY, PARTITION_KEY, OFFSET_KEY = "kafka_topic", "kafka_partition", "kafka_offset"
TopicPartitionKey = tuple[str, int]

STOPPED_REQUIRED = (
    "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the "
    "specified connector by issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint"
)


def check_source(entries: Sequence[ConnectorOffset]) -> None:
    """Connect's OffsetUtils rules for source entries: string keys and primitive values only."""
    for entry in entries:
        for what, value in (("partition", entry.partition), ("offset", entry.offset)):
            if value is None and what == "offset":
                continue  # a null offset removes the partition
            if not isinstance(value, dict):
                raise BadRequestError(f"Source connector {what}s must be JSON objects, not {json_type(value)}")
            for key, item in value.items():
                if isinstance(item, dict | list):
                    raise BadRequestError(
                        f"Source connector {what} values must be primitives (string, number, boolean or null); "
                        f"'{key}' is {json_type(item)}"
                    )


def json_type(value: JsonValue) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def parse_sink(entries: Sequence[ConnectorOffset]) -> dict[TopicPartitionKey, int | None]:
    """{(topic, partition): offset or None} from the request's entries, or a 400."""
    out: dict[TopicPartitionKey, int | None] = {}
    for entry in entries:
        partition, offset = entry.partition, entry.offset
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


def _integer(value: JsonValue, message: str) -> int:
    if isinstance(value, bool):
        raise BadRequestError(message)
    if isinstance(value, int):
        return value
    try:
        return int(str(value))
    except ValueError:
        raise BadRequestError(message) from None


def sink_entries(committed: Mapping[TopicPartitionKey, int]) -> list[ConnectorOffset]:
    """A group's committed offsets as Connect shows them, sorted by topic and partition."""
    return [
        ConnectorOffset(partition={TOPIC_KEY: topic, PARTITION_KEY: partition}, offset={OFFSET_KEY: offset})
        for (topic, partition), offset in sorted(committed.items())
    ]


def success_message(verb: str, handled_by_connector: bool) -> str:
    """Connect's two texts (Worker#completeModifyOffsetsCallback); `verb` is altered or reset."""
    if handled_by_connector:
        return f"The offsets for this connector have been {verb} successfully"
    return (
        f"The Connect framework-managed offsets for this connector have been {verb} successfully. However, if "
        f"this connector manages offsets externally, they will need to be manually {verb} in the system that "
        "the connector uses."
    )


def pairs(entries: Sequence[ConnectorOffset]) -> list[tuple[Partition, Offset | None]]:
    """The entries as a connector's `alter_offsets` and the offset store take them (after the checks above)."""
    return [(cast(Partition, e.partition), cast(Offset | None, e.offset)) for e in entries]


def removals(entries: Sequence[ConnectorOffset]) -> list[tuple[Partition, Offset | None]]:
    """A reset as the connector sees it: every partition it has, with a null offset."""
    return [(cast(Partition, e.partition), None) for e in entries]


@dataclass(frozen=True)
class Editor:
    """Applies a checked alter (entries) or reset (None) to where the connector's offsets live."""

    source_offsets: OffsetStore
    group_offsets: GroupOffsetStore
    worker: ConnectorRunner

    def modify(
        self, name: str, config: Mapping[str, str], sink: bool, entries: Sequence[ConnectorOffset] | None
    ) -> bool:
        """True if the connector applied the change itself (which picks the success message)."""
        if sink:
            group = sink_group(name, config)
            if entries is None:
                current = sink_entries(self.group_offsets.read(group))
                handled = self.worker.connector_alter_offsets(name, config, removals(current))
                self.group_offsets.reset(name, group)
            else:
                changes = parse_sink(entries)
                handled = self.worker.connector_alter_offsets(name, config, pairs(entries))
                self.group_offsets.alter(name, group, changes)
            return handled
        if entries is None:
            entries = [ConnectorOffset(partition=p, offset=None) for p, _ in self.source_offsets.get(name)]
        check_source(entries)
        handled = self.worker.connector_alter_offsets(name, config, pairs(entries))
        self.source_offsets.put(name, pairs(entries))
        return handled
