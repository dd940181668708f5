"""Real TLS, mutual TLS and SASL: each listener of the secured cluster (no PLAINTEXT one) carries records for
confluent-kafka, kafka-python and Spark's Kafka source and sink, all with settings from sparklink.clients; each
bad credential gets the preflight's error, naming what to fix, within a bound; the CLI starts a secured
cluster and checks clusters with --command-config."""

from __future__ import annotations

import stat
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer, TopicPartition
from typer.testing import CliRunner

from sparklink.cli.main import app
from sparklink.clients.errors import KafkaAccessError
from sparklink.clients.preflight import verify
from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform.kafka_users import properties_text
from tests.helpers import unique, wait_for
from tests.support.secured_kafka import SecuredKafka

# (listener, SASL mechanism): the SASL_SSL listener serves SCRAM-SHA-512 and PLAIN.
ROUTES = [("tls", None), ("mtls", None), ("saslssl", "SCRAM-SHA-512"), ("saslssl", "PLAIN"), ("sasl", "PLAIN")]
ROUTE_IDS = [f"{listener}-{mechanism or 'tls'}" for listener, mechanism in ROUTES]
# A definite failure is reported long before the preflight's own timeout: it does not wait it out.
PREFLIGHT_TIMEOUT, BOUND = 60.0, 30.0
runner = CliRunner(env={"COLUMNS": "200"})


@pytest.mark.parametrize(("listener", "mechanism"), ROUTES, ids=ROUTE_IDS)
def test_confluent_kafka_round_trips_records(secured_kafka: SecuredKafka, listener: str, mechanism: str | None) -> None:
    settings = secured_kafka.settings(listener, mechanism)
    assert settings.security.protocol.value == secured_kafka.cluster.listener(listener).security_protocol
    topic = unique(f"rt-{listener}")
    producer = Producer(settings.librdkafka())
    for i in range(20):
        producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
    assert producer.flush(60) == 0
    consumer = Consumer(settings.librdkafka(**{"group.id": unique("g"), "auto.offset.reset": "earliest"}))
    consumer.subscribe([topic])
    seen: list[bytes] = []

    def all_read() -> bool:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen.append(message.value())
        return len(seen) == 20

    try:
        wait_for(all_read, 60, what=f"20 records over {listener}")
    finally:
        consumer.close()
    assert sorted(seen) == sorted(f"v{i}".encode() for i in range(20))


@pytest.mark.parametrize(("listener", "mechanism"), ROUTES, ids=ROUTE_IDS)
def test_kafka_python_reads_metadata_and_joins_a_group(
    secured_kafka: SecuredKafka, listener: str, mechanism: str | None
) -> None:
    settings = secured_kafka.settings(listener, mechanism)
    topic = unique(f"kp-{listener}")
    producer = Producer(settings.librdkafka())
    producer.produce(topic, b"one")
    assert producer.flush(60) == 0
    group = unique("kp")
    consumer = KafkaConsumer(
        **settings.kafka_python(
            group_id=group, auto_offset_reset="earliest", enable_auto_commit=False, heartbeat_interval_ms=500
        )
    )
    try:
        assert topic in consumer.topics()  # metadata over the secured connection
        consumer.subscribe([topic])
        records: list[Any] = []
        wait_for(
            lambda: records.extend(r for rs in consumer.poll(500).values() for r in rs) or records,
            60,
            what=f"a group assignment and a record over {listener}",
        )
        partition = TopicPartition(topic, 0)
        assert consumer.assignment() == {partition} and records[0].value == b"one"
        consumer.commit()  # the group coordinator, over the same listener
        assert consumer.committed(partition) == 1
    finally:
        consumer.close()


@pytest.mark.parametrize(("listener", "mechanism"), ROUTES, ids=ROUTE_IDS)
def test_spark_kafka_sink_and_source_with_kafka_options(
    secured_kafka: SecuredKafka, spark: Any, listener: str, mechanism: str | None
) -> None:
    options = secured_kafka.settings(listener, mechanism).spark_options()
    assert options["kafka.security.protocol"] == secured_kafka.cluster.listener(listener).security_protocol
    topic = unique(f"spark-{listener}")
    rows = [(f"k{i}", f"v{i}") for i in range(8)]
    frame = spark.createDataFrame(rows, ["key", "value"])
    frame.write.format("kafka").mode("append").options(**options).option("topic", topic).save()
    read = (
        spark.read.format("kafka")
        .options(**options)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value")
        .collect()
    )
    assert sorted((r.key, r.value) for r in read) == rows


@pytest.mark.parametrize("listener", ["tls", "mtls", "saslssl", "sasl"])
def test_the_preflight_passes_with_good_credentials(secured_kafka: SecuredKafka, listener: str) -> None:
    info = verify(secured_kafka.settings(listener), timeout=PREFLIGHT_TIMEOUT)
    node = secured_kafka.cluster.brokers[0]
    assert info.brokers == {node.node_id: f"127.0.0.1:{node.listener_ports[listener]}"}


def test_a_user_added_to_the_running_cluster_logs_in_with_scram_and_a_client_certificate(
    secured_kafka: SecuredKafka,
) -> None:
    access = secured_kafka.cluster.access
    password = access.add_user("carol")  # AlterUserScramCredentials, and a certificate from the clients CA
    scram = access.client_properties("saslssl", user="carol")
    assert f'username="carol" password="{password}"' in scram["sasl.jaas.config"]
    assert verify(KafkaClientSettings.from_properties(scram), timeout=PREFLIGHT_TIMEOUT).brokers
    mtls = access.client_properties("mtls", user="carol")
    assert mtls["ssl.keystore.location"].endswith("carol.pem")
    assert verify(KafkaClientSettings.from_properties(mtls), timeout=PREFLIGHT_TIMEOUT).brokers


