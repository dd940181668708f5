"""Connector client overrides against the worker's connector.client.config.override.policy
(AbstractHerder#validateClientOverrides, Kafka 4.3.1): a 400 at create and update, an error on the key in
/config/validate, with Connect's message; only the clients a connector uses are checked."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sparklink.api.errors import ConfigValidationError
from sparklink.worker.config import WorkerConfig
from sparklink.worker.herder.herder import StandaloneHerder, Stores
from sparklink.worker.plugins import Plugins
from sparklink.worker.storage.backend import MemoryBackend
from sparklink.worker.storage.config import ConfigStore
from sparklink.worker.storage.group_offsets import MemoryGroupOffsetStore
from sparklink.worker.storage.offsets import OffsetStore
from sparklink.worker.storage.status import StatusStore
from tests.unit.test_herder import TwinWorker

POLICY = "connector.client.config.override.policy"
REFUSED = "The '{policy}' policy does not allow '{key}' to be overridden in the connector configuration."


def herder_with(**worker: str) -> StandaloneHerder:
    plugins = Plugins()
    stores = Stores(
        ConfigStore(MemoryBackend()),
        StatusStore(MemoryBackend()),
        OffsetStore(MemoryBackend()),
        MemoryGroupOffsetStore(),
    )
    config = WorkerConfig.model_validate(worker)
    return StandaloneHerder(config, stores, TwinWorker(plugins), plugins, cluster_id="twin")


@pytest.fixture
def principal() -> Iterator[StandaloneHerder]:
    herder = herder_with(**{POLICY: "Principal"})
    herder.start()
    yield herder
    herder.stop()


def datagen(**extra: str) -> dict[str, str]:
    return {"name": "d", "connector.class": "datagen", "topic": "t", **extra}


def sink(**extra: str) -> dict[str, str]:
    return {"name": "s", "connector.class": "FileStreamSink", "file": "/tmp/x", "topics": "t", **extra}


def test_a_refused_override_is_a_400_at_create_and_update_with_connects_message(principal: StandaloneHerder) -> None:
    with pytest.raises(ConfigValidationError) as caught:
        principal.create_connector("d", datagen(**{"producer.override.linger.ms": "5"}))
    message = REFUSED.format(policy="Principal", key="linger.ms")
    assert caught.value.message.startswith("Connector configuration is invalid and contains the following 1 error(s):")
    assert message in caught.value.message
    principal.create_connector("d", datagen(**{"producer.override.sasl.mechanism": "PLAIN"}))
    with pytest.raises(ConfigValidationError):
        principal.put_connector_config("d", datagen(**{"producer.override.acks": "0"}))
    assert principal.connector_config("d")["producer.override.sasl.mechanism"] == "PLAIN"  # unchanged


def test_validate_reports_each_override_of_a_client_the_connector_uses(principal: StandaloneHerder) -> None:
    config = sink(
        **{
            "consumer.override.max.poll.records": "10",
            "consumer.override.security.protocol": "SSL",
            "producer.override.acks": "0",  # a sink without a dead letter queue has no producer: not checked
        }
    )
    answer = principal.validate("FileStreamSink", config)
    values = {c.value.name: c.value for c in answer.configs}
    assert values["consumer.override.max.poll.records"].errors == [
        REFUSED.format(policy="Principal", key="max.poll.records")
    ]
    assert values["consumer.override.security.protocol"].errors == []
    assert "producer.override.acks" not in values or values["producer.override.acks"].errors == []
    assert answer.error_count == 1
    dlq = sink(**{"errors.deadletterqueue.topic.name": "dlq", "producer.override.acks": "0"})
    values = {c.value.name: c.value for c in principal.validate("FileStreamSink", dlq).configs}
    assert values["producer.override.acks"].errors == [REFUSED.format(policy="Principal", key="acks")]


def test_connects_default_policy_all_allows_every_override() -> None:
    herder = herder_with()
    herder.start()
    try:
        answer = herder.validate(
            "datagen", datagen(**{"producer.override.sasl.jaas.config": "x", "admin.override.a": "b"})
        )
        assert answer.error_count == 0
    finally:
        herder.stop()
