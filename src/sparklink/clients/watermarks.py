"""How many records a topic holds, read from its partitions' watermarks (the demo's live count, tests, benches)."""

from __future__ import annotations

from confluent_kafka import Consumer, TopicPartition

__all__ = ["topic_size"]


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
