"""The listeners a local Kafka cluster serves, and the broker settings that serve them.

A `Listener` is what a Strimzi `Kafka` lists under `spec.kafka.listeners`: a name, a port, `tls` and an
authentication (`tls` for mutual TLS, `scram-sha-512`, `scram-sha-256`, `plain`, or none), one to one
(`Listener.strimzi`). Beyond Strimzi, one listener may enable several SASL mechanisms at once. On this
machine every node serves each listener on a free loopback port of its own; the Strimzi port names it in
the broker settings (`TLS-9093`), as Strimzi names its listeners.

A cluster whose listeners include any TLS or authentication (or that asks for internal TLS) is secured: its
controller listener (`CONTROLLER`) and the inter-broker listener (`REPLICATION-9091`, as in Strimzi) are SSL
with mutual TLS, each node presenting its broker certificate from the cluster CA; mutual-TLS client listeners
trust the clients CA. Callers: `kafka.KafkaCluster` (settings), which the operator's local host lays out from
a Strimzi Kafka's listeners.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["REPLICATION", "Authentication", "Listener", "TlsFiles", "check", "listener_settings"]

REPLICATION = "REPLICATION-9091"
CONTROLLER = "CONTROLLER"
_NAME = re.compile(r"^[a-z0-9]{1,11}$")
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


class Authentication(enum.StrEnum):
    TLS = "tls"
    SCRAM_SHA_512 = "scram-sha-512"
    SCRAM_SHA_256 = "scram-sha-256"
    PLAIN = "plain"

    @property
    def sasl_mechanism(self) -> str | None:
        return None if self is Authentication.TLS else self.value.upper()


@dataclass(frozen=True)
class Listener:
    """A client listener. `authentication` is empty for none; strings are accepted and normalised."""

    name: str
    port: int
    tls: bool = False
    authentication: tuple[Authentication, ...] = field(default=())

    def __post_init__(self) -> None:
        raw: Any = self.authentication
        items = [raw] if isinstance(raw, str) else list(raw)
        try:
            auth = tuple(dict.fromkeys(Authentication(str(a).lower()) for a in items if str(a).lower() != "none"))
        except ValueError:
            raise ValueError(
                f"listener {self.name!r}: authentication must be tls, scram-sha-512, scram-sha-256 or plain, "
                f"not {raw!r}"
            ) from None
        object.__setattr__(self, "authentication", auth)
        if not _NAME.match(self.name):
            raise ValueError(f"listener name {self.name!r} must be 1-11 lower-case letters or digits (as in Strimzi)")
        if not 9092 <= self.port <= 65535:
            raise ValueError(f"listener {self.name!r}: port {self.port} must be 9092 or higher (9090, 9091: internal)")
        if Authentication.TLS in auth and (len(auth) > 1 or not self.tls):
            raise ValueError(f"listener {self.name!r}: tls authentication needs tls: true and no SASL mechanism")

    @classmethod
    def strimzi(cls, name: str, port: int, tls: bool, authentication_type: str | None) -> Listener:
        """A Strimzi listener (`spec.kafka.listeners[]`: name, port, tls, authentication.type)."""
        try:
            auth = (Authentication(authentication_type.lower()),) if authentication_type else ()
        except ValueError:
            raise ValueError(
                f"listener {name!r}: local clusters serve authentication tls, scram-sha-512, scram-sha-256 or plain, "
                f"not {authentication_type!r}"
            ) from None
        return cls(name, port, tls, auth)

    @property
    def config_name(self) -> str:
        """The broker's name for it (`TLS-9093`), as Strimzi names listeners."""
        return f"{self.name.upper()}-{self.port}"

    @property
    def mutual_tls(self) -> bool:
        return Authentication.TLS in self.authentication

    @property
    def sasl_mechanisms(self) -> tuple[str, ...]:
        return tuple(m for a in self.authentication if (m := a.sasl_mechanism))

    @property
    def security_protocol(self) -> str:
        sasl = bool(self.sasl_mechanisms)
        return {(False, False): "PLAINTEXT", (True, False): "SSL", (False, True): "SASL_PLAINTEXT"}.get(
            (self.tls, sasl), "SASL_SSL"
        )

    @property
    def secured(self) -> bool:
        return self.tls or bool(self.authentication)


