"""The Kafka clients of task runs: whose settings each one takes, and a check that they can connect.

Connect composes a task's clients from the worker's properties and the connector's overrides
(sparklink.clients.connect); this adds what a run needs on top:

- `producer(connector_config, task_producer)`: the settings of the producer Spark's Kafka writer uses for a
  source task: Connect's `acks=all`, the worker's `producer.*`, the connector's `producer.override.*`, then
  what the task asks for (`SourceTask.producer_config`). A task that names its own `bootstrap.servers`
  (MirrorMaker 2 writing to its target cluster) writes to a cluster of its own, with the security settings it
  gives: nothing of the worker's producer applies there;
- `consumer(connector_config)`: a sink task's reads (`consumer.*`, then `consumer.override.*`);
- `admin(connector_config)`: DLQ topic creation (the top-level settings, `admin.*`, `admin.override.*`);
- `checked(settings)`: one preflight (sparklink.clients.preflight) the first time a run uses settings the
  worker has not used yet, so a task whose credentials, certificate or mechanism the brokers refuse fails at
  its start, in seconds, with a message naming the broker, protocol, mechanism and the setting to check,
  instead of a Spark query retrying or dying with a Java trace. Its siblings and other connectors run on.
  Brokers that do not answer at all are left to the clients' own retries (an outage is not a setting).
Caller: the run factory and the runs (through RunServices).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from sparklink.clients import preflight
from sparklink.clients.connect import ClientKind, WorkerClients
from sparklink.clients.errors import KafkaAccessError
from sparklink.clients.settings import KafkaClientSettings

log = logging.getLogger(__name__)

CHECK_TIMEOUT_S = 10.0
"""How long a run's preflight waits for brokers that do not answer; a refusal is reported at once."""
UNANSWERED = frozenset({"unreachable", "no-answer"})
"""Preflight outcomes that say nothing about the settings: the brokers did not answer."""
PRODUCER_DEFAULTS = {"acks": "all", "linger.ms": "5", "batch.size": "65536"}
"""What every source task's producer starts from; the worker's `producer.*` and the connector's
`producer.override.*` win over each. `acks=all` is what Connect's worker sets. `linger.ms=5` is the
Kafka 4.x clients' default (KIP-1030) that Connect 4.x's producers run with, while the kafka-clients
3.9.2 inside Spark's Kafka connector still defaults to 0. `batch.size` is 4x the clients' 16 KiB:
one Spark task hands its producer records far faster than a Connect task's thread does, and larger
batches halve the requests (bench.transforms --rate 1000000, quiet machine, sparklink only: the
3-transform chain at 16 KiB and linger 0 ran 367k records/s at 3.1 CPU ms per 1k; at 64 KiB and
5 ms 462k at 2.4; 256 KiB gained no more and holds 4x the memory per partition being written)."""


class RunClients:
    """One worker's task-client settings and the settings its runs have been seen to connect with."""

    def __init__(self, clients: WorkerClients, check_timeout_s: float = CHECK_TIMEOUT_S) -> None:
        self.clients = clients
        self.check_timeout_s = check_timeout_s
        # (bootstrap servers, security) seen to work; the worker's own were checked at its start.
        self._working: set[KafkaClientSettings] = {_access(clients.worker)}
        self._parsed: dict[tuple[tuple[str, str], ...], KafkaClientSettings] = {}
        self._lock = threading.Lock()

    @property
    def worker(self) -> KafkaClientSettings:
        """The worker's own clients (metadata for sink assignment, Spark's warm-up read of the config topic)."""
        return self.clients.worker

    def producer(
        self, connector_config: Mapping[str, str] | None, task_producer: Mapping[str, str] | None = None
    ) -> KafkaClientSettings:
        """A source task's producer (and a sink's dead letter queue producer, with no `task_producer`)."""
        asked = dict(task_producer or {})
        if "bootstrap.servers" in asked:
            return self._parse(asked)
        base = self.clients.task(ClientKind.PRODUCER, connector_config)
        return self._parse({**PRODUCER_DEFAULTS, **base.java(), **asked})

    def consumer(self, connector_config: Mapping[str, str] | None) -> KafkaClientSettings:
        return self.clients.task(ClientKind.CONSUMER, connector_config)

    def admin(self, connector_config: Mapping[str, str] | None) -> KafkaClientSettings:
        return self.clients.task(ClientKind.ADMIN, connector_config)

    def checked(self, settings: KafkaClientSettings, who: str) -> KafkaClientSettings:
        """`settings`, once a metadata request with their brokers and security has worked (here or before);
        raises KafkaAccessError (its message says what to fix) when the brokers refuse them. `who` names the
        client in the log."""
        access = _access(settings)
        with self._lock:
            if access in self._working:
                return settings
        try:
            preflight.verify(access, timeout=self.check_timeout_s)
        except KafkaAccessError as exc:
            if exc.kind in UNANSWERED:
                log.warning("%s: %s; starting anyway (its clients retry)", who, exc)
                return settings
            raise
        with self._lock:
            self._working.add(access)
        return settings

    def _parse(self, props: Mapping[str, str]) -> KafkaClientSettings:
        """Parsed once per distinct properties: a run restarts often, and parsing reads key stores (a JKS one
        is converted with keytool the first time a librdkafka client needs it)."""
        key = tuple(sorted(props.items()))
        with self._lock:
            known = self._parsed.get(key)
        if known is not None:
            return known
        settings = KafkaClientSettings.from_properties(props)
        with self._lock:
            return self._parsed.setdefault(key, settings)


def _access(settings: KafkaClientSettings) -> KafkaClientSettings:
    """What decides whether a client gets in: its brokers and its security, not its tuning."""
    return KafkaClientSettings(settings.bootstrap_servers, settings.security)
