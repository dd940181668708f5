"""The client-security model: Connect's (Kafka's Java client) settings, parsed and checked once.

`ClientSecurity.from_properties(props)` reads `security.protocol`, the `ssl.*` stores and
`ssl.endpoint.identification.algorithm`, `sasl.mechanism` and `sasl.jaas.config` (plus the OAUTHBEARER
client-credentials settings) into a frozen value, refusing what no client could use with an error that
names the key and what to set. As in Java, `ssl.*` settings count only for SSL and SASL_SSL and `sasl.*`
only for the SASL protocols; the others are kept for the Java clients and listed in `unused`.
The renderers (`librdkafka`, `kafka_python`, `java_properties`) turn it into each client's settings.
Caller: `settings.KafkaClientSettings`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from sparklink.clients import jaas, stores
from sparklink.clients.errors import ClientSettingsError
from sparklink.clients.stores import KeyStore, TrustStore

__all__ = [
    "ClientSecurity",
    "OAuthClientCredentials",
    "SaslMechanism",
    "SaslSettings",
    "SecurityProtocol",
    "TlsSettings",
    "is_security_key",
]


class SecurityProtocol(enum.StrEnum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


class SaslMechanism(enum.StrEnum):
    PLAIN = "PLAIN"
    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"
    OAUTHBEARER = "OAUTHBEARER"

    @property
    def login_module(self) -> str:
        return LOGIN_MODULES[self]


LOGIN_MODULES = {
    SaslMechanism.PLAIN: "org.apache.kafka.common.security.plain.PlainLoginModule",
    SaslMechanism.SCRAM_SHA_256: "org.apache.kafka.common.security.scram.ScramLoginModule",
    SaslMechanism.SCRAM_SHA_512: "org.apache.kafka.common.security.scram.ScramLoginModule",
    SaslMechanism.OAUTHBEARER: "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}
OAUTH_CLIENT_ID = "sasl.oauthbearer.client.credentials.client.id"
OAUTH_CLIENT_SECRET = "sasl.oauthbearer.client.credentials.client.secret"
OAUTH_TOKEN_ENDPOINT = "sasl.oauthbearer.token.endpoint.url"
OAUTH_SCOPE = "sasl.oauthbearer.scope"


def as_text(value: object) -> str:
    """A setting's value as Java reads it: lists comma-joined, the rest as text, trimmed."""
    if isinstance(value, list | tuple):
        return ",".join(str(v).strip() for v in value)
    return str(value).strip()


def is_security_key(key: str) -> bool:
    """The keys this model reads (and the Java clients get unchanged): security.protocol, ssl.*, sasl.*."""
    return key == "security.protocol" or key.startswith(("ssl.", "sasl."))


@dataclass(frozen=True)
class TlsSettings:
    truststore: TrustStore | None  # None: the system's trusted CAs
    keystore: KeyStore | None  # None: no client certificate
    verify_hostname: bool = True  # ssl.endpoint.identification.algorithm=https (Java's default)


@dataclass(frozen=True)
class OAuthClientCredentials:
    token_endpoint: str
    client_id: str
    client_secret: str = field(repr=False)
    scope: str | None = None
    extensions: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class SaslSettings:
    mechanism: SaslMechanism
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    oauth: OAuthClientCredentials | None = None


@dataclass(frozen=True)
class ClientSecurity:
    """How a client authenticates and encrypts; PLAINTEXT when built without arguments."""

    protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    tls: TlsSettings | None = None
    sasl: SaslSettings | None = None
    # The security settings as given (trimmed), for Java clients, which read them unchanged.
    java: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    unused: tuple[str, ...] = ()  # settings the protocol ignores (ssl.* under SASL_PLAINTEXT, ...)

    @classmethod
    def from_properties(cls, props: Mapping[str, object]) -> ClientSecurity:
        """Read the security settings among `props` (other keys are ignored)."""
        given = {k: as_text(v) for k, v in props.items() if v is not None and is_security_key(k)}
        raw = given.get("security.protocol") or "PLAINTEXT"
        try:
            protocol = SecurityProtocol(raw.upper())
        except ValueError:
            raise ClientSettingsError(
                "security.protocol",
                f"security.protocol must be one of {', '.join(SecurityProtocol)}, not {raw!r}",
            ) from None
        tls = _tls(given) if protocol.tls else None
        sasl = _sasl(given) if protocol.sasl else None
        unused = tuple(
            sorted(
                k
                for k, v in given.items()
                if v and ((k.startswith("ssl.") and not protocol.tls) or (k.startswith("sasl.") and not protocol.sasl))
            )
        )
        return cls(protocol, tls, sasl, tuple(sorted(given.items())), unused)

    @property
    def mechanism(self) -> str | None:
        return self.sasl.mechanism.value if self.sasl else None

    def describe(self) -> str:
        """`SASL_SSL/SCRAM-SHA-512`, `SSL (client certificate)`: for messages; never a secret."""
        text = self.protocol.value + (f"/{self.sasl.mechanism.value}" if self.sasl else "")
        return text + (" (client certificate)" if self.tls and self.tls.keystore else "")

    def java_properties(self) -> dict[str, str]:
        """The settings for a Java client (Spark's Kafka source and sink, MirrorMaker's Java clients)."""
        return dict(self.java)