def check(listeners: Sequence[Listener]) -> None:
    """Names and ports must be unique (as Strimzi validates them)."""
    for what, values in (("name", [lst.name for lst in listeners]), ("port", [str(lst.port) for lst in listeners])):
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:
            raise ValueError(f"listener {what}s must be unique: {', '.join(repeated)}")


@dataclass(frozen=True)
class TlsFiles:
    """A node's TLS files: its key store (key + chain, PEM), the cluster CA (trusted by the nodes) and the
    clients CA (trusted by mutual-TLS client listeners)."""

    keystore: Path
    cluster_ca: Path
    clients_ca: Path


def listener_settings(
    roles: str,
    ports: Mapping[str, int],
    controller_port: int,
    replication_port: int,
    listeners: Sequence[Listener],
    tls: TlsFiles | None,
    plain_users: Mapping[str, str],
    internal_tls: bool = False,
) -> dict[str, str]:
    """The listener part of a node's settings (`listeners`, protocol map, TLS and SASL) for `listeners`;
    `ports` maps each listener's name to this node's port. `tls` is needed when any listener is secured, or
    with `internal_tls` (the nodes talk over mutual TLS whatever the client listeners are, as in Strimzi)."""
    secured = internal_tls or any(lst.secured for lst in listeners)
    internal = "SSL" if secured else "PLAINTEXT"
    bound, advertised, protocols = [], [], [f"{CONTROLLER}:{internal}"]
    broker, controller = "broker" in roles, "controller" in roles
    if controller:
        bound.append(f"{CONTROLLER}://127.0.0.1:{controller_port}")
    if broker:
        protocols.append(f"{REPLICATION}:{internal}")
        bound.append(f"{REPLICATION}://127.0.0.1:{replication_port}")
        advertised.append(f"{REPLICATION}://127.0.0.1:{replication_port}")
    out: dict[str, str] = {}
    for lst in listeners:
        protocols.append(f"{lst.config_name}:{lst.security_protocol}")
        if not broker:
            continue
        address = f"{lst.config_name}://127.0.0.1:{ports[lst.name]}"
        bound.append(address)
        advertised.append(address)
        out.update(_client_listener(lst, tls, plain_users))
    settings = {"listeners": ",".join(bound), "listener.security.protocol.map": ",".join(protocols)}
    if broker:
        settings["advertised.listeners"] = ",".join(advertised)
        settings["inter.broker.listener.name"] = REPLICATION
    if secured:
        if tls is None:
            raise ValueError("a secured cluster needs its nodes' TLS files")
        settings.update(
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(tls.keystore),
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(tls.cluster_ca),
                # The nodes authenticate each other with their broker certificates (mutual TLS).
                f"listener.name.{CONTROLLER.lower()}.ssl.client.auth": "required",
                f"listener.name.{REPLICATION.lower()}.ssl.client.auth": "required",
            }
        )
    return {**settings, **out}


def _client_listener(lst: Listener, tls: TlsFiles | None, plain_users: Mapping[str, str]) -> dict[str, str]:
    prefix = f"listener.name.{lst.config_name.lower()}."
    out: dict[str, str] = {}
    if lst.mutual_tls and tls is not None:
        out[prefix + "ssl.client.auth"] = "required"
        out[prefix + "ssl.truststore.type"] = "PEM"
        out[prefix + "ssl.truststore.location"] = str(tls.clients_ca)
    if lst.sasl_mechanisms:
        out[prefix + "sasl.enabled.mechanisms"] = ",".join(lst.sasl_mechanisms)
    for mechanism in lst.sasl_mechanisms:
        if mechanism == "PLAIN":
            users = " ".join(f'user_{name}="{_quote(pw)}"' for name, pw in sorted(plain_users.items()))
            jaas = f"{_PLAIN_MODULE} required {users};" if users else f"{_PLAIN_MODULE} required;"
        else:
            jaas = f"{_SCRAM_MODULE} required;"  # SCRAM credentials live in the cluster metadata
        out[f"{prefix}{mechanism.lower()}.sasl.jaas.config"] = jaas
    return out


def scram_mechanisms(listeners: Iterable[Listener]) -> list[str]:
    """The SCRAM mechanisms some listener enables (users get credentials for each)."""
    return sorted({m for lst in listeners for m in lst.sasl_mechanisms if m.startswith("SCRAM-")})


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')
