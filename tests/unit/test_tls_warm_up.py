"""`kafka_io.warm_up_tls`: the Spark JVM's TLS cipher warm-up is asked for only when the clients use TLS, and a
JVM without it (no bootstrap jar) changes nothing. In-memory twins of the session's JVM view."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from sparklink.clients.settings import KafkaClientSettings
from sparklink.worker.execution import kafka_io


class WarmUpTwin:
    """io.sparklink.kafka.TlsCipherWarmup as py4j shows it: `start` answers True the first time only."""

    def __init__(self) -> None:
        self.starts: list[int] = []

    def start(self, records: int) -> bool:
        self.starts.append(records)
        return len(self.starts) == 1


def session(warm_up: Any) -> Any:
    return SimpleNamespace(_jvm=SimpleNamespace(io=SimpleNamespace(sparklink=SimpleNamespace(kafka=warm_up))))


def clients(protocol: str) -> KafkaClientSettings:
    props = {"bootstrap.servers": "127.0.0.1:9093", "security.protocol": protocol}
    if protocol.startswith("SASL"):
        login = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";'
        props |= {"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": login}
    return KafkaClientSettings.from_properties(props)


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_tls_clients_start_the_warm_up_with_its_record_count(protocol: str) -> None:
    twin = WarmUpTwin()
    spark = session(SimpleNamespace(TlsCipherWarmup=twin))
    kafka_io.warm_up_tls(spark, clients(protocol))
    kafka_io.warm_up_tls(spark, clients(protocol))  # a second caller: the JVM side refuses to run it twice
    assert twin.starts == [kafka_io.TLS_WARM_UP_RECORDS, kafka_io.TLS_WARM_UP_RECORDS]


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SASL_PLAINTEXT"])
def test_clients_without_tls_never_ask_the_jvm(protocol: str) -> None:
    twin = WarmUpTwin()
    kafka_io.warm_up_tls(session(SimpleNamespace(TlsCipherWarmup=twin)), clients(protocol))
    assert twin.starts == []


def test_a_jvm_without_the_warm_up_class_leaves_the_caller_unharmed(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger=kafka_io.log.name)
    kafka_io.warm_up_tls(session(SimpleNamespace()), clients("SSL"))
    assert "could not be warmed up" in caplog.text
