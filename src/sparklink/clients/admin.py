"""A long-lived confluent-kafka AdminClient that is made anew after a request outlasted its wait.

After a broker outage that ran past a request, a librdkafka admin client may never be answered again:
in a probe (a one-node cluster stopped for 20 s with a consumer-group commit in flight), 3 runs in 5 had
every later request of the same client time out at 30 s, while a new client's was answered in 0.08 s.
A client kept for a process's life (a sink's offset store, the lag metrics, the MirrorMaker connectors'
admins, the roller's through a roll) would then fail every request until the process ended.

`RenewingAdmin` keeps one client, made on first use from its settings, and drops it when a request made
through `request()` ends in a local time-out; the next request makes a new one. A time-out Kafka answered
(a broker's REQUEST_TIMED_OUT) is an answer and keeps the client. Callers: every long-lived admin client.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]

__all__ = ["RenewingAdmin", "error_code", "outlasted_wait"]


def outlasted_wait(exc: BaseException) -> bool:
    """Whether `exc` says the client's request got no answer in time (rather than an answer, even a refusal).

    `Future.result(timeout)` raises TimeoutError; librdkafka's own request and metadata time-outs raise
    KafkaException with the local code _TIMED_OUT."""
    if isinstance(exc, TimeoutError):
        return True
    return isinstance(exc, KafkaException) and error_code(exc) == KafkaError._TIMED_OUT


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


def error_code(exc: KafkaException) -> int | None:
    """The KafkaError code `exc` carries (None when it carries none)."""
    error = exc.args[0] if exc.args else None
    return error.code() if isinstance(error, KafkaError) else None
