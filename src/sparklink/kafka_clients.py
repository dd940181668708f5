"""Common settings for the confluent-kafka clients sparklink makes (control plane only)."""

from __future__ import annotations

import logging
from typing import Any

from confluent_kafka import Consumer, TopicPartition

_rdkafka_log = logging.getLogger("sparklink.rdkafka")
# librdkafka reports transient states (coordinator loading, a broker restarting, connection refused)
# that it retries itself; failures that matter surface as exceptions from the client calls. Raise
# the level at run time through /admin/loggers/sparklink.rdkafka when debugging a connection.
_rdkafka_log.setLevel(logging.CRITICAL)


def client_config(bootstrap_servers: str, **extra: Any) -> dict[str, Any]:
    """Bootstrap servers plus librdkafka's logs routed to Python logging instead of stderr."""
    return {"bootstrap.servers": bootstrap_servers, "logger": _rdkafka_log, **extra}


def topic_size(consumer: Consumer, topic: str, timeout: float = 10.0) -> int:
    """Records a topic holds now (high minus low watermark, over its partitions); 0 if it is absent."""
    meta = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
    if meta is None or meta.error is not None:
        return 0
    total = 0
    for partition in meta.partitions:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
        total += high - low
    return total
