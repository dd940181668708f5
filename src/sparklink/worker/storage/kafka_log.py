"""A compacted Kafka topic read to its end at start-up and appended to synchronously afterwards.

The Python counterpart of Kafka Connect's KafkaBasedLog. Every store replays the topic into memory at
start-up; each `send()` is acknowledged by the brokers (acks=all) before it returns, so a crash after
`send()` returns loses nothing. A standalone worker is the only writer and updates its view itself;
a worker in a group (`follow=True`) keeps tailing the topic (log_follower.py), sees every worker's
writes in log order, and `send()` returns once its own records have been read back.

A fresh or slow cluster answers "not leader", "leader not available", "coordinator loading" or times
out for a while after a topic is created (metadata can show a leader before that broker serves as
one). Every step here retries what Kafka calls retriable, with back-off, up to a deadline, and then
fails with a message naming the topic, the brokers and what to check.

Every client here takes the worker's own client settings (`sparklink.clients.connect.worker_clients`:
the top-level security settings, as Connect's KafkaBasedLog does).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from sparklink.api.errors import ConnectError, RetriableError
from sparklink.clients.settings import KafkaClientSettings
from sparklink.worker.storage.log_follower import LogFollower
from sparklink.worker.storage.retry import retrying

log = logging.getLogger(__name__)

Record = tuple[bytes | None, bytes | None]
CREATION_CONFIG = "internal.topics.automatic.creation.enable"
T = TypeVar("T")


class KafkaLog:
    def __init__(
        self,
        clients: KafkaClientSettings,
        topic: str,
        partitions: int = 1,
        replication_factor: int = 1,
        client_id: str = "sparklink",
        timeout: float = 120.0,
        create: bool = True,
        topic_config: str = "",
    ) -> None:
        self.clients = clients
        # Connect 4.4's internal.topics.automatic.creation.enable=false: use the topic, never create it.
        self.create = create
        self.topic_config = topic_config  # the worker key that named the topic, for the error
        self.topic = topic
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.timeout = timeout
        self._producer: Producer | None = None
        self._client_id = client_id
        self._ends: dict[int, int] = {}
        self._follower: LogFollower | None = None

    @property
    def following(self) -> bool:
        return self._follower is not None

    def start(self, apply: Callable[[bytes | None, bytes | None], None], follow: bool = False) -> None:
        """Create the topic if needed (compacted) and replay it through `apply` in log order; with
        `follow`, keep applying what any writer appends."""
        if self.create:
            self._retrying(
                "creating",
                lambda: ensure_topic(self.clients, self.topic, self.partitions, self.replication_factor),
            )
        elif not self._retrying("looking up", self._exists):
            raise ConnectError(
                f"Topic '{self.topic}' specified via the '{self.topic_config}' property is missing. The config "
                f"'{CREATION_CONFIG}' is set to 'false', so automatic creation of internal topics is disabled. "
                "Either enable automatic creation or create the topics manually."
            )
        self._retrying("waiting for partition leaders of", self._check_leaders)
        self._producer = Producer(
            self.clients.librdkafka(
                **{
                    "client.id": f"{self._client_id}-{self.topic}",
                    "acks": "all",
                    "enable.idempotence": True,
                    "linger.ms": 0,
                },
            )
        )
        for key, value in self._retrying("reading", self._read_once):
            apply(key, value)
        if follow:
            self._follower = LogFollower(self.clients, self.topic, self._ends, apply)

    def position(self) -> int:
        """How far the view has read: the sum over partitions of the next offset to apply (Connect's
        config offset, for the single-partition config topic)."""
        return sum((self._follower.positions if self._follower else self._ends).values())

    def read_to_end(self, timeout: float | None = None) -> None:
        """Wait until every record written before this call has been applied (follow mode)."""
        if self._follower is None:
            return
        follower = self._follower
        ends = self._retrying("reading the end offsets of", follower.end_offsets)
        follower.wait_for(ends, self.timeout if timeout is None else timeout)

    def read_all(self) -> list[Record]:
        """Every record currently in the topic, partition by partition, oldest first."""
        return self._retrying("reading", self._read_once)

    def send(self, key: bytes, value: bytes | None) -> None:
        """Append one record and wait until the brokers acknowledge it."""
        self.send_many([(key, value)])

    def send_many(self, records: list[tuple[bytes, bytes | None]]) -> None:
        # Re-sending after a retriable failure is safe: these topics are compacted, latest write wins.
        self._retrying("writing to", lambda: self._send_once(records))

    def stop(self) -> None:
        if self._follower is not None:
            self._follower.close()
            self._follower = None
        if self._producer is not None:
            self._producer.flush(10)
            self._producer = None

    # ------------------------------------------------------------------ one attempt each
    def _exists(self) -> bool:
        admin = AdminClient(self.clients.librdkafka())
        return self.topic in admin.list_topics(timeout=10).topics

    def _check_leaders(self) -> None:
        """A topic created a moment ago has partitions without a leader until each has elected one."""
        admin = AdminClient(self.clients.librdkafka())
        meta = admin.list_topics(self.topic, timeout=10).topics.get(self.topic)
        partitions = meta.partitions if meta is not None and meta.error is None else {}
        if not partitions or not all(p.leader >= 0 and p.error is None for p in partitions.values()):
            raise RetriableError("some partitions have no leader yet")

    def _read_once(self) -> list[Record]:
        consumer = Consumer(
            self.clients.librdkafka(
                **{"group.id": "sparklink-log-reader", "enable.auto.commit": False, "enable.partition.eof": True},
            )
        )
        try:
            meta = consumer.list_topics(self.topic, timeout=10).topics[self.topic]
            if meta.error is not None:
                raise KafkaException(meta.error)
            parts = sorted(meta.partitions)
            ends = {p: consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10)[1] for p in parts}
            self._ends = dict(ends)
            pending = {p for p in parts if ends[p] > 0}
            out: list[Record] = []
            if pending:
                consumer.assign([TopicPartition(self.topic, p, 0) for p in sorted(pending)])
            deadline = time.monotonic() + self.timeout
            while pending:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"reading to the end took over {self.timeout:.0f}s")
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

    def _send_once(self, records: list[tuple[bytes, bytes | None]]) -> None:
        assert self._producer is not None, "KafkaLog.start() first"
        errors: list[KafkaError] = []
        written: dict[int, int] = {}

        def on_delivery(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                errors.append(err)
            else:
                partition = msg.partition() or 0
                written[partition] = max(written.get(partition, 0), (msg.offset() or 0) + 1)

        for key, value in records:
            self._producer.produce(self.topic, key=key, value=value, on_delivery=on_delivery)
        remaining = self._producer.flush(30)
        if errors:
            raise KafkaException(errors[0])
        if remaining:
            raise TimeoutError(f"{remaining} records unacknowledged after 30s")
        if self._follower is not None:
            # Visible once read back: every worker applies the same records in the same order.
            self._follower.wait_for(written, self.timeout)

    def _retrying(self, what: str, attempt: Callable[[], T]) -> T:
        """Run `attempt`, retrying retriable failures with back-off until `self.timeout` has passed."""
        return retrying(attempt, self.timeout, lambda error, gave_up: self._failure(what, error, gave_up), what)

    def _failure(self, what: str, error: BaseException, gave_up: bool = False) -> str:
        waited = f" for {self.timeout:.0f}s" if gave_up else ""
        brokers = self.clients.bootstrap_servers
        return (
            f"{what.capitalize()} internal topic {self.topic} on {self.clients.describe()} failed{waited}: {error}. "
            f"Check that the brokers at {brokers} are running and reachable, that every partition "
            f"of {self.topic} has a leader (kafka-topics.sh --describe --topic {self.topic}), and that its "
            f"replication factor ({self.replication_factor}) is at most the number of brokers."
        )


def ensure_topic(clients: KafkaClientSettings, topic: str, partitions: int, replication_factor: int) -> None:
    """Create a compacted topic unless it exists."""
    admin = AdminClient(clients.librdkafka())
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