def _tls(props: Mapping[str, str]) -> TlsSettings:
    algorithm = props.get("ssl.endpoint.identification.algorithm", "https").lower()
    if algorithm not in ("https", ""):
        raise ClientSettingsError(
            "ssl.endpoint.identification.algorithm",
            "ssl.endpoint.identification.algorithm must be https (check the broker's host name, the default) or "
            f"empty (do not), not {algorithm!r}",
        )
    return TlsSettings(stores.truststore_from(props), stores.keystore_from(props), algorithm == "https")


def _sasl(props: Mapping[str, str]) -> SaslSettings:
    protocol = props.get("security.protocol", "").upper()
    raw = props.get("sasl.mechanism") or ""
    if not raw or raw.upper() == "GSSAPI":
        how = "is not set, so Kafka's clients would use" if not raw else "is"
        raise ClientSettingsError(
            "sasl.mechanism",
            f"sasl.mechanism {how} GSSAPI (Kerberos), which sparklink does not support; set sasl.mechanism to "
            f"{', '.join(SaslMechanism)}",
        )
    try:
        mechanism = SaslMechanism(raw.upper())
    except ValueError:
        raise ClientSettingsError(
            "sasl.mechanism", f"sasl.mechanism must be one of {', '.join(SaslMechanism)}, not {raw!r}"
        ) from None
    text = props.get("sasl.jaas.config")
    example = f'{mechanism.login_module} required username="..." password="...";'
    if mechanism is SaslMechanism.OAUTHBEARER:
        example = f'{mechanism.login_module} required clientId="..." clientSecret="...";'
    if not text:
        raise ClientSettingsError(
            "sasl.jaas.config", f"security.protocol={protocol} needs sasl.jaas.config, e.g. {example}"
        )
    try:
        entry = jaas.parse(text)
    except jaas.JaasSyntaxError as exc:
        raise ClientSettingsError(
            "sasl.jaas.config", f"sasl.jaas.config cannot be read: {exc}. Expected: {example}"
        ) from None
    if entry.login_module != mechanism.login_module:
        raise ClientSettingsError(
            "sasl.jaas.config",
            f"sasl.mechanism={mechanism} needs {mechanism.login_module} in sasl.jaas.config, not {entry.login_module}",
        )
    if mechanism is SaslMechanism.OAUTHBEARER:
        return SaslSettings(mechanism, oauth=_oauth(props, entry.options))
    for option in ("username", "password"):
        if not entry.options.get(option):
            raise ClientSettingsError(
                "sasl.jaas.config", f"sasl.jaas.config has no {option} option for {mechanism}; expected: {example}"
            )
    return SaslSettings(mechanism, entry.options["username"], entry.options["password"])


def _oauth(props: Mapping[str, str], options: Mapping[str, str]) -> OAuthClientCredentials:
    endpoint = props.get(OAUTH_TOKEN_ENDPOINT)
    if not endpoint:
        raise ClientSettingsError(
            OAUTH_TOKEN_ENDPOINT,
            f"sasl.mechanism=OAUTHBEARER needs {OAUTH_TOKEN_ENDPOINT} (the identity provider's token URL); "
            "sparklink supports the client-credentials grant only",
        )
    client_id = props.get(OAUTH_CLIENT_ID) or options.get("clientId")
    secret = props.get(OAUTH_CLIENT_SECRET) or options.get("clientSecret")
    if not client_id or not secret:
        missing = "clientId" if not client_id else "clientSecret"
        key = OAUTH_CLIENT_ID if not client_id else OAUTH_CLIENT_SECRET
        raise ClientSettingsError(
            "sasl.jaas.config",
            f"OAUTHBEARER needs a client id and secret: set {key} or the {missing} option in sasl.jaas.config",
        )
    extensions = tuple(sorted((k[len("extension_") :], v) for k, v in options.items() if k.startswith("extension_")))
    scope = props.get(OAUTH_SCOPE) or options.get("scope") or None
    return OAuthClientCredentials(endpoint, client_id, secret, scope, extensions)
