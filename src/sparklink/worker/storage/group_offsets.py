"""Sink connector offsets: the committed offsets of a sink's consumer group (`connect-<name>`).

The fourth store beside config, status and offsets, with the same shape: a Protocol, a Kafka
implementation (Admin API and a never-subscribing consumer) and an in-memory twin for unit tests.
Callers: the worker commits after each sink batch and reads where to start; the herder reads,
alters and resets them (KIP-875) while the connector is STOPPED. Its clients take the worker's task-admin
settings (the top-level settings, then `admin.*`), which Connect's KIP-875 admin uses too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Protocol, TypeVar

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from sparklink.api.errors import ConnectError
from sparklink.clients.admin import RenewingAdmin
from sparklink.clients.group_offsets import commit_offsets, committed_offsets, while_coordinator_moves
from sparklink.clients.settings import KafkaClientSettings
from sparklink.worker.storage.retry import retrying

TopicPartitionKey = tuple[str, int]
TIMEOUT = 30.0
RETRY_TIMEOUT = 90.0
T = TypeVar("T")


class GroupHasMembersError(ConnectError):
    """The group still has members (zombie sink tasks); Connect's 500 text names the way out."""

    def __init__(self, connector: str, verb: str) -> None:
        super().__init__(
            f"Failed to {verb} consumer group offsets for connector {connector} either because its tasks haven't "
            f"stopped completely yet or the connector was resumed before the request to {verb} its offsets could "
            "be successfully completed. If the connector is in a stopped state, this operation can be safely "
            "retried. If it doesn't eventually succeed, the Connect cluster may need to be restarted to get rid "
            "of the zombie sink tasks."
        )


class GroupOffsetStore(Protocol):
    def read(self, group: str) -> dict[TopicPartitionKey, int]:
        """Every committed offset of the group ({} if the group does not exist)."""
        ...

    def committed(self, group: str, partitions: list[TopicPartitionKey]) -> dict[TopicPartitionKey, int]:
        """The committed offsets of these partitions (absent where none)."""
        ...

    def commit(self, group: str, positions: Mapping[TopicPartitionKey, int]) -> None: ...

    def alter(self, connector: str, group: str, changes: Mapping[TopicPartitionKey, int | None]) -> None:
        """Set (or with None remove) offsets; refused while the group has members."""
        ...

    def reset(self, connector: str, group: str) -> None:
        """Delete the group's offsets; refused while the group has members; idempotent."""
        ...


class MemoryGroupOffsetStore:
    """Offsets in a dict; `members` marks groups with live members (to exercise the zombie check)."""

    def __init__(self) -> None:
        self.groups: dict[str, dict[TopicPartitionKey, int]] = {}
        self.members: set[str] = set()
        self._lock = threading.Lock()

    def read(self, group: str) -> dict[TopicPartitionKey, int]:
        with self._lock:
            return dict(self.groups.get(group, {}))

    def committed(self, group: str, partitions: list[TopicPartitionKey]) -> dict[TopicPartitionKey, int]:
        current = self.read(group)
        return {tp: current[tp] for tp in partitions if tp in current}

    def commit(self, group: str, positions: Mapping[TopicPartitionKey, int]) -> None:
        with self._lock:
            self.groups.setdefault(group, {}).update(positions)

    def alter(self, connector: str, group: str, changes: Mapping[TopicPartitionKey, int | None]) -> None:
        if group in self.members:
            raise GroupHasMembersError(connector, "alter")
        with self._lock:
            offsets = self.groups.setdefault(group, {})
            for tp, offset in changes.items():
                if offset is None:
                    offsets.pop(tp, None)
                else:
                    offsets[tp] = offset

    def reset(self, connector: str, group: str) -> None:
        if group in self.members:
            raise GroupHasMembersError(connector, "reset")
        with self._lock:
            self.groups.pop(group, None)


class KafkaGroupOffsetStore:
    def __init__(self, clients: KafkaClientSettings) -> None:
        self.clients = clients
        # One client for the store's life (a client garbage-collected while its request is in flight
        # destroys the request, "Broker handle destroyed", and its future never completes), made anew
        # after a request that outlasted TIMEOUT: after a broker outage such a client may never be
        # answered again, and a sink would never commit again (see sparklink.clients.admin).
        self._admin = RenewingAdmin(clients.librdkafka)

    def read(self, group: str) -> dict[TopicPartitionKey, int]:
        return self._retrying(f"reading the offsets of consumer group {group}", lambda: self._offsets(group, None))

    def committed(self, group: str, partitions: list[TopicPartitionKey]) -> dict[TopicPartitionKey, int]:
        what = f"reading the committed offsets of consumer group {group}"
        return self._retrying(what, lambda: self._offsets(group, partitions))

    def _offsets(self, group: str, partitions: list[TopicPartitionKey] | None) -> dict[TopicPartitionKey, int]:
        # Through a consumer of the group that never subscribes, so never joins it (the group stays EMPTY,
        # which offsets alter/reset require); never the admin's OffsetFetch (sparklink.clients.group_offsets).
        found = committed_offsets(self._admin, group, TIMEOUT, partitions)
        return {tp: offset for tp, (offset, _) in found.items()}

    def _retrying(self, what: str, attempt: Callable[[], T]) -> T:
        def failure(error: BaseException, gave_up: bool) -> str:
            waited = f" for {RETRY_TIMEOUT:.0f}s" if gave_up else ""
            return (
                f"{what.capitalize()} on {self.clients.describe()} failed{waited}: {error}. Check that the brokers "
                "are running and reachable and that the __consumer_offsets topic has leaders."
            )

        return retrying(attempt, RETRY_TIMEOUT, failure, what)

    def commit(self, group: str, positions: Mapping[TopicPartitionKey, int]) -> None:
        # Through the store's one admin client: a consumer per commit (a client's threads, connection and
        # coordinator lookup, for one request) took ~60 ms of every sink batch. The group has no members
        # (sink tasks read assigned partitions), which is all OffsetCommit from an admin requires.
        self._alter(group, positions)

    def alter(self, connector: str, group: str, changes: Mapping[TopicPartitionKey, int | None]) -> None:
        with self._admin.request() as admin:
            self._ensure_no_members(admin, connector, group, "alter")
            current = self.read(group)
            if any(offset is None and tp in current for tp, offset in changes.items()):
                # The Admin API of this client has no per-partition offset delete; the group is empty (checked
                # above), so dropping it and committing back the partitions that stay is equivalent.
                self._delete_group(admin, group)
                self._alter(group, {tp: off for tp, off in current.items() if tp not in changes})
            self._alter(group, {tp: off for tp, off in changes.items() if off is not None})

    def reset(self, connector: str, group: str) -> None:
        with self._admin.request() as admin:
            self._ensure_no_members(admin, connector, group, "reset")
            self._delete_group(admin, group)

    @staticmethod
    def _ensure_no_members(admin: AdminClient, connector: str, group: str, verb: str) -> None:
        describe = admin.describe_consumer_groups
        description = while_coordinator_moves(lambda left: describe([group])[group].result(left), TIMEOUT)
        if description.members:
            raise GroupHasMembersError(connector, verb)

    def _alter(self, group: str, offsets: Mapping[TopicPartitionKey, int]) -> None:
        if offsets:
            commit_offsets(self._admin, group, offsets, TIMEOUT)

    @staticmethod
    def _delete_group(admin: AdminClient, group: str) -> None:
        try:
            admin.delete_consumer_groups([group])[group].result(TIMEOUT)
        except KafkaException as exc:
            if "GROUP_ID_NOT_FOUND" not in str(exc):  # already gone: reset is idempotent
                raise
