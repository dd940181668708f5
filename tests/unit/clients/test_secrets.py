"""Which keys are secrets (Connect's PASSWORD keys, any prefix, `*.password`, rendered spellings), and redaction."""

from __future__ import annotations

import pytest

from sparklink.clients.secrets import HIDDEN, PASSWORD_KEYS, is_secret, redact


@pytest.mark.parametrize(
    "key",
    [
        *sorted(PASSWORD_KEYS),
        "producer.sasl.jaas.config",
        "consumer.override.ssl.key.password",
        "listener.name.scram-9094.scram-sha-512.sasl.jaas.config",
        "source.cluster.ssl.keystore.password",
        "connection.password",
        "password",
        "sasl.password",
        "ssl.key.pem",
        "sasl.oauthbearer.client.secret",
        "sasl_plain_password",
        "ssl_password",
    ],
)
def test_secret_keys(key: str) -> None:
    assert is_secret(key)


@pytest.mark.parametrize(
    "key", ["sasl.mechanism", "ssl.keystore.location", "ssl.truststore.type", "security.protocol", "passwords.count"]
)
def test_ordinary_keys(key: str) -> None:
    assert not is_secret(key)


def test_redact_hides_secret_values_only() -> None:
    assert redact({"sasl.jaas.config": "x", "acks": "all", "ssl.key.password": None}) == {
        "sasl.jaas.config": HIDDEN,
        "acks": "all",
        "ssl.key.password": None,
    }
