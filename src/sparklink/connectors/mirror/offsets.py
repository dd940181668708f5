"""MirrorMaker 2's source partitions and offsets, and the checks behind its `alterOffsets`.

Callers: the three connectors (`alter_offsets`, and the partitions their tasks record). Partition
maps are built in the key order Apache Connect writes them (Java HashMap order, e.g. `cluster`,
`partition`, `topic`), so our offsets-topic keys are byte-identical to Apache MM2's and both
compact onto the same records. Error texts are MirrorUtils' (ConnectException, hence HTTP 500),
with maps rendered as Java's `Map.toString` would render the parsed request body.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sparklink.api.connector import Offset, Partition
from sparklink.api.errors import ConnectError

OFFSET_KEY = "offset"
_INT_MAX = 2**31 - 1
_LONG_MAX = 2**63 - 1


def source_partition(cluster: str, topic: str, partition: int) -> Partition:
    return {"cluster": cluster, "partition": partition, "topic": topic}


def checkpoint_partition(group: str, topic: str, partition: int) -> Partition:
    return {"partition": partition, "topic": topic, "group": group}


def heartbeat_partition(source_alias: str, target_alias: str) -> Partition:
    return {"sourceClusterAlias": source_alias, "targetClusterAlias": target_alias}


def java_str(value: Any) -> str:
    """How Java prints a value parsed from JSON by Jackson (Map, List, String, Number, null)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{java_str(k)}={java_str(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(java_str(v) for v in value) + "]"
    return str(value)


def _is_java_integer(value: Any) -> bool:
    # Jackson gives Integer or Long for JSON integers that fit in 64 bits (BigInteger beyond that).
    return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value <= _LONG_MAX


def check_string(partition: Partition, key: str) -> None:
    if key not in partition:
        raise ConnectError(f"Source partition {java_str(partition)} is missing the '{key}' key, which is required")
    value = partition[key]
    if not isinstance(value, str):
        raise ConnectError(
            f"Source partition {java_str(partition)} has an invalid value {java_str(value)} for the '{key}' key, "
            "which must be a string"
        )


def check_partition_number(partition: Partition) -> None:
    if "partition" not in partition:
        raise ConnectError(f"Source partition {java_str(partition)} is missing the 'partition' key, which is required")
    value = partition["partition"]
    if not _is_java_integer(value) or value > _INT_MAX:
        raise ConnectError(
            f"Source partition {java_str(partition)} has an invalid value {java_str(value)} for the 'partition' key, "
            "which must be an integer"
        )
    if value < 0:
        raise ConnectError(
            f"Source partition {java_str(partition)} has an invalid value {java_str(value)} for the 'partition' key, "
            "which cannot be negative"
        )


def check_offset(partition: Partition, offset: Offset | None, only_zero: bool) -> None:
    if offset is None:
        return
    prefix = f"Source offset {java_str(offset)} for source partition {java_str(partition)}"
    if OFFSET_KEY not in offset:
        raise ConnectError(f"{prefix} is missing the '{OFFSET_KEY}' key, which is required")
    value = offset[OFFSET_KEY]
    if not _is_java_integer(value):
        raise ConnectError(
            f"{prefix} has an invalid value {java_str(value)} for the '{OFFSET_KEY}' key, which must be an integer"
        )
    if only_zero and value != 0:
        raise ConnectError(
            f"{prefix} has an invalid value {java_str(value)} for the '{OFFSET_KEY}' key; the only accepted value is 0"
        )
    if not only_zero and value < 0:
        raise ConnectError(
            f"{prefix} has an invalid value {java_str(value)} for the '{OFFSET_KEY}' key, which cannot be negative"
        )


@dataclass(frozen=True)
class Rules:
    """What one connector's `alterOffsets` accepts: the string keys of its source partitions, whether they
    carry a partition number too, and whether every offset must be 0."""

    string_keys: tuple[str, ...]
    number: bool
    only_zero: bool

    def validate(self, offsets: Iterable[tuple[Partition | None, Offset | None]]) -> bool:
        """The loop every MM2 connector's alterOffsets runs; tombstones are always allowed. Returns True."""
        for partition, offset in offsets:
            if offset is None:
                continue  # cleaning up garbage must stay possible
            if partition is None:
                raise ConnectError("Source partitions may not be null")
            for key in self.string_keys:
                check_string(partition, key)
            if self.number:
                check_partition_number(partition)
            check_offset(partition, offset, self.only_zero)
        return True
