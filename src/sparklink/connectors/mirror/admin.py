"""Control-plane Kafka operations for the mirror connectors, with confluent-kafka.

Callers: the source connector (topics, partitions, topic configs, ACLs), the checkpoint and
heartbeat connectors (internal topics), the source task (end offsets, offset-sync producer) and the
checkpoint reader (groups and their offsets). No record of the replicated data passes through here.

Tasks take their clients from a process-wide pool (`shared_admin`, `shared_producer`), like Spark's
own producer cache: a SourceTask has no stop hook, so per-task clients would outlive restarts.
Every admin client here is a `RenewingAdmin`: a mirror runs for weeks across outages of both clusters,
and a client whose request went unanswered through one may never be answered again.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)

from sparklink.clients.admin import RenewingAdmin, outlasted_wait

log = logging.getLogger(__name__)
TIMEOUT_S = 30.0
# Leadership still settling on a new topic or a moving partition: librdkafka does not always flag
# these as retriable in ListOffsets results, the Java clients retry them.
_TRANSIENT = {
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.FENCED_LEADER_EPOCH,
    KafkaError.UNKNOWN_LEADER_EPOCH,
    KafkaError.OFFSET_NOT_AVAILABLE,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError._TIMED_OUT,
    KafkaError._TRANSPORT,
}


@dataclass(frozen=True)
class TopicConfig:
    name: str
    value: str | None
    is_default: bool
    is_read_only: bool
    is_sensitive: bool
    static_broker: bool


# ---------------------------------------------------------------------- shared clients
_pool_lock = threading.Lock()
_admins: dict[tuple[tuple[str, str], ...], RenewingAdmin] = {}
_producers: dict[tuple[tuple[str, str], ...], Producer] = {}


def _pool_key(conf: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, str(v)) for k, v in conf.items() if k != "logger"))


def shared_admin(conf: Mapping[str, Any]) -> RenewingAdmin:
    key = _pool_key(conf)
    with _pool_lock:
        if key not in _admins:
            _admins[key] = RenewingAdmin(dict(conf))
        return _admins[key]


def shared_producer(conf: Mapping[str, Any]) -> Producer:
    key = _pool_key(conf)
    with _pool_lock:
        if key not in _producers:
            _producers[key] = Producer({**conf, "acks": "all", "enable.idempotence": True, "linger.ms": 5})
        return _producers[key]


@atexit.register
def _flush_producers() -> None:
    with _pool_lock:
        for producer in _producers.values():
            producer.flush(5)


# ---------------------------------------------------------------------- topics
def topic_partitions(admin: RenewingAdmin) -> dict[str, int]:
    """Every topic's partition count (topics with metadata errors are left out)."""
    with admin.request() as client:
        meta = client.list_topics(timeout=TIMEOUT_S)
        return {name: len(t.partitions) for name, t in meta.topics.items() if t.error is None}


def create_compacted_topic(admin: RenewingAdmin, name: str, partitions: int, replication: int) -> None:
    """MirrorUtils.createCompactedTopic: an existing topic is fine, other failures raise."""
    with admin.request() as client:
        topic = NewTopic(name, partitions, replication, config={"cleanup.policy": "compact"})
        try:
            client.create_topics([topic], request_timeout=TIMEOUT_S)[name].result(timeout=TIMEOUT_S)
            log.info("Created topic '%s'", name)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise


def create_topics(admin: RenewingAdmin, topics: Iterable[NewTopic]) -> None:
    """Create remote topics; each failure is logged (as MM2's createNewTopics does), not raised."""
    with admin.request() as client:
        topics = list(topics)
        if not topics:
            return
        for name, future in client.create_topics(topics, request_timeout=TIMEOUT_S).items():
            try:
                future.result(timeout=TIMEOUT_S)
                log.info("Created remote topic %s", name)
            except KafkaException as exc:
                if outlasted_wait(exc):
                    raise  # no answer: a new client next time (sparklink.clients.admin)
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    log.warning("Could not create topic %s: %s", name, exc)