BAD = {
    "wrong-scram-password": (
        lambda k: k.wrong_password("saslssl"),
        "authentication",
        "(SASL_SSL, SASL mechanism SCRAM-SHA-512): SASL authentication failed: the broker rejected the username or "
        "password (SCRAM-SHA-512). Check the username and password in sasl.jaas.config",
    ),
    "wrong-plain-password": (
        lambda k: k.wrong_password("sasl"),
        "authentication",
        "(SASL_PLAINTEXT, SASL mechanism PLAIN): SASL authentication failed",
    ),
    "untrusted-server-certificate": (
        lambda k: k.untrusted_server("tls"),
        "untrusted-server",
        "(SSL): the broker's certificate is not signed by a CA the client trusts. Check ssl.truststore.location",
    ),
    "expired-client-certificate": (
        lambda k: k.expired_client_certificate(),
        "client-certificate-expired",
        "(SSL): the broker refused the client certificate (CN=sparklink,O=io.sparklink): it expired on ",
    ),
    "client-certificate-from-another-ca": (
        lambda k: k.foreign_client_certificate(),
        "client-certificate-rejected",
        "it is not signed by a CA the listener trusts. Check ssl.keystore.location",
    ),
    "no-client-certificate-on-mutual-tls": (
        lambda k: k.no_client_certificate(),
        "client-certificate-missing",
        "(SSL): the listener requires a client certificate (mutual TLS) and the client has none. Check "
        "ssl.keystore.type",
    ),
    "mechanism-the-listener-does-not-enable": (
        lambda k: k.unknown_mechanism(),
        "mechanism",
        "(SASL_SSL, SASL mechanism SCRAM-SHA-256): the listener does not enable SASL mechanism SCRAM-SHA-256 (it "
        "offers SCRAM-SHA-512, PLAIN). Check sasl.mechanism",
    ),
    "plaintext-client-on-a-tls-port": (
        lambda k: k.plaintext_on_tls(),
        "protocol",
        "(PLAINTEXT): the broker closes the connection at the first request: the listener expects TLS, but "
        "security.protocol is PLAINTEXT. Check security.protocol",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_each_bad_credential_gets_an_error_that_says_what_to_fix(secured_kafka: SecuredKafka, case: str) -> None:
    make, kind, text = BAD[case]
    props = make(secured_kafka)
    settings = KafkaClientSettings.from_properties(props)
    started = time.monotonic()
    with pytest.raises(KafkaAccessError) as caught:
        verify(settings, timeout=PREFLIGHT_TIMEOUT)
    elapsed = time.monotonic() - started
    message = str(caught.value)
    assert caught.value.kind == kind, message
    assert message.startswith(f"Kafka at {props['bootstrap.servers']} "), message
    assert text in message, message
    assert elapsed < BOUND, f"{case} took {elapsed:.1f}s"
    for secret in secured_kafka.cluster.access.users().values():
        assert secret not in message


def test_the_cli_starts_a_secured_cluster_and_checks_clusters_with_a_command_config(
    secured_kafka_target: SecuredKafka, secured_kafka: SecuredKafka, tmp_path: Path
) -> None:
    target = secured_kafka_target.cluster
    assert [(lst.name, lst.security_protocol, lst.mutual_tls) for lst in target.listeners] == [("mtls", "SSL", True)]
    client_file = target.state_dir / "clients" / "mtls.properties"
    started = secured_kafka_target.cli_output
    assert f"mtls (SSL): {client_file}" in started
    assert f"ssl.keystore.location={target.access.clients_ca.client('sparklink').keystore}" in started
    assert stat.S_IMODE(client_file.stat().st_mode) == 0o600
    state = ["--state-dir", str(target.state_dir)]

    checked = runner.invoke(app, ["kafka", "status", *state, "--command-config", str(client_file)])
    assert checked.exit_code == 0, checked.output
    node = target.brokers[0]
    assert "Client check passed (127.0.0.1:" in checked.output
    assert f"brokers {node.node_id}=127.0.0.1:{node.listener_ports['mtls']}" in checked.output

    no_cert = tmp_path / "no-cert.properties"
    no_cert.write_text(properties_text(secured_kafka_target.no_client_certificate()))
    refused = runner.invoke(app, ["kafka", "status", *state, "--command-config", str(no_cert)])
    assert refused.exit_code == 1 and "requires a client certificate (mutual TLS)" in refused.output

    # The other cluster from outside (no state dir): a wrong SCRAM password, then the right one.
    wrong = tmp_path / "wrong.properties"
    wrong.write_text(properties_text(secured_kafka.wrong_password("saslssl")))
    external = ["kafka", "status", "--bootstrap-server", secured_kafka.cluster.bootstrap("saslssl"), "--command-config"]
    failed = runner.invoke(app, [*external, str(wrong)])
    assert failed.exit_code == 1 and "SASL authentication failed" in failed.output

    # Starting the running secured cluster again prints each listener's file with its secrets hidden.
    again = runner.invoke(app, ["kafka", "start", "--state-dir", str(secured_kafka.cluster.state_dir)])
    assert again.exit_code == 0, again.output
    assert "sasl.jaas.config=[hidden]" in again.output and "security.protocol=SASL_SSL" in again.output
    assert all(password not in again.output for password in secured_kafka.cluster.access.users().values())
    good = runner.invoke(app, [*external, str(secured_kafka.cluster.state_dir / "clients" / "saslssl.properties")])
    assert good.exit_code == 0 and "over SASL_SSL/SCRAM-SHA-512" in good.output
