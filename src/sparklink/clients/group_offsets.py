"""A consumer group's committed offsets, read and committed so that neither can crash or mislead.

`committed_offsets` is the one way sparklink reads them. Not through an admin client: librdkafka 2.16's admin
OffsetFetch crashes the process (SIGSEGV) when the answer is a coordinator error, since its handler asks the
client's consumer group to look the coordinator up again and an admin client has none. Kafka answers so on a
cluster without `__consumer_offsets` yet, and while a group's coordinator moves (a probe that read a group's
offsets in a loop through an admin client died as the coordinator's broker was stopped, with and without
describing the group first). A consumer of the group that never subscribes (so never joins it) has that
consumer group, and takes the same answer as an error to retry.

`commit_offsets` commits through the Admin API (OffsetCommit's handler has no such flaw) and checks the
answer for each partition: a coordinator being created or moved refuses every partition while the request
as a whole succeeds. Callers: the sink offset store, the sink-lag metrics, the MirrorMaker checkpoints.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition

from sparklink.clients.admin import RenewingAdmin, error_code

__all__ = [
    "cluster_partitions",
    "commit_offsets",
    "committed_offsets",
    "group_consumer",
    "offsets_of_groups",
    "while_coordinator_moves",
]
GROUPS_AT_ONCE = 8

T = TypeVar("T")
GroupOffsets = dict[tuple[str, int], tuple[int, str]]
"""(topic, partition) -> (committed offset, its metadata)."""


def committed_offsets(
    admin: RenewingAdmin,
    group: str,
    timeout: float,
    partitions: list[tuple[str, int]] | None = None,
    consumer: Consumer | None = None,
) -> GroupOffsets:
    """The group's committed offsets of `partitions` (by default every partition of every topic in the
    cluster's metadata, from `admin`), without the ones that have none: {} for a group that does not exist.

    Asked through a consumer of the group with the admin's settings that never subscribes, so it never
    joins the group: `consumer` (from `group_consumer`, for a caller that asks often), else one made and
    closed here. Retries while the coordinator is being created or moved, for up to `timeout`; then, or when
    Kafka refuses or does not answer in time (librdkafka's _TIMED_OUT), raises KafkaException."""
    if partitions is None:
        partitions = cluster_partitions(admin, timeout)
    if not partitions:
        return {}
    wanted = [TopicPartition(t, p) for t, p in partitions]
    asking = consumer or group_consumer(admin, group)
    try:
        found = while_coordinator_moves(lambda left: asking.committed(wanted, timeout=left), timeout)
    finally:
        if consumer is None:
            asking.close()
    return {(tp.topic, tp.partition): (int(tp.offset), tp.metadata or "") for tp in found if tp.offset >= 0}


def offsets_of_groups(
    admin: RenewingAdmin, groups: Sequence[str], timeout: float
) -> dict[str, GroupOffsets | KafkaException]:
    """`committed_offsets` of every partition for each group, several groups at a time: each is one consumer
    made and closed (~60 ms), and MirrorMaker asks for every group it mirrors. A group Kafka refused (or did
    not answer for) maps to the KafkaException; a metadata request that fails raises it."""
    if not groups:
        return {}
    partitions = cluster_partitions(admin, timeout)

    def one(group: str) -> GroupOffsets | KafkaException:
        try:
            return committed_offsets(admin, group, timeout, partitions)
        except KafkaException as exc:
            return exc

    with ThreadPoolExecutor(max_workers=min(GROUPS_AT_ONCE, len(groups)), thread_name_prefix="group-offsets") as pool:
        return dict(zip(groups, pool.map(one, groups), strict=True))


def cluster_partitions(admin: RenewingAdmin, timeout: float) -> list[tuple[str, int]]:
    """Every partition of every topic in the cluster's metadata."""
    with admin.request() as client:
        meta = client.list_topics(timeout=timeout)
    return [(t, p) for t, info in meta.topics.items() if info.error is None for p in info.partitions]


def group_consumer(admin: RenewingAdmin, group: str) -> Consumer:
    """A consumer of `group` with the admin's settings, for `committed_offsets`; it never subscribes."""
    return Consumer({**admin.settings(), "group.id": group, "enable.auto.commit": False})


def commit_offsets(admin: RenewingAdmin, group: str, offsets: Mapping[tuple[str, int], int], timeout: float) -> None:
    """Commit `offsets` to the group (which must have no members) through the Admin API, and make sure Kafka
    took each one: the request's answer carries an error per partition, and a coordinator that is being
    created or moved refuses them all (NOT_COORDINATOR) while the request as a whole succeeds. Those are sent
    again for up to `timeout`; any other refusal raises KafkaException naming the partition."""
    pending = dict(offsets)
    deadline = time.monotonic() + timeout
    while pending:
        partitions = [TopicPartition(t, p, o) for (t, p), o in pending.items()]
        with admin.request() as client:
            answer = client.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, partitions)])
            result = answer[group].result(timeout)
        refused = {(tp.topic, tp.partition): tp.error for tp in result.topic_partitions or [] if tp.error is not None}
        for (topic, partition), error in refused.items():
            if error.code() not in _COORDINATOR_MOVING or time.monotonic() > deadline:
                refusal = f"committing {topic}-{partition} for consumer group {group}: {error.str()}"
                raise KafkaException(KafkaError(error.code(), refusal))
        pending = {tp: pending[tp] for tp in refused if tp in pending}
        if pending:
            time.sleep(0.2)


_COORDINATOR_MOVING = {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
}


def while_coordinator_moves(call: Callable[[float], T], timeout: float) -> T:
    """`call(seconds left)`, again every 0.2 s while it raises a coordinator error (the group's coordinator
    is being created or moved: Kafka answers at once, and the next try finds the new one), for up to
    `timeout`; then, or on any other error, raises."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call(max(0.1, deadline - time.monotonic()))
        except KafkaException as exc:
            if error_code(exc) not in _COORDINATOR_MOVING or time.monotonic() > deadline:
                raise
        time.sleep(0.2)
