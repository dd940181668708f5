"""A long-lived confluent-kafka AdminClient that is made anew after a request outlasted its wait.

After a broker outage that ran past a request, a librdkafka admin client may never be answered again:
in a probe (a one-node cluster stopped for 20 s with a consumer-group commit in flight), 3 runs in 5 had
every later request of the same client time out at 30 s, while a new client's was answered in 0.08 s.
A client kept for a process's life (a sink's offset store, the lag metrics, the MirrorMaker connectors'
admins, the operator's user admin, the roller's) would then fail every request until the process ended.

`RenewingAdmin` keeps one client, made on first use from its settings, and drops it when a request made
through `request()` ends in a local time-out; the next request makes a new one. A time-out Kafka answered
(a broker's REQUEST_TIMED_OUT) is an answer and keeps the client. Callers: every long-lived admin client.

`committed_offsets` is the one way sparklink reads a consumer group's committed offsets. Not through an
admin client: librdkafka 2.16's admin OffsetFetch crashes the process (SIGSEGV) when the answer is a
coordinator error, since its handler asks the client's consumer group to look the coordinator up again and an
admin client has none. Kafka answers so on a cluster without `__consumer_offsets` yet, and while a group's
coordinator moves (a probe that read a group's offsets in a loop through an admin client died as the
coordinator's broker was stopped, with and without describing the group first). A consumer of the group
that never subscribes has that consumer group, and takes the same answer as an error to retry.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]

__all__ = ["RenewingAdmin", "commit_offsets", "committed_offsets", "outlasted_wait", "while_coordinator_moves"]
T = TypeVar("T")

GroupOffsets = dict[tuple[str, int], tuple[int, str]]
"""(topic, partition) -> (committed offset, its metadata)."""


def outlasted_wait(exc: BaseException) -> bool:
    """Whether `exc` says the client's request got no answer in time (rather than an answer, even a refusal).

    `Future.result(timeout)` raises TimeoutError; librdkafka's own request and metadata time-outs raise
    KafkaException with the local code _TIMED_OUT."""
    if isinstance(exc, TimeoutError):
        return True
    return isinstance(exc, KafkaException) and _code(exc) == KafkaError._TIMED_OUT


class RenewingAdmin:
    """One AdminClient made from `config` on first use, and again after a request that outlasted its wait.

    `config` is the client's settings, or a function that renders them for each new client (so a client
    made after a renewal reads key material as it is then). `factory` makes the client; tests pass one
    that counts."""

    def __init__(
        self,
        config: Mapping[str, Any] | Callable[[], Mapping[str, Any]],
        factory: Callable[[dict[str, Any]], AdminClient] = AdminClient,
    ) -> None:
        self._config = config
        self._factory = factory
        self._client: AdminClient | None = None
        self._lock = threading.Lock()

    def settings(self) -> dict[str, Any]:
        """The settings a new client gets (rendered now, where given as a function)."""
        return dict(self._config() if callable(self._config) else self._config)

    def client(self) -> AdminClient:
        """The current client (made now if there is none). Prefer `request()`, which renews it."""
        with self._lock:
            if self._client is None:
                self._client = self._factory(self.settings())
            return self._client

    @contextmanager
    def request(self) -> Iterator[AdminClient]:
        """The client for one request or a few; a local time-out inside drops it, and then propagates."""
        client = self.client()
        try:
            yield client
        except BaseException as exc:
            if outlasted_wait(exc):
                self.drop(client)
            raise

    def drop(self, client: AdminClient) -> None:
        """Forget `client` if it is still the current one (another thread may have renewed it already)."""
        with self._lock:
            if self._client is client:
                self._client = None


def committed_offsets(
    admin: RenewingAdmin,
    group: str,
    timeout: float,
    partitions: list[tuple[str, int]] | None = None,
) -> GroupOffsets:
    """The group's committed offsets of `partitions` (by default every partition of every topic in the
    cluster's metadata, from `admin`), without the ones that have none: {} for a group that does not exist.

    Asked through a consumer of the group with the admin's settings that never subscribes, so it never
    joins the group. Retries while the coordinator is being created or moved, for up to `timeout`; then
    raises KafkaException (TimeoutError when the metadata is not answered)."""
    if partitions is None:
        with admin.request() as client:
            meta = client.list_topics(timeout=timeout)
        partitions = [(t, p) for t, info in meta.topics.items() if info.error is None for p in info.partitions]
    if not partitions:
        return {}
    wanted = [TopicPartition(t, p) for t, p in partitions]
    consumer = Consumer({**admin.settings(), "group.id": group, "enable.auto.commit": False})
    try:
        found = while_coordinator_moves(lambda left: consumer.committed(wanted, timeout=left), timeout)
    finally:
        consumer.close()
    return {(tp.topic, tp.partition): (int(tp.offset), tp.metadata or "") for tp in found if tp.offset >= 0}


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
            if _code(exc) not in _COORDINATOR_MOVING or time.monotonic() > deadline:
                raise
        time.sleep(0.2)


def _code(exc: KafkaException) -> int | None:
    error = exc.args[0] if exc.args else None
    return error.code() if isinstance(error, KafkaError) else None
