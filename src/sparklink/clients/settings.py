"""The one entry point for a Kafka client's settings: bootstrap servers, security and client keys, rendered
for each client library sparklink uses.

`KafkaClientSettings` holds what one client needs (from worker properties through `connect`, from a
`--command-config` file, or built by the platform for its local clusters) and renders it:
`.librdkafka()` for confluent-kafka (its logs go to the `sparklink.rdkafka` logger), `.java()` for Java
clients, `.spark_options()` for Spark's Kafka source and sink (`kafka.`-prefixed), `.kafka_python()` for
the group membership. `client_config()` is the plaintext-only helper the worker's older callers use.
Callers: the worker, plugins, MirrorMaker 2, the roller, the platform, the CLI.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import javaproperties

from sparklink.clients import kafka_python, librdkafka
from sparklink.clients.errors import ClientSettingsError
from sparklink.clients.secrets import redact
from sparklink.clients.security import ClientSecurity, as_text, is_security_key

__all__ = ["KafkaClientSettings", "client_config", "properties_text", "read_properties"]

_rdkafka_log = logging.getLogger("sparklink.rdkafka")
# librdkafka reports transient states (coordinator loading, a broker restarting, connection refused)
# that it retries itself; failures that matter surface as exceptions from the client calls. Raise
# the level at run time through /admin/loggers/sparklink.rdkafka when debugging a connection.
_rdkafka_log.setLevel(logging.CRITICAL)

# Java client settings librdkafka knows under the same name and meaning; other client keys reach only the
# Java clients (librdkafka refuses names it does not know).
RDKAFKA_SAME_NAME = frozenset(
    {
        "acks",
        "auto.commit.interval.ms",
        "batch.size",
        "client.id",
        "client.rack",
        "compression.type",
        "connections.max.idle.ms",
        "delivery.timeout.ms",
        "enable.auto.commit",
        "enable.idempotence",
        "fetch.max.bytes",
        "fetch.min.bytes",
        "group.instance.id",
        "heartbeat.interval.ms",
        "isolation.level",
        "linger.ms",
        "max.in.flight.requests.per.connection",
        "max.partition.fetch.bytes",
        "max.poll.interval.ms",
        "metadata.max.age.ms",
        "reconnect.backoff.max.ms",
        "reconnect.backoff.ms",
        "request.timeout.ms",
        "retry.backoff.max.ms",
        "retry.backoff.ms",
        "session.timeout.ms",
        "socket.connection.setup.timeout.ms",
        "transaction.timeout.ms",
        "transactional.id",
    }
)
# Spark's Kafka source and sink manage these themselves and refuse them as options.
SPARK_MANAGED = frozenset(
    {
        "key.serializer",
        "value.serializer",
        "key.deserializer",
        "value.deserializer",
        "auto.offset.reset",
        "enable.auto.commit",
    }
)


@dataclass(frozen=True)
class KafkaClientSettings:
    """What one Kafka client needs. `client` holds the client-kind-specific Java settings (e.g. from
    `producer.*`), security excluded; renderers add the security settings in each library's words."""

    bootstrap_servers: str
    security: ClientSecurity = field(default_factory=ClientSecurity)
    client: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_properties(cls, props: Mapping[str, object], bootstrap_servers: str | None = None) -> KafkaClientSettings:
        """From Java client properties (a `--command-config` file, a prefix of worker properties).
        `bootstrap_servers` wins over the properties' own `bootstrap.servers`."""
        bootstrap = bootstrap_servers or as_text(props.get("bootstrap.servers") or "")
        if not bootstrap:
            raise ClientSettingsError("bootstrap.servers", "bootstrap.servers is not set (host:port[,host:port...])")
        client = tuple(
            sorted(
                (k, as_text(v))
                for k, v in props.items()
                if v is not None and k != "bootstrap.servers" and not is_security_key(k)
            )
        )
        return cls(bootstrap, ClientSecurity.from_properties(props), client)

    # ------------------------------------------------------------------------------------------ renderers
    def librdkafka(self, **extra: Any) -> dict[str, Any]:
        """confluent-kafka settings: bootstrap servers, security, same-name client keys, then `extra`;
        librdkafka's logs routed to Python logging instead of stderr."""
        _no_security_in(extra)
        same = {k: v for k, v in self.client if k in RDKAFKA_SAME_NAME}
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "logger": _rdkafka_log,
            **self._rdkafka_security,
            **same,
            **extra,
        }

    def java(self, **extra: Any) -> dict[str, str]:
        """Java client properties: the keys as Connect takes them, security unchanged."""
        _no_security_in(extra)
        return {
            "bootstrap.servers": self.bootstrap_servers,
            **dict(self.client),
            **self.security.java_properties(),
            **{k: str(v) for k, v in extra.items()},
        }

    def spark_options(self, **extra: Any) -> dict[str, str]:
        """Spark's Kafka source/sink options: every Java key prefixed `kafka.`, less those Spark manages."""
        return {f"kafka.{k}": v for k, v in self.java(**extra).items() if k not in SPARK_MANAGED}

    def kafka_python(self, **extra: Any) -> dict[str, Any]:
        """kafka-python settings (the group membership client)."""
        _no_security_in(extra)
        return {"bootstrap_servers": self.bootstrap_servers, **kafka_python.render(self.security), **extra}

    def redacted(self) -> dict[str, str]:
        """The Java properties with secrets as `[hidden]`, for logs and messages."""
        return redact(self.java())

    def describe(self) -> str:
        """`127.0.0.1:9093 over SASL_SSL/SCRAM-SHA-512`: for messages; never a secret."""
        return f"{self.bootstrap_servers} over {self.security.describe()}"

    @functools.cached_property
    def _rdkafka_security(self) -> dict[str, str]:
        # Rendered once per settings object: JKS conversion and PEM reads happen at the first client's start.
        return librdkafka.render(self.security)


def _no_security_in(extra: Mapping[str, Any]) -> None:
    clash = sorted(k for k in extra if is_security_key(k.replace("_", ".")) or k == "bootstrap.servers")
    if clash:
        raise ValueError(f"security settings come from the ClientSecurity model, not from extra keys: {clash}")


def read_properties(path: str | Path) -> dict[str, str]:
    """A Java properties file (`--command-config`), read as java.util.Properties reads it (escapes, line
    continuations, `#`/`!` comments, `=`/`:` separators)."""
    with open(path, encoding="utf-8") as source:
        return dict(javaproperties.load(source))


def properties_text(props: Mapping[str, str]) -> str:
    """A Java properties file's text, as java.util.Properties.store writes it: one `key=value` line per
    setting, sorted, with `=`, `:`, `#`, `!`, backslashes, line breaks and other control characters escaped
    (non-ASCII as `\\uXXXX`), so no key or value can start a line of its own. Read back by `read_properties`
    (and the worker's reader)."""
    return javaproperties.dumps(dict(sorted(props.items())), timestamp=False)


def client_config(bootstrap_servers: str, **extra: Any) -> dict[str, Any]:
    """Plaintext librdkafka settings: bootstrap servers plus librdkafka's logs routed to Python logging.
    Secured clusters: use `KafkaClientSettings(...).librdkafka(**extra)`."""
    return {"bootstrap.servers": bootstrap_servers, "logger": _rdkafka_log, **extra}
