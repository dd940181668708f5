"""SinkLag, the sink tasks' lag gauges: the lag it reads from Kafka, and the consumer of each group it keeps
between scrapes (made once, closed when its group goes unasked, closed with the worker)."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer

from sparklink.clients.admin import RenewingAdmin
from sparklink.clients.group_offsets import commit_offsets
from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.execution import task_metrics
from sparklink.worker.execution.task_metrics import SinkLag
from tests.helpers import create_topic, unique


@pytest.fixture
def topic(kafka: KafkaCluster) -> str:
    """A topic of two partitions holding 10 and 4 records."""
    name = unique("lag")
    create_topic(kafka.bootstrap_servers, name, partitions=2)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    for partition, records in ((0, 10), (1, 4)):
        for n in range(records):
            producer.produce(name, value=str(n).encode(), partition=partition)
    assert producer.flush(30) == 0
    return name


def test_the_lag_counts_from_the_committed_offset_or_from_the_log_start(kafka: KafkaCluster, topic: str) -> None:
    settings = KafkaClientSettings(kafka.bootstrap_servers)
    group = unique("connect-lag")
    commit_offsets(RenewingAdmin(settings.librdkafka), group, {(topic, 0): 6}, 30)
    lag = SinkLag(settings)
    try:
        assert lag.lags(group, [(topic, 0), (topic, 1)]) == {(topic, 0): 4, (topic, 1): 4}
    finally:
        lag.close()


def test_each_group_keeps_one_consumer_until_it_goes_unasked_or_the_worker_stops(
    kafka: KafkaCluster, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: dict[str, list[Consumer]] = {}

    def counting(admin: RenewingAdmin, group: str) -> Consumer:
        consumer = Consumer({**admin.settings(), "group.id": group, "enable.auto.commit": False})
        made.setdefault(group, []).append(consumer)
        return consumer

    monkeypatch.setattr(task_metrics, "group_consumer", counting)
    first, second = unique("connect-kept"), unique("connect-other")
    lag = SinkLag(KafkaClientSettings(kafka.bootstrap_servers))
    try:
        for _ in range(3):
            assert lag.lags(first, [(topic, 0)]) == {(topic, 0): 10}
        assert len(made[first]) == 1, "three scrapes of one group read through one consumer"

        # A scrape of another group closes the consumers of groups unasked for longer than CONSUMER_IDLE_S.
        monkeypatch.setattr(task_metrics, "CONSUMER_IDLE_S", -1.0)
        assert lag.lags(second, [(topic, 1)]) == {(topic, 1): 4}
        with pytest.raises(RuntimeError, match="closed"):
            made[first][0].assignment()
        monkeypatch.setattr(task_metrics, "CONSUMER_IDLE_S", 300.0)
        assert lag.lags(first, [(topic, 0)]) == {(topic, 0): 10}
        assert len(made[first]) == 2, "a group asked for again gets a new consumer"
        assert made[second][0].assignment() == [], "a group asked for within the idle time keeps its consumer"
    finally:
        lag.close()
    for consumer in (made[first][1], made[second][0]):  # the worker's stop closes what it kept
        with pytest.raises(RuntimeError, match="closed"):
            consumer.assignment()
