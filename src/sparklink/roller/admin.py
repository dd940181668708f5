"""What the roller asks Kafka: topic layout and min.insync.replicas, a broker's config, dynamic updates, the quorum.

Caller: `executor.KafkaRoller`. `ConfluentClusterAdmin` uses confluent-kafka's AdminClient for topics and
configs (list_topics carries replicas and ISRs; describe_configs, incremental_alter_configs) and our own
DescribeQuorum request (`sparklink.platform.kraft_quorum`), which confluent-kafka 2.16 does not offer.
Both take the cluster's client settings: the Admin API a `KafkaClientSettings` from `sparklink.clients` (a
secured cluster's platform identity, or a user's `--command-config`), DescribeQuorum the TLS context a
mutual-TLS controller listener needs. Nothing falls back to plaintext.

A request for one broker first asks for fresh metadata: librdkafka sends it to that broker only once it knows
the broker, and it learns of a broker that joined after the client was made only at its next metadata refresh
(minutes away). The operator makes one admin per roll, often while a broker is down or recovering its logs.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Protocol

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource

from sparklink.clients.admin import RenewingAdmin
from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform import kraft_quorum
from sparklink.platform.kraft_quorum import QuorumInfo
from sparklink.roller.model import ConfigValue, PartitionState, TopicState


class AdminError(RuntimeError):
    """Kafka did not answer an admin request in time or answered with an error."""


class NoAnswerError(AdminError):
    """A request for one broker got no answer, as opposed to a refusal: the broker is missing from the cluster
    metadata (down, fenced, or just unfenced and not yet in the metadata of the broker that answered: brokers
    replay the metadata log each at its own pace), or the request timed out or lost its connection."""


_NO_ANSWER_CODES = frozenset(
    {
        KafkaError._TIMED_OUT,
        KafkaError._TIMED_OUT_QUEUE,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.BROKER_NOT_AVAILABLE,
        KafkaError.NETWORK_EXCEPTION,
        KafkaError.NOT_CONTROLLER,  # the broker forwards the update to a controller that just moved
    }
)


class ClusterAdmin(Protocol):
    def topics(self) -> list[TopicState]: ...
    def broker_config(self, node_id: int) -> dict[str, ConfigValue]: ...
    def alter_broker_config(self, node_id: int, changes: dict[str, str]) -> None: ...
    def quorum(self) -> QuorumInfo: ...


class ConfluentClusterAdmin:
    """The Admin API with `settings`, DescribeQuorum through `controllers` (host:port each; over TLS with
    `quorum_tls` when the controller listener is secured)."""

    def __init__(
        self,
        settings: KafkaClientSettings,
        controllers: Sequence[str],
        timeout: float = 30.0,
        quorum_tls: ssl.SSLContext | None = None,
    ) -> None:
        self.timeout = timeout
        self.controllers = list(controllers)
        self.quorum_tls = quorum_tls
        # Renewed after a request that went unanswered: a roll restarts the brokers this client talks to, and
        # after an outage that ran past a request a client may never be answered again (sparklink.clients.admin).
        self._admin = RenewingAdmin(settings.librdkafka(**{"socket.timeout.ms": int(timeout * 1000)}))

    def topics(self) -> list[TopicState]:
        try:
            with self._admin.request() as admin:
                metadata = admin.list_topics(timeout=self.timeout)
            names = list(metadata.topics)
            configs = self._describe([ConfigResource(ConfigResource.Type.TOPIC, n) for n in names]) if names else {}
        except (KafkaException, FutureTimeout) as exc:
            raise AdminError(f"could not describe topics: {_failure(exc, self.timeout)}") from exc
        out = []
        for name, topic in metadata.topics.items():
            min_isr = configs.get(name, {}).get("min.insync.replicas")
            partitions = tuple(
                PartitionState(p.id, tuple(p.replicas), tuple(p.isrs))
                for p in sorted(topic.partitions.values(), key=lambda p: p.id)
            )
            out.append(TopicState(name, int(min_isr.value) if min_isr and min_isr.value else None, partitions))
        return out

    def broker_config(self, node_id: int) -> dict[str, ConfigValue]:
        try:
            self._require_broker(node_id)
            return self._describe([ConfigResource(ConfigResource.Type.BROKER, str(node_id))])[str(node_id)]
        except (KafkaException, FutureTimeout) as exc:
            raise AdminError(f"Error getting broker config: {_failure(exc, self.timeout)}") from exc

    def alter_broker_config(self, node_id: int, changes: dict[str, str]) -> None:
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in changes.items()]
        self._alter(node_id, entries, f"Error updating Kafka configuration for node {node_id}")

    def delete_broker_config(self, node_id: int, keys: Sequence[str]) -> None:
        """Remove per-broker dynamic overrides (a no-op for keys without one), e.g. of settings a user removed."""
        entries = [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in keys]
        self._alter(node_id, entries, f"Error removing dynamic settings {list(keys)} of node {node_id}")

    def quorum(self) -> QuorumInfo:
        try:
            return kraft_quorum.describe_quorum(self.controllers, min(self.timeout, 10.0), self.quorum_tls)
        except kraft_quorum.QuorumError as exc:
            raise AdminError(str(exc)) from exc

    def _require_broker(self, node_id: int) -> None:
        # Fenced and stopped brokers are left out of metadata, so this also answers at once for a broker that is
        # not up, instead of a request waiting out its timeout.
        with self._admin.request() as admin:
            brokers = admin.list_topics(timeout=self.timeout).brokers
        if node_id not in brokers:
            raise NoAnswerError(f"broker {node_id} is not in the cluster metadata: it is down, fenced or starting")

    def _alter(self, node_id: int, entries: list[ConfigEntry], failed: str) -> None:
        """Apply `entries` to the node's dynamic config; an AdminError starting with `failed` if it cannot."""
        try:
            self._require_broker(node_id)
            resource = ConfigResource(ConfigResource.Type.BROKER, str(node_id), incremental_configs=entries)
            with self._admin.request() as admin:
                for future in admin.incremental_alter_configs([resource]).values():
                    future.result(timeout=self.timeout)
        except (KafkaException, FutureTimeout) as exc:
            unanswered = not isinstance(exc, KafkaException) or _code(exc) in _NO_ANSWER_CODES
            raise (NoAnswerError if unanswered else AdminError)(f"{failed}: {_failure(exc, self.timeout)}") from exc

    def _describe(self, resources: list[ConfigResource]) -> dict[str, dict[str, ConfigValue]]:
        out: dict[str, dict[str, ConfigValue]] = {}
        with self._admin.request() as admin:
            for resource, future in admin.describe_configs(resources, request_timeout=self.timeout).items():
                entries = future.result(timeout=self.timeout)
                out[resource.name] = {k: ConfigValue(e.value, bool(e.is_read_only)) for k, e in entries.items()}
        return out


def _code(exc: KafkaException) -> int | None:
    error = exc.args[0] if exc.args else None
    return error.code() if isinstance(error, KafkaError) else None


def _failure(exc: BaseException, timeout: float) -> str:
    return str(exc) if isinstance(exc, KafkaException) else f"no answer within {timeout:.0f}s"
