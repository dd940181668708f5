"""A first start never dies on a fresh cluster: internal topics created that moment, many times in a row."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from sparklink.api.errors import ConnectError
from sparklink.clients.settings import KafkaClientSettings, client_config
from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.assembly import start_worker
from sparklink.worker.config import WorkerConfig
from sparklink.worker.storage.kafka_log import KafkaLog
from tests.conftest import worker_props
from tests.helpers import unique

STARTS = 6


def test_workers_start_on_internal_topics_created_that_moment(kafka: KafkaCluster, spark: Any, tmp_path: Path) -> None:
    admin = AdminClient(client_config(kafka.bootstrap_servers))
    for attempt in range(STARTS):
        group = unique("fresh")
        # Many partitions make "metadata shows a leader, the broker does not serve yet" likelier.
        props = worker_props(
            kafka, group, tmp_path / group, **{"offset.storage.partitions": 10, "status.storage.partitions": 5}
        )
        if attempt % 2:
            # Someone else created the topics an instant ago; the worker must not wait for them first.
            topics = [
                NewTopic(f"{group}-configs", 1, 1, config={"cleanup.policy": "compact"}),
                NewTopic(f"{group}-offsets", 10, 1, config={"cleanup.policy": "compact"}),
                NewTopic(f"{group}-status", 5, 1, config={"cleanup.policy": "compact"}),
            ]
            admin.create_topics(topics, operation_timeout=0)
        runtime = start_worker(WorkerConfig.model_validate(props), spark=spark)
        try:
            assert httpx.get(f"{runtime.url}/health", timeout=10).json()["status"] == "healthy"
            body = {"name": "first", "config": {"connector.class": "datagen", "topic": unique("first")}}
            assert httpx.post(f"{runtime.url}/connectors", json=body, timeout=60).status_code == 201
        finally:
            runtime.stop()


def test_a_worker_told_not_to_create_its_topics_names_the_missing_one_then_uses_those_made_for_it(
    kafka: KafkaCluster, spark: Any, tmp_path: Path
) -> None:
    """Connect 4.4's internal.topics.automatic.creation.enable=false: no topic created, a precise error."""
    admin = AdminClient(client_config(kafka.bootstrap_servers))
    group = unique("nocreate")
    props = worker_props(kafka, group, tmp_path / group, **{"internal.topics.automatic.creation.enable": "false"})
    with pytest.raises(ConnectError) as refused:
        start_worker(WorkerConfig.model_validate(props), spark=spark)
    assert re.fullmatch(
        rf"Topic '{re.escape(group)}-(configs|offsets|status)' specified via the "
        r"'(config|offset|status)\.storage\.topic' property is missing\. ",
        str(refused.value).split("The config")[0],
    )
    assert str(refused.value).endswith(
        "The config 'internal.topics.automatic.creation.enable' is set to 'false', so automatic creation of "
        "internal topics is disabled. Either enable automatic creation or create the topics manually."
    )
    assert not [t for t in admin.list_topics(timeout=10).topics if t.startswith(group)]

    topics = [NewTopic(f"{group}-{name}", 1, 1, config={"cleanup.policy": "compact"}) for name in TOPICS]
    for future in admin.create_topics(topics, operation_timeout=30).values():
        future.result()
    runtime = start_worker(WorkerConfig.model_validate(props), spark=spark)
    try:
        assert httpx.get(f"{runtime.url}/health", timeout=10).json()["status"] == "healthy"
    finally:
        runtime.stop()


TOPICS = ("configs", "offsets", "status")


def test_retriable_errors_are_retried_and_the_last_one_is_explained() -> None:
    log = KafkaLog(KafkaClientSettings("127.0.0.1:1"), "t-configs", timeout=1.0)
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION))
        return "ok"

    assert log._retrying("reading", flaky) == "ok" and len(calls) == 3

    def never() -> None:
        raise KafkaException(KafkaError(KafkaError.LEADER_NOT_AVAILABLE))

    with pytest.raises(ConnectError) as failed:
        log._retrying("reading", never)
    message = failed.value.message
    assert message.startswith("Reading internal topic t-configs on 127.0.0.1:1 over PLAINTEXT failed for 1s")
    assert "LEADER_NOT_AVAILABLE" in message and "Check that the brokers at 127.0.0.1:1 are running" in message


def test_a_replication_factor_above_the_brokers_fails_at_once_saying_so(kafka: KafkaCluster) -> None:
    log = KafkaLog(KafkaClientSettings(kafka.bootstrap_servers), unique("rf"), replication_factor=3, timeout=60)
    with pytest.raises(ConnectError) as failed:
        log.start(lambda _k, _v: None)
    assert "replication factor (3) is at most the number of brokers" in failed.value.message
