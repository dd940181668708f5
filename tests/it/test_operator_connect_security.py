"""KafkaConnect `spec.tls` and `spec.authentication` end to end (issue 29): on the real API server,
`sparklink operator run` starts a real worker against the session's secured Kafka (real TLS, real SCRAM),
its trust and credentials taken from real Secrets. SCRAM-SHA-512 over TLS becomes Ready and a connector's
records land on the secured cluster; a wrong password becomes NotReady naming the authentication failure;
a missing Secret is NotReady naming it. No secret is in the worker's properties or the status.
"""

from __future__ import annotations

import base64
import inspect
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from sparklink.api.config import read_properties
from sparklink.clients import jaas
from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.config import WorkerConfig
from tests.helpers import unique, wait_for
from tests.it.operator_fixtures import Kube, OperatorProcess, conditions, is_ready, kafka_connect_body, task_states
from tests.support.secured_kafka import SecuredKafka

pytestmark = [pytest.mark.kafka, pytest.mark.kube]


def _worker_speaks_secured_kafka() -> bool:
    """Whether this tree's worker takes client security for its own Kafka clients (its internal topics'
    log): the operator's settings reach a worker that, before branch b3-secured-wiring, spoke PLAINTEXT only."""
    from sparklink.worker.storage import kafka_log

    return "KafkaClientSettings" in inspect.getsource(kafka_log)


needs_secured_worker = pytest.mark.skipif(
    not _worker_speaks_secured_kafka(),
    reason="the worker's own Kafka clients are PLAINTEXT-only in this tree (secured wiring: branch b3-secured-wiring)",
)

LISTENER = "saslssl"
CA_SECRET, USER_SECRET, WRONG_SECRET = "secured-cluster-ca-cert", "connect-user", "connect-user-wrong"


@pytest.fixture(scope="module")
def scram(kubeobj: Kube, secured_kafka: SecuredKafka) -> Iterator[dict[str, str]]:
    """The secured cluster's CA and the SCRAM user's password in Secrets, as a Strimzi user has them."""
    props = secured_kafka.properties(LISTENER, "SCRAM-SHA-512")
    login = jaas.parse(props["sasl.jaas.config"]).options
    secrets = {
        CA_SECRET: {"ca.crt": Path(props["ssl.truststore.location"]).read_bytes()},
        USER_SECRET: {"password": login["password"].encode()},
        WRONG_SECRET: {"password": b"not-the-password"},
    }
    for name, data in secrets.items():
        body = {"metadata": {"name": name}, "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}
        kubeobj.core.create_namespaced_secret(kubeobj.ns, body)
    yield {"username": login["username"], "password": login["password"], "bootstrap": props["bootstrap.servers"]}
    for name in secrets:
        kubeobj.core.delete_namespaced_secret(name, kubeobj.ns)


def secured_connect(name: str, scram: dict[str, str], password_secret: str) -> dict[str, Any]:
    body = kafka_connect_body(name, scram["bootstrap"])
    body["spec"]["tls"] = {"trustedCertificates": [{"secretName": CA_SECRET, "certificate": "ca.crt"}]}
    body["spec"]["authentication"] = {
        "type": "scram-sha-512",
        "username": scram["username"],
        "passwordSecret": {"secretName": password_secret, "password": "password"},
    }
    return body


def test_the_worker_reads_trust_and_password_from_0600_files_and_no_secret_is_written_elsewhere(
    kubeobj: Kube, operator_process: OperatorProcess, scram: dict[str, str]
) -> None:
    name = "files-connect"
    kubeobj.create(secured_connect(name, scram, USER_SECRET))
    try:
        base = operator_process.state_dir / "workers" / kubeobj.ns / "KafkaConnect" / name
        wait_for(lambda: (base / "worker.json").exists(), 120, "the operator to start the worker")
        credentials = base / "credentials"
        assert stat.S_IMODE(credentials.stat().st_mode) == 0o700
        assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in credentials.iterdir()} == {
            "sasl.password": 0o600,
            "trusted-certificates.crt": 0o600,
        }
        assert (credentials / "sasl.password").read_text() == scram["password"]
        settings = read_properties(base / "worker.properties")
        assert scram["password"] not in (base / "worker.properties").read_text()
        for prefix in ("", "producer.", "consumer.", "admin."):
            assert settings[prefix + "security.protocol"] == "SASL_SSL"
            assert settings[prefix + "sasl.mechanism"] == "SCRAM-SHA-512"
            assert settings[prefix + "ssl.truststore.location"] == str(credentials / "trusted-certificates.crt")
        # The worker's config providers resolve the placeholder to the Secret's password.
        resolved = WorkerConfig.from_properties(base / "worker.properties").model_extra or {}
        assert f'password="{scram["password"]}";' in resolved["producer.sasl.jaas.config"]
        status = kubeobj.get("KafkaConnect", name).get("status") or {}
        assert scram["password"] not in str(status)
        assert scram["password"] not in operator_process.log.read_text()
    finally:
        kubeobj.delete("KafkaConnect", name)