def create_partitions(admin: RenewingAdmin, totals: Mapping[str, int]) -> None:
    with admin.request() as client:
        if not totals:
            return
        requests = [NewPartitions(topic, count) for topic, count in totals.items()]
        for topic, future in client.create_partitions(requests, request_timeout=TIMEOUT_S).items():
            try:
                future.result(timeout=TIMEOUT_S)
                log.info("Increased size of %s to %d partitions.", topic, totals[topic])
            except KafkaException as exc:
                if outlasted_wait(exc):
                    raise  # no answer: a new client next time (sparklink.clients.admin)
                if exc.args[0].code() != KafkaError.INVALID_PARTITIONS:  # already big enough: normal
                    log.warning("Could not create topic-partitions for %s: %s", topic, exc)


def describe_topic_configs(admin: RenewingAdmin, topics: Iterable[str]) -> dict[str, list[TopicConfig]]:
    with admin.request() as client:
        resources = [ConfigResource("TOPIC", t) for t in topics]
        if not resources:
            return {}
        out: dict[str, list[TopicConfig]] = {}
        for resource, future in client.describe_configs(resources, request_timeout=TIMEOUT_S).items():
            entries = future.result(timeout=TIMEOUT_S)
            out[resource.name] = [
                TopicConfig(
                    e.name,
                    e.value,
                    bool(e.is_default) or e.source == ConfigSource.DEFAULT_CONFIG.value,
                    bool(e.is_read_only),
                    bool(e.is_sensitive),
                    e.source == ConfigSource.STATIC_BROKER_CONFIG.value,
                )
                for e in entries.values()
            ]
        return out


def alter_topic_configs(admin: RenewingAdmin, changes: Mapping[str, list[tuple[str, str | None, bool]]]) -> None:
    """Incremental alter: (name, value, delete?) per property; failures are logged per topic."""
    with admin.request() as client:
        resources = []
        for topic, ops in changes.items():
            entries = [
                ConfigEntry(
                    name,
                    None if delete else value,
                    incremental_operation=AlterConfigOpType.DELETE if delete else AlterConfigOpType.SET,
                )
                for name, value, delete in ops
            ]
            resources.append(ConfigResource("TOPIC", topic, incremental_configs=entries))
        if not resources:
            return
        for resource, future in client.incremental_alter_configs(resources, request_timeout=TIMEOUT_S).items():
            try:
                future.result(timeout=TIMEOUT_S)
            except KafkaException as exc:
                if outlasted_wait(exc):
                    raise  # no answer: a new client next time (sparklink.clients.admin)
                log.warning("Could not alter configuration of topic %s: %s", resource.name, exc)


def end_offsets(admin: RenewingAdmin, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """The latest offset (high watermark) of each partition; partitions that do not exist yet read 0.

    Retriable errors (a just-created topic without a leader yet) are retried for up to TIMEOUT_S.
    """
    with admin.request() as client:
        wanted = list(partitions)
        out: dict[tuple[str, int], int] = {}
        deadline = time.monotonic() + TIMEOUT_S
        while wanted:
            request = {TopicPartition(t, p): OffsetSpec.latest() for t, p in wanted}
            retry: list[tuple[str, int]] = []
            for tp, future in client.list_offsets(request, request_timeout=TIMEOUT_S).items():
                key = (tp.topic, tp.partition)
                try:
                    out[key] = int(future.result(timeout=TIMEOUT_S).offset)
                except KafkaException as exc:
                    error = exc.args[0]
                    if error.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION):
                        out[key] = 0  # nothing written yet: 0 is a safe lower bound
                    elif (error.retriable() or error.code() in _TRANSIENT) and time.monotonic() < deadline:
                        retry.append(key)
                    else:
                        raise
            wanted = retry
            if wanted:
                time.sleep(0.2)
        return out
