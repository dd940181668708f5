"""Connect's client prefixes and the override policy (Worker.java baseProducerConfigs, baseConsumerConfigs,
adminConfigs and the ConnectorClientConfigOverridePolicy implementations of Kafka 4.3.1)."""

from __future__ import annotations

import pytest

from sparklink.clients.connect import ClientKind, OverridePolicy, WorkerClients, task_clients, worker_clients
from sparklink.clients.errors import ClientOverrideError, ClientSettingsError
from sparklink.clients.security import SecurityProtocol
from tests.unit.clients.material import PLAIN, SCRAM, jaas

WORKER_JAAS = jaas(SCRAM, username="worker", password="w")
TASK_JAAS = jaas(PLAIN, username="task", password="t")
WORKER = {
    "bootstrap.servers": "k:9093",
    "group.id": "connect",
    "rest.port": "8083",
    "request.timeout.ms": "20000",
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.jaas.config": WORKER_JAAS,
}


def test_the_worker_clients_use_the_top_level_settings() -> None:
    clients = worker_clients({**WORKER, "producer.acks": "1"})
    assert clients.bootstrap_servers == "k:9093"
    assert clients.security.sasl is not None and clients.security.sasl.username == "worker"
    assert dict(clients.client) == {"request.timeout.ms": "20000"}  # worker-only keys stay out


def test_task_producers_and_consumers_do_not_inherit_the_top_level_security() -> None:
    for kind in (ClientKind.PRODUCER, ClientKind.CONSUMER):
        clients = task_clients(WORKER, kind)
        assert clients.bootstrap_servers == "k:9093"
        assert clients.security.protocol is SecurityProtocol.PLAINTEXT and clients.client == ()


def test_task_clients_take_their_prefix_and_it_may_change_the_bootstrap_servers() -> None:
    props = {
        **WORKER,
        "producer.security.protocol": "SASL_PLAINTEXT",
        "producer.sasl.mechanism": "PLAIN",
        "producer.sasl.jaas.config": TASK_JAAS,
        "producer.acks": "1",
        "consumer.bootstrap.servers": "other:9092",
        "consumer.max.poll.records": "10",
    }
    producer = task_clients(props, "producer")
    assert producer.security.sasl is not None and producer.security.sasl.username == "task"
    assert dict(producer.client) == {"acks": "1"}
    consumer = task_clients(props, "consumer")
    assert consumer.bootstrap_servers == "other:9092" and dict(consumer.client) == {"max.poll.records": "10"}
    assert consumer.security.protocol is SecurityProtocol.PLAINTEXT


def test_task_admins_inherit_the_top_level_settings_then_their_prefix() -> None:
    admin = task_clients({**WORKER, "producer.security.protocol": "SSL"}, "admin")
    assert admin.security.sasl is not None and admin.security.sasl.username == "worker"
    assert dict(admin.client) == {"request.timeout.ms": "20000"}
    prefixed = task_clients({**WORKER, "admin.sasl.mechanism": "PLAIN", "admin.sasl.jaas.config": TASK_JAAS}, "admin")
    assert prefixed.security.sasl is not None and prefixed.security.sasl.username == "task"


def test_connector_overrides_apply_last_under_the_default_policy_all() -> None:
    connector = {
        "producer.override.sasl.jaas.config": TASK_JAAS,
        "producer.override.sasl.mechanism": "PLAIN",
        "producer.override.security.protocol": "SASL_PLAINTEXT",
        "consumer.override.acks": "0",
    }
    producer = task_clients(WORKER, "producer", connector)
    assert producer.security.sasl is not None and producer.security.sasl.username == "task"
    assert task_clients(WORKER, "consumer", connector).client == (("acks", "0"),)


