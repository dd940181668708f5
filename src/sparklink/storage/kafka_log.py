"""A compacted Kafka topic read to its end at start-up and appended to synchronously afterwards.

The Python counterpart of Kafka Connect's KafkaBasedLog, for a single writer: every store replays the
topic into memory with `read_to_end()`, then each `send()` is acknowledged by the brokers (acks=all)
before the caller updates its in-memory view, so a crash after `send()` returns loses nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from sparklink.kafka_clients import client_config

log = logging.getLogger(__name__)

Record = tuple[bytes | None, bytes | None]


class KafkaLog:
    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        partitions: int = 1,
        replication_factor: int = 1,
        client_id: str = "sparklink",
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.partitions = partitions
        self.replication_factor = replication_factor
        self._producer: Producer | None = None
        self._client_id = client_id

    def start(self, apply: Callable[[bytes | None, bytes | None], None], timeout: float = 60.0) -> None:
        """Create the topic if needed (compacted) and replay it through `apply` in log order."""
        ensure_topic(self.bootstrap_servers, self.topic, self.partitions, self.replication_factor)
        self._wait_for_leaders(timeout)
        self._producer = Producer(
            client_config(
                self.bootstrap_servers,
                **{
                    "client.id": f"{self._client_id}-{self.topic}",
                    "acks": "all",
                    "enable.idempotence": True,
                    "linger.ms": 0,
                },
            )
        )
        for key, value in self.read_all(timeout):
            apply(key, value)

    def _wait_for_leaders(self, timeout: float) -> None:
        """A topic created a moment ago answers NOT_LEADER until each partition has elected one."""
        admin = AdminClient(client_config(self.bootstrap_servers))
        deadline = time.monotonic() + timeout
        while True:
            meta = admin.list_topics(self.topic, timeout=10).topics.get(self.topic)
            partitions = meta.partitions if meta is not None and meta.error is None else {}
            if partitions and all(p.leader >= 0 and p.error is None for p in partitions.values()):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {self.topic} has partitions without a leader after {timeout:.0f}s")
            time.sleep(0.2)

    def read_all(self, timeout: float = 60.0) -> list[Record]:
        """Every record currently in the topic, partition by partition, oldest first."""
        consumer = Consumer(
            client_config(
                self.bootstrap_servers,
                **{"group.id": "sparklink-log-reader", "enable.auto.commit": False, "enable.partition.eof": True},
            )
        )
        try:
            meta = consumer.list_topics(self.topic, timeout=10).topics[self.topic]
            parts = sorted(meta.partitions)
            ends: dict[int, int] = {}
            for p in parts:
                _low, high = consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10)
                ends[p] = high
            pending = {p for p in parts if ends[p] > 0}
            if not pending:
                return []
            consumer.assign([TopicPartition(self.topic, p, 0) for p in sorted(pending)])
            out: list[Record] = []
            deadline = time.monotonic() + timeout
            while pending:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"reading {self.topic} to its end took over {timeout:.0f}s")
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise KafkaException(error)
                out.append((msg.key(), msg.value()))
                partition, offset = msg.partition() or 0, msg.offset() or 0
                if offset + 1 >= ends[partition]:
                    pending.discard(partition)
            return out
        finally:
            consumer.close()

    def send(self, key: bytes, value: bytes | None, timeout: float = 30.0) -> None:
        """Append one record and wait until the brokers acknowledge it."""
        self.send_many([(key, value)], timeout)

    def send_many(self, records: list[tuple[bytes, bytes | None]], timeout: float = 30.0) -> None:
        assert self._producer is not None, "KafkaLog.start() first"
        errors: list[str] = []

        def on_delivery(err: object, _msg: object) -> None:
            if err is not None:
                errors.append(str(err))

        for key, value in records:
            self._producer.produce(self.topic, key=key, value=value, on_delivery=on_delivery)
        remaining = self._producer.flush(timeout)
        if remaining or errors:
            raise KafkaException(f"writing to {self.topic} failed: {errors or f'{remaining} unacknowledged'}")

    def stop(self) -> None:
        if self._producer is not None:
            self._producer.flush(10)
            self._producer = None


def ensure_topic(bootstrap: str, topic: str, partitions: int, replication_factor: int) -> None:
    """Create a compacted topic unless it exists."""
    admin = AdminClient(client_config(bootstrap))
    if topic in admin.list_topics(timeout=10).topics:
        return
    new = NewTopic(
        topic,
        num_partitions=partitions,
        replication_factor=replication_factor,
        config={"cleanup.policy": "compact"},
    )
    for fut in admin.create_topics([new], operation_timeout=30).values():
        try:
            fut.result()
        except KafkaException as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise
