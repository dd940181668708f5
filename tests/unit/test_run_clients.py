"""Whose settings each Kafka client of a task run takes (execution/clients.py), as Connect composes them."""

from __future__ import annotations

import time

import pytest

from sparklink.clients.connect import WorkerClients
from sparklink.clients.errors import ClientOverrideError
from sparklink.clients.security import SecurityProtocol
from sparklink.worker.execution.clients import RunClients
from tests.unit.clients.material import PLAIN, SCRAM, jaas

WORKER = {
    "bootstrap.servers": "127.0.0.1:1",
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.jaas.config": jaas(SCRAM, username="worker", password="w"),
    "producer.security.protocol": "SASL_PLAINTEXT",
    "producer.sasl.mechanism": "PLAIN",
    "producer.sasl.jaas.config": jaas(PLAIN, username="producer", password="p"),
    "producer.linger.ms": "5",
    "consumer.max.poll.records": "7",
}


def run_clients(**extra: str) -> RunClients:
    return RunClients(WorkerClients.from_worker({**WORKER, **extra}), check_timeout_s=1.0)


def test_a_source_producer_is_connects_acks_all_then_the_workers_then_the_connectors_then_the_tasks() -> None:
    clients = run_clients()
    producer = clients.producer({"producer.override.linger.ms": "9"}, {"batch.size": "100"})
    assert dict(producer.client) == {"acks": "all", "linger.ms": "9", "batch.size": "100"}
    assert producer.security.sasl is not None and producer.security.sasl.username == "producer"
    assert dict(clients.producer(None, {"acks": "1"}).client)["acks"] == "1"  # the task's word is last
    assert clients.producer(None) is clients.producer({})  # parsed once


def test_a_source_producer_with_nothing_set_lingers_like_connects_4x_clients_in_64_kib_batches() -> None:
    worker = {k: v for k, v in WORKER.items() if k != "producer.linger.ms"}
    producer = RunClients(WorkerClients.from_worker(worker), check_timeout_s=1.0).producer(None)
    assert dict(producer.client) == {"acks": "all", "linger.ms": "5", "batch.size": "65536"}
    worker_set = run_clients(**{"producer.batch.size": "16384", "producer.linger.ms": "0"}).producer(None)
    assert dict(worker_set.client) == {"acks": "all", "linger.ms": "0", "batch.size": "16384"}


def test_a_task_writing_to_a_cluster_of_its_own_takes_only_its_own_settings() -> None:
    own = {"bootstrap.servers": "target:9093", "security.protocol": "SSL", "batch.size": "262144"}
    producer = run_clients().producer({"producer.override.linger.ms": "9"}, own)
    assert producer.bootstrap_servers == "target:9093"
    assert producer.security.protocol is SecurityProtocol.SSL and producer.security.sasl is None
    assert dict(producer.client) == {"batch.size": "262144"}


def test_a_sink_consumer_and_a_dead_letter_queue_admin() -> None:
    clients = run_clients()
    consumer = clients.consumer({"consumer.override.auto.offset.reset": "latest"})
    assert dict(consumer.client) == {"max.poll.records": "7", "auto.offset.reset": "latest"}
    assert consumer.security.protocol is SecurityProtocol.PLAINTEXT  # consumers do not inherit the top level
    admin = clients.admin({"admin.override.request.timeout.ms": "3000"})
    assert admin.security.sasl is not None and admin.security.sasl.username == "worker"
    assert dict(admin.client) == {"request.timeout.ms": "3000"}


def test_overrides_the_policy_refuses_fail_the_run() -> None:
    clients = run_clients(**{"connector.client.config.override.policy": "None"})
    with pytest.raises(ClientOverrideError) as caught:
        clients.consumer({"consumer.override.max.poll.records": "1"})
    assert caught.value.key == "consumer.override.max.poll.records"


def test_brokers_that_do_not_answer_are_left_to_the_clients_retries() -> None:
    """Nothing listens on 127.0.0.1:1: not a settings problem, so the run starts (and a later run checks again)."""
    clients = run_clients()
    producer = clients.producer(None)
    began = time.monotonic()
    assert clients.checked(producer, "task t-0's producer") is producer
    assert time.monotonic() - began < 10
    # The worker's own settings were checked by its start: never again.
    began = time.monotonic()
    assert clients.checked(clients.worker, "the worker") is clients.worker
    assert time.monotonic() - began < 0.5
