"""Test helpers: waiting for conditions, reading topics, unique names."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
from confluent_kafka import Consumer, KafkaException

from sparklink.clients import watermarks
from sparklink.clients.settings import KafkaClientSettings

T = TypeVar("T")
Cluster = str | KafkaClientSettings
"""A plaintext cluster's bootstrap servers, or a secured one's client settings."""


def clients(cluster: Cluster) -> KafkaClientSettings:
    return cluster if isinstance(cluster, KafkaClientSettings) else KafkaClientSettings(cluster)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_for(
    condition: Callable[[], T],
    timeout: float = 60.0,
    what: str = "condition",
    interval: float = 0.25,
    explain: Callable[[], Any] | None = None,
) -> T:
    """Poll until `condition()` is truthy and return it; fail the test naming `what` otherwise.

    `explain()`, when given, is called on a time-out and its result added to the failure (e.g. a
    connector's status), so a failure in CI says what the system was doing.
    """
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = condition()
        except (httpx.HTTPError, KafkaException, KeyError, IndexError) as exc:
            last = exc  # not there yet (e.g. a new partition's leader still being elected): ask again
        else:
            if last:
                return last
        time.sleep(interval)
    message = f"timed out after {timeout:.0f}s waiting for {what}; last value: {last!r}"
    if explain is not None:
        try:
            message += f"; state: {explain()!r}"
        except Exception as exc:  # the explanation must not hide the time-out
            message += f"; state unavailable: {exc!r}"
    raise AssertionError(message)


def topic_size(bootstrap: Cluster, topic: str) -> int:
    consumer = Consumer(clients(bootstrap).librdkafka(**{"group.id": unique("size")}))
    try:
        return watermarks.topic_size(consumer, topic)
    finally:
        consumer.close()


def read_topic(bootstrap: Cluster, topic: str, at_least: int, timeout: float = 60.0) -> list[Any]:
    """Every record in the topic once at least `at_least` are there (keys, values, headers, timestamps)."""
    wait_for(lambda: topic_size(bootstrap, topic) >= at_least, timeout, f"{at_least} records in {topic}")
    consumer = Consumer(
        clients(bootstrap).librdkafka(
            **{"group.id": unique("reader"), "auto.offset.reset": "earliest", "enable.auto.commit": False}
        )
    )
    try:
        expected = topic_size(bootstrap, topic)
        consumer.subscribe([topic])
        out: list[Any] = []
        deadline = time.monotonic() + timeout
        while len(out) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            out.append(msg)
        assert len(out) >= expected, f"read {len(out)} of {expected} records from {topic}"
        return out
    finally:
        consumer.close()


def status(url: str, name: str) -> dict[str, Any]:
    response = httpx.get(f"{url}/connectors/{name}/status", timeout=30)
    response.raise_for_status()
    result: dict[str, Any] = response.json()
    return result


def task_states(url: str, name: str) -> list[str]:
    return [t["state"] for t in status(url, name)["tasks"]]


def create_topic(bootstrap: Cluster, topic: str, partitions: int = 1) -> None:
    """Create a topic and wait until it is there (a sink task only reads partitions that exist at its start)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(clients(bootstrap).librdkafka())
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)
    wait_for(lambda: topic in admin.list_topics(timeout=10).topics, 30, f"topic {topic}")