def test_the_none_policy_refuses_every_override_as_connect_words_it() -> None:
    worker = {**WORKER, "connector.client.config.override.policy": "None"}
    connector = {"consumer.override.auto.offset.reset": "latest"}
    with pytest.raises(ClientOverrideError) as caught:
        task_clients(worker, "consumer", connector)
    assert caught.value.key == "consumer.override.auto.offset.reset"
    assert "'None' policy" in str(caught.value)
    assert OverridePolicy.from_worker(worker).violations(connector) == {
        "consumer.override.auto.offset.reset": "The 'None' policy does not allow 'auto.offset.reset' to be "
        "overridden in the connector configuration."
    }
    task_clients(worker, "producer", connector)  # other clients' overrides are not this client's business


def test_the_principal_policy_allows_only_the_login() -> None:
    policy = OverridePolicy.from_worker(
        {
            "connector.client.config.override.policy": "org.apache.kafka.connect.connector.policy."
            "PrincipalConnectorClientConfigOverridePolicy"
        }
    )
    assert policy.name == "Principal"
    assert all(policy.allows(k) for k in ("security.protocol", "sasl.mechanism", "sasl.jaas.config"))
    assert set(
        policy.violations({"admin.override.ssl.keystore.location": "/x", "admin.override.sasl.mechanism": "PLAIN"})
    ) == {"admin.override.ssl.keystore.location"}


def test_the_allowlist_policy_and_an_unknown_policy() -> None:
    policy = OverridePolicy.from_worker(
        {
            "connector.client.config.override.policy": "Allowlist",
            "connector.client.config.override.allowlist": "acks, linger.ms",
        }
    )
    assert policy.allows("linger.ms") and not policy.allows("sasl.jaas.config")
    with pytest.raises(ClientSettingsError) as caught:
        OverridePolicy.from_worker({"connector.client.config.override.policy": "Some"})
    assert caught.value.key == "connector.client.config.override.policy"


def test_connects_default_bootstrap_servers() -> None:
    assert worker_clients({}).bootstrap_servers == "localhost:9092"


def test_worker_clients_check_every_composition_at_start_and_name_the_key_as_written() -> None:
    clients = WorkerClients.from_worker({**WORKER, "admin.request.timeout.ms": "5"})
    assert clients.worker.security.sasl is not None and clients.worker.security.sasl.username == "worker"
    assert dict(clients.task("admin").client)["request.timeout.ms"] == "5"
    assert clients.task("producer") is clients.task("producer")  # parsed once
    for key in ("security.protocol", "producer.security.protocol", "consumer.security.protocol"):
        with pytest.raises(ClientSettingsError) as caught:
            WorkerClients.from_worker({**WORKER, key: "PLAINTXT"})
        assert caught.value.key == key
        assert str(caught.value).startswith(
            ("security.protocol must be one of", f"{key}: security.protocol must be one of")
        )
    with pytest.raises(ClientSettingsError) as missing:
        WorkerClients.from_worker({**WORKER, "admin.sasl.jaas.config": jaas(SCRAM, username="x")})
    assert missing.value.key == "admin.sasl.jaas.config" and "no password option" in str(missing.value)


def test_worker_clients_apply_the_policy_to_each_connectors_overrides() -> None:
    clients = WorkerClients.from_worker({**WORKER, "connector.client.config.override.policy": "Principal"})
    allowed = {"producer.override.sasl.mechanism": "PLAIN", "producer.override.sasl.jaas.config": TASK_JAAS}
    producer = clients.task("producer", {**allowed, "producer.override.security.protocol": "SASL_PLAINTEXT"})
    assert producer.security.sasl is not None and producer.security.sasl.username == "task"
    with pytest.raises(ClientOverrideError) as caught:
        clients.task("producer", {"producer.override.acks": "0"})
    assert caught.value.key == "producer.override.acks"
    with pytest.raises(ClientSettingsError) as unusable:
        clients.task("producer", {"producer.override.security.protocol": "SASL_PLAINTEXT"})
    # Producers do not inherit the worker's sasl.mechanism: the override lacks one.
    assert unusable.value.key == "producer.override.sasl.mechanism"
