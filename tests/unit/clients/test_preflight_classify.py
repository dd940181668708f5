"""How the preflight reads librdkafka's reports (lines as librdkafka 2.16 wrote them against Kafka 4.3.1
brokers; tests/it/test_secured_kafka.py checks each case against real listeners)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparklink.clients.preflight import _error, classify
from sparklink.clients.settings import KafkaClientSettings
from tests.unit.clients.material import PLAIN, SCRAM, jaas, make

SCRAM_SSL = {
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.jaas.config": jaas(SCRAM, username="u", password="secret-pw"),
}


def settings(**props: str) -> KafkaClientSettings:
    return KafkaClientSettings.from_properties({"bootstrap.servers": "127.0.0.1:9093", **props})


@pytest.mark.parametrize(
    ("props", "line", "kind", "check"),
    [
        (
            SCRAM_SSL,
            "sasl_ssl://127.0.0.1:9093/bootstrap: SASL authentication error: Authentication failed during "
            "authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512 (after 376ms)",
            "authentication",
            "sasl.jaas.config",
        ),
        (
            {**SCRAM_SSL, "sasl.mechanism": "SCRAM-SHA-256"},
            "sasl_ssl://127.0.0.1:9093/bootstrap: SASL SCRAM-SHA-256 "
            "mechanism handshake failed: Broker: Unsupported SASL mechanism: broker's supported mechanisms: "
            "SCRAM-SHA-512,PLAIN (after 302ms in state AUTH_HANDSHAKE)",
            "mechanism",
            "sasl.mechanism",
        ),
        (
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": jaas(PLAIN, username="u", password="p"),
            },
            "sasl_ssl://127.0.0.1:9093/bootstrap: SASL PLAIN mechanism handshake failed: Broker: Request not valid in "
            "current SASL state: broker's supported mechanisms:  (after 23ms in state AUTH_HANDSHAKE)",
            "mechanism",
            "security.protocol",
        ),
        (
            {"security.protocol": "SSL"},
            "ssl://127.0.0.1:9093/bootstrap: SSL handshake failed: error:0A000086:SSL "
            "routines::certificate verify failed: broker certificate could not be verified (after 32ms in state "
            "SSL_HANDSHAKE)",
            "untrusted-server",
            "ssl.truststore",
        ),
        (
            {"security.protocol": "SSL"},
            "ssl://127.0.0.1:9093/bootstrap: Receive failed: error:0A000412:SSL "
            "routines::ssl/tls alert bad certificate: SSL alert number 42 (after 1ms in state APIVERSION_QUERY)",
            "client-certificate-missing",
            "ssl.keystore",
        ),
        (
            {"security.protocol": "SSL"},
            "ssl://127.0.0.1:9093/bootstrap: SSL handshake failed: Disconnected: SSL "
            "connection closed by peer: connecting to a PLAINTEXT broker listener? (after 116ms in state "
            "SSL_HANDSHAKE)",
            "protocol",
            "security.protocol",
        ),
    ],
)
def test_definite_failures(props: dict[str, str], line: str, kind: str, check: str) -> None:
    problem = classify(settings(**props), ["0/1 brokers are down", line])
    assert problem is not None and problem.kind == kind and check in problem.check


def test_a_client_certificate_the_broker_refuses(tmp_path: Path) -> None:
    alert = "ssl://127.0.0.1:9093/bootstrap: Receive failed: ssl/tls alert certificate unknown: SSL alert number 46"
    good = settings(
        **{
            "security.protocol": "SSL",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(make(tmp_path).keystore_pem),
        }
    )
    problem = classify(good, [alert])
    assert problem is not None and problem.kind == "client-certificate-rejected" and "CN=alice" in problem.explanation
    (tmp_path / "old").mkdir()
    old = make(tmp_path / "old", expired=True)
    expired = settings(
        **{"security.protocol": "SSL", "ssl.keystore.type": "PEM", "ssl.keystore.location": str(old.keystore_pem)}
    )
    problem = classify(expired, [alert])
    assert problem is not None and problem.kind == "client-certificate-expired" and "expired on" in problem.explanation


def test_a_closed_connection_tells_which_protocol_the_listener_wants() -> None:
    closed = (
        "FAIL [rdkafka#producer-1] [thrd:127.0.0.1:9093/bootstrap]: 127.0.0.1:9093/bootstrap: Disconnected: "
        "connection closed by peer: receive 0 after POLLIN (after 4ms in state {state})"
    )
    plaintext = settings()
    assert classify(plaintext, [closed.format(state="APIVERSION_QUERY")]) is None  # once may be chance
    problem = classify(plaintext, [closed.format(state="APIVERSION_QUERY")] * 2)
    assert problem is not None and problem.kind == "protocol" and "expects TLS" in problem.explanation
    problem = classify(plaintext, [closed.format(state="UP")] * 2)
    assert problem is not None and "expects SASL" in problem.explanation


def test_an_unreachable_broker_is_reported_only_at_the_deadline() -> None:
    refused = "ssl://127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused (after 0ms)"
    s = settings(**{"security.protocol": "SSL"})
    assert classify(s, [refused]) is None
    problem = classify(s, [refused], final=True)
    assert problem is not None and problem.kind == "unreachable" and problem.check == "bootstrap.servers"


def test_the_error_names_broker_protocol_mechanism_and_setting_without_secrets() -> None:
    s = settings(**SCRAM_SSL)
    line = (
        "FAIL [thrd:sasl_ssl://127.0.0.1:9093/bootstrap]: sasl_ssl://127.0.0.1:9093/bootstrap: SASL "
        "authentication error: Authentication failed due to invalid credentials with SASL mechanism SCRAM-SHA-512"
    )
    problem = classify(s, [line])
    assert problem is not None
    error = _error(s, problem, [line])
    assert str(error).startswith(
        "Kafka at 127.0.0.1:9093 (SASL_SSL, SASL mechanism SCRAM-SHA-512): SASL authentication failed"
    )
    assert "Check the username and password in sasl.jaas.config" in str(error)
    assert "secret-pw" not in str(error) and error.brokers == "127.0.0.1:9093" and error.kind == "authentication"
