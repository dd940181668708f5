"""Which settings are secrets, and how to show a mapping or a text without them: the one place that decides.

Connect types these keys PASSWORD (Kafka 4.3's producer, consumer and admin ConfigDefs) and prints them as
`[hidden]` in logs and validate answers; so does sparklink, under any prefix (`producer.`,
`consumer.override.`, `listener.name.<l>.`, `source.cluster.`, ...). Also hidden: a key a plugin declares
with type PASSWORD (pass its declared type), any key ending in `.password` or `.secret` (e.g. a JDBC
`connection.password`), a converter's `basic.auth.user.info`, and the spellings the rendered librdkafka
and kafka-python settings use for the same secrets. Callers: the worker's settings, validate answers,
statuses and logs, the CLI, the operator.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["HIDDEN", "PASSWORD_KEYS", "is_secret", "redact", "scrub", "secret_values"]

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
# The same secrets as librdkafka and kafka-python spell them (rendered settings may be logged too), and the
# Schema Registry credentials of Confluent's converters (`value.converter.basic.auth.user.info`, PASSWORD there).
_OTHER_KEYS = frozenset(
    {
        "sasl.password",
        "sasl.oauthbearer.client.secret",
        "ssl.key.pem",
        "ssl_password",
        "sasl_plain_password",
        "basic.auth.user.info",
    }
)
# A value shorter than this is not searched for in free text: it would blank out ordinary words.
_SCRUB_MIN = 4


def is_secret(key: str, declared_type: str | None = None) -> bool:
    """True for a key whose value must never be shown, with or without a prefix; `declared_type` is the
    key's type where a ConfigDef declares it (PASSWORD is always secret)."""
    if declared_type == "PASSWORD":
        return True
    name = key.strip().lower()
    if name in ("password", "secret") or name.endswith((".password", "_password", ".secret")):
        return True
    return any(name == k or name.endswith("." + k) for k in PASSWORD_KEYS | _OTHER_KEYS)


def redact(settings: Mapping[str, Any], types: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A copy of `settings` with every secret value replaced by `[hidden]` (None stays None); `types` gives
    declared types (a plugin's PASSWORD keys)."""
    types = types or {}
    return {k: (HIDDEN if v is not None and is_secret(str(k), types.get(str(k))) else v) for k, v in settings.items()}


def secret_values(settings: Mapping[str, Any], types: Mapping[str, str] | None = None) -> set[str]:
    """The values of the secret keys in `settings`, long enough to look for in free text."""
    types = types or {}
    return {
        str(v)
        for k, v in settings.items()
        if v is not None and len(str(v)) >= _SCRUB_MIN and is_secret(str(k), types.get(str(k)))
    }


def scrub(text: str, values: Iterable[str]) -> str:
    """`text` with each of `values` (secrets) replaced by `[hidden]`, longest first; for error messages and
    traces that may quote a secret they were given."""
    for value in sorted((v for v in values if len(v) >= _SCRUB_MIN), key=len, reverse=True):
        if value in text:
            text = text.replace(value, HIDDEN)
    return text
