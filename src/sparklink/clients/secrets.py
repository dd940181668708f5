"""Which client settings are secrets, and how to show a mapping without them.

Connect types these keys PASSWORD (Kafka 4.3's producer, consumer and admin ConfigDefs) and prints them as
`[hidden]` in logs and validate answers; so does sparklink, under any prefix (`producer.`,
`consumer.override.`, `listener.name.<l>.`, `source.cluster.`, ...). Also hidden: any key ending in
`.password` (e.g. a JDBC `connection.password`), and the spellings the rendered librdkafka and kafka-python
settings use for the same secrets. Callers: the worker's validate answers and logs, the CLI, the operator.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["HIDDEN", "PASSWORD_KEYS", "is_secret", "redact"]

HIDDEN = "[hidden]"

# The PASSWORD-typed keys of Kafka 4.3.1's ProducerConfig, ConsumerConfig and AdminClientConfig.
PASSWORD_KEYS = frozenset(
    {
        "sasl.jaas.config",
        "sasl.oauthbearer.assertion.private.key.passphrase",
        "sasl.oauthbearer.client.credentials.client.secret",
        "ssl.key.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.keystore.password",
        "ssl.truststore.certificates",
        "ssl.truststore.password",
    }
)
# The same secrets as librdkafka and kafka-python spell them (rendered settings may be logged too).
_RENDERED_KEYS = frozenset(
    {
        "sasl.password",
        "sasl.oauthbearer.client.secret",
        "ssl.key.pem",
        "ssl_password",
        "sasl_plain_password",
    }
)


def is_secret(key: str) -> bool:
    """True for a key whose value must never be shown, with or without a prefix."""
    name = key.strip().lower()
    if name == "password" or name.endswith((".password", "_password")):
        return True
    return any(name == k or name.endswith("." + k) for k in PASSWORD_KEYS | _RENDERED_KEYS)


def redact(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `settings` with every secret value replaced by `[hidden]` (None stays None)."""
    return {k: (HIDDEN if v is not None and is_secret(str(k)) else v) for k, v in settings.items()}