@needs_secured_worker
def test_scram_over_tls_from_secrets_is_ready_and_a_connector_writes_to_the_secured_cluster(
    kubeobj: Kube, operator_process: OperatorProcess, secured_kafka: SecuredKafka, scram: dict[str, str]
) -> None:
    name, topic = "secured-connect", unique("secured-out")
    kubeobj.create(secured_connect(name, scram, USER_SECRET))
    try:
        obj = kubeobj.wait("KafkaConnect", name, is_ready, "Ready over SASL_SSL", timeout=240)
        assert not conditions(obj, "Warning")
        base = operator_process.state_dir / "workers" / kubeobj.ns / "KafkaConnect" / name
        properties = (base / "worker.properties").read_text()
        assert scram["password"] not in properties and scram["password"] not in str(obj["status"])
        assert "security.protocol=SASL_SSL" in properties.splitlines()
        assert stat.S_IMODE((base / "credentials" / "sasl.password").stat().st_mode) == 0o600

        kubeobj.create(
            {
                "apiVersion": "kafka.strimzi.io/v1",
                "kind": "KafkaConnector",
                "metadata": {"name": "secured-source", "labels": {"strimzi.io/cluster": name}},
                "spec": {
                    "class": "tests.plugins.CountingConnector",
                    "tasksMax": 1,
                    "config": {"topic": topic, "records.per.second": 5},
                },
            }
        )
        kubeobj.wait(
            "KafkaConnector", "secured-source", lambda o: is_ready(o) and task_states(o) == ["RUNNING"], "RUNNING"
        )
        assert records_on(secured_kafka, topic) >= 3
    finally:
        kubeobj.delete("KafkaConnector", "secured-source")
        kubeobj.delete("KafkaConnect", name)


def records_on(secured_kafka: SecuredKafka, topic: str) -> int:
    """How many records the topic holds, read over the SCRAM listener with the cluster's CA."""
    settings = secured_kafka.settings(LISTENER, "SCRAM-SHA-512")
    consumer = Consumer(settings.librdkafka(**{"group.id": unique("reader"), "enable.auto.commit": False}))
    try:

        def count() -> int | None:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
            return high - low if high - low >= 3 else None

        found: int = wait_for(count, 120, f"3 records in {topic} over {LISTENER}")
        return found
    finally:
        consumer.close()


@needs_secured_worker
def test_a_wrong_password_is_not_ready_naming_the_authentication_failure(
    kubeobj: Kube, operator_process: OperatorProcess, scram: dict[str, str]
) -> None:
    name = "wrong-password-connect"
    kubeobj.create(secured_connect(name, scram, WRONG_SECRET))
    try:
        # The reason stays in the status while the next worker starts (and fails the same way): the second
        # exit's message names it too, and counts both.
        def failed_twice(obj: dict[str, Any]) -> bool:
            return any(
                "uthentication failed" in (m := c.get("message") or "") and "exited 2 times in a row" in m
                for c in conditions(obj, "NotReady")
            )

        what = "NotReady naming the authentication failure after two exits"
        obj = kubeobj.wait("KafkaConnect", name, failed_twice, what, timeout=180)
        assert "not-the-password" not in str(obj["status"])
    finally:
        kubeobj.delete("KafkaConnect", name)


def test_a_missing_secret_is_not_ready_naming_it_and_no_worker_starts(
    kubeobj: Kube, operator_process: OperatorProcess, scram: dict[str, str]
) -> None:
    name = "missing-secret-connect"
    kubeobj.create(secured_connect(name, scram, "no-such-secret"))
    try:
        message = f"Secret no-such-secret not found in namespace {kubeobj.ns}"
        kubeobj.wait(
            "KafkaConnect",
            name,
            lambda o: (
                [(c["reason"], c["message"]) for c in conditions(o, "NotReady")]
                == [("InvalidConfigurationException", message)]
            ),
            "NotReady naming the missing Secret",
        )
        assert not (operator_process.state_dir / "workers" / kubeobj.ns / "KafkaConnect" / name).exists()
    finally:
        kubeobj.delete("KafkaConnect", name)


def test_a_file_provider_a_kafka_connect_declares_reads_only_its_credentials_directory(
    kubeobj: Kube, operator_process: OperatorProcess, kafka: KafkaCluster, tmp_path: Path
) -> None:
    """config.providers stays allowed (as in Strimzi), but on the local runtime a worker runs as the operator's
    user: a FileConfigProvider declared in spec.config is confined to the worker's credentials directory."""
    outside = tmp_path / "operator-only.properties"
    outside.write_text("token=operator-only-value\n")
    name, connector = "provider-connect", "provider-reader"
    kubeobj.create(
        kafka_connect_body(
            name,
            kafka.bootstrap_servers,
            **{
                "config.providers": "file",
                "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
                "config.providers.file.param.allowed.paths": "/",
            },
        )
    )
    try:
        obj = kubeobj.wait("KafkaConnect", name, is_ready, "Ready", timeout=240)
        (note,) = conditions(obj, "Warning")
        assert (
            note["reason"] == "ConfigProviderConfined"
            and "config.providers.file.param.allowed.paths" in note["message"]
        )
        base = operator_process.state_dir / "workers" / kubeobj.ns / "KafkaConnect" / name
        settings = read_properties(base / "worker.properties")
        assert settings["config.providers"] == "file"
        assert settings["config.providers.file.param.allowed.paths"] == str(base / "credentials")

        kubeobj.create(
            {
                "apiVersion": "kafka.strimzi.io/v1",
                "kind": "KafkaConnector",
                "metadata": {"name": connector, "labels": {"strimzi.io/cluster": name}},
                "spec": {
                    "class": "tests.plugins.CountingConnector",
                    "tasksMax": 1,
                    "config": {"topic": unique("p"), "records.per.second": 1, "token": f"${{file:{outside}:token}}"},
                },
            }
        )

        def refused(o: dict[str, Any]) -> bool:
            return "allowed.paths" in str(o.get("status", {}))

        found = kubeobj.wait("KafkaConnector", connector, refused, "the placeholder refused by allowed.paths")
        assert not is_ready(found) and "operator-only-value" not in str(found["status"])
        assert "operator-only-value" not in (base / "worker.log").read_text()
    finally:
        kubeobj.delete("KafkaConnector", connector)
        kubeobj.delete("KafkaConnect", name)
