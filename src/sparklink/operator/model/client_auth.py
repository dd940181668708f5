"""How a Connect worker group reaches its Kafka: Strimzi's `spec.tls` and `spec.authentication` of a
KafkaConnect (and of KafkaMirrorMaker2's `spec.target`), read, checked, and rendered as Strimzi's
KafkaConnectConfigurationBuilder renders them.

- `tls.trustedCertificates` (`secretName` with `certificate` or a glob `pattern`) -> security.protocol SSL
  and a PEM trust store of those certificates;
- `authentication` `tls` (`certificateAndKey`) -> a PEM key store; `scram-sha-512`, `scram-sha-256` and
  `plain` (`username`, `passwordSecret`) -> SASL_SSL / SASL_PLAINTEXT, `sasl.mechanism` and
  `sasl.jaas.config`;
each setting written for the worker and again under `producer.`, `consumer.` and `admin.`.

`ClientAuth.from_spec` reads the fields (Strimzi's InvalidResourceException messages); `resolve` reads the
Secrets through a reader the reconciler gives (InvalidConfigurationException: "Secret x not found in
namespace y", "Items with key(s) [k] are missing in Secret x") into `Material`: the file contents a local
worker reads (never shown: repr is hidden) and a digest, so that a changed Secret restarts the workers.
`local_settings` renders settings that point at those files (written 0600 by the local host) and take the
password through a directory config provider, so no secret is in worker.properties; `kubernetes_settings`
renders Strimzi's `${strimzisecrets:<namespace>/<secret>:<key>}` placeholders for the key and the password
and the (public) trusted certificates inline. Pure; callers: `model.workers`, `reconcile.connect_workers`,
the hosts.
"""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sparklink.operator.model.conditions import REASON_INVALID_RESOURCE, ReconcileFailure

REASON_INVALID_CONFIGURATION = "InvalidConfigurationException"
PREFIXES = ("", "producer.", "consumer.", "admin.")
MECHANISMS = {"scram-sha-512": "SCRAM-SHA-512", "scram-sha-256": "SCRAM-SHA-256", "plain": "PLAIN"}
LOGIN_MODULES = {
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
}
# The files a local worker reads, in its credentials directory.
TRUSTED_FILE = "trusted-certificates.crt"
KEYSTORE_FILE = "client.pem"
PASSWORD_FILE = "sasl.password"
LOCAL_PROVIDER = "sparklinkcredentials"
KUBERNETES_PROVIDER = "strimzisecrets"
_PROVIDER_CLASSES = {
    LOCAL_PROVIDER: "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
    KUBERNETES_PROVIDER: "io.strimzi.kafka.KubernetesSecretConfigProvider",
}

SecretReader = Callable[[str], Mapping[str, bytes] | None]  # Secret name -> its decoded data (None: no such Secret)


@dataclass(frozen=True)
class CertSource:
    secret: str
    certificate: str | None = None
    pattern: str | None = None


@dataclass(frozen=True)
class SecretKey:
    secret: str
    key: str


@dataclass(frozen=True)
class ClientAuth:
    trusted: tuple[CertSource, ...] | None = None  # None: no `spec.tls`
    certificate: SecretKey | None = None  # tls authentication
    private_key: SecretKey | None = None
    mechanism: str | None = None  # SASL
    username: str | None = None
    password: SecretKey | None = None

    @property
    def protocol(self) -> str:
        tls = self.trusted is not None
        if self.mechanism:
            return "SASL_SSL" if tls else "SASL_PLAINTEXT"
        return "SSL" if tls else "PLAINTEXT"

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], where: str) -> ClientAuth | None:
        """`spec.tls` and `spec.authentication` at `where`; None when neither is set (PLAINTEXT)."""
        tls, auth = spec.get("tls"), spec.get("authentication")
        if tls is None and auth is None:
            return None
        trusted = _trusted(tls, where) if tls is not None else None
        if auth is None:
            return cls(trusted)
        kind = str(auth.get("type", "")) if isinstance(auth, Mapping) else ""
        if kind == "tls":
            pair = auth.get("certificateAndKey")
            if not isinstance(pair, Mapping):
                raise _invalid("TLS Client authentication selected, but no certificate and key configured.")
            secret = _text(pair, "secretName", f"{where}.authentication.certificateAndKey")
            cert = _text(pair, "certificate", f"{where}.authentication.certificateAndKey")
            key = _text(pair, "key", f"{where}.authentication.certificateAndKey")
            return cls(trusted, SecretKey(secret, cert), SecretKey(secret, key))
        if kind in MECHANISMS:
            username, source = auth.get("username"), auth.get("passwordSecret")
            if not username or not isinstance(source, Mapping):
                name = "PLAIN" if kind == "plain" else kind.upper()
                raise _invalid(f"{name} authentication selected, but username or password configuration is missing.")
            secret = _text(source, "secretName", f"{where}.authentication.passwordSecret")
            password = _text(source, "password", f"{where}.authentication.passwordSecret")
            return cls(
                trusted, mechanism=MECHANISMS[kind], username=str(username), password=SecretKey(secret, password)
            )
        raise _invalid(
            f"{where}.authentication type '{kind}' is not supported by sparklink: use tls, scram-sha-512, "
            "scram-sha-256 or plain"
        )

    def fields(self) -> list[tuple[str, str]]:
        """Everything of the resource's own text that the settings hold (for the control-character check)."""
        out = [("authentication.username", self.username or "")]
        for ref in (self.certificate, self.private_key, self.password):
            if ref is not None:
                out += [("authentication secret name", ref.secret), ("authentication secret key", ref.key)]
        return out

    def resolve(self, read: SecretReader, namespace: str) -> Material:
        """The Secrets' material, checked as Strimzi checks it; ReconcileFailure naming what is missing."""
        cache: dict[str, Mapping[str, bytes]] = {}

        def secret(name: str, *items: str) -> Mapping[str, bytes]:
            if name not in cache:
                data = read(name)
                if data is None:
                    raise _missing(f"Secret {name} not found in namespace {namespace}")
                cache[name] = data
            absent = [item for item in items if item not in cache[name]]
            if absent:
                raise _missing(f"Items with key(s) [{', '.join(absent)}] are missing in Secret {name}")
            return cache[name]

        files: dict[str, bytes] = {}
        if self.trusted:
            pems = []
            for source in self.trusted:
                if source.certificate is not None:
                    pems.append(secret(source.secret, source.certificate)[source.certificate])
                else:
                    data = secret(source.secret)
                    pems += [data[k] for k in sorted(data) if fnmatch.fnmatchcase(k, source.pattern or "")]
            files[TRUSTED_FILE] = b"".join(p if p.endswith(b"\n") else p + b"\n" for p in pems)
        if self.certificate is not None and self.private_key is not None:
            data = secret(self.certificate.secret, self.certificate.key, self.private_key.key)
            key, cert = data[self.private_key.key], data[self.certificate.key]
            files[KEYSTORE_FILE] = key + (b"" if key.endswith(b"\n") else b"\n") + cert
        if self.password is not None:
            files[PASSWORD_FILE] = secret(self.password.secret, self.password.key)[self.password.key]
        return Material(files)

    def local_settings(self, directory: str, user_providers: str | None) -> dict[str, str]:
        """Settings that read the material from `directory` (the files `Material.files` names)."""
        password = f"${{{LOCAL_PROVIDER}:{directory}:{PASSWORD_FILE}}}"
        extra = {f"config.providers.{LOCAL_PROVIDER}.param.allowed.paths": directory}
        return self._render(self._own(self._local_tls(directory), password), LOCAL_PROVIDER, user_providers, extra)

    def kubernetes_settings(self, namespace: str, user_providers: str | None, material: Material) -> dict[str, str]:
        """Strimzi's placeholders for the key and the password, resolved by the Kubernetes Secret provider in
        the pod, so no secret is in the ConfigMap; the trusted certificates (public) inline as PEM text."""
        password = _secret_ref(namespace, self.password.secret, self.password.key) if self.password else ""
        own = self._own(self._kubernetes_tls(namespace, material), password)
        return self._render(own, KUBERNETES_PROVIDER, user_providers, {})

    def cluster_settings(
        self, prefix: str, directory: str | None, namespace: str, material: Material
    ) -> dict[str, str]:
        """One MirrorMaker 2 cluster's settings in a connector's config, as Strimzi's
        KafkaMirrorMaker2Connectors writes them: each client setting once, under `prefix` (`source.cluster.`,
        `target.cluster.`). With `directory` (a local worker) the files there and the local provider's
        placeholder for the password, else the Kubernetes Secret provider's placeholders; either provider is
        declared by the worker (`provider_settings`)."""
        if directory is not None:
            password = f"${{{LOCAL_PROVIDER}:{directory}:{PASSWORD_FILE}}}"
            own = self._own(self._local_tls(directory), password)
        else:
            password = _secret_ref(namespace, self.password.secret, self.password.key) if self.password else ""
            own = self._own(self._kubernetes_tls(namespace, material), password)
        return {prefix + key: value for key, value in own.items()}

    @property
    def needs_provider(self) -> bool:
        """Whether its settings hold a placeholder that a worker-level config provider resolves."""
        return self.mechanism is not None or self.certificate is not None

    def _local_tls(self, directory: str) -> dict[str, str]:
        tls: dict[str, str] = {}
        if self.trusted:
            tls |= {"ssl.truststore.type": "PEM", "ssl.truststore.location": f"{directory}/{TRUSTED_FILE}"}
        if self.certificate is not None:
            tls |= {"ssl.keystore.type": "PEM", "ssl.keystore.location": f"{directory}/{KEYSTORE_FILE}"}
        return tls

    def _kubernetes_tls(self, namespace: str, material: Material) -> dict[str, str]:
        tls: dict[str, str] = {}
        if self.trusted:
            pem = material.files.get(TRUSTED_FILE, b"").decode()
            tls |= {"ssl.truststore.type": "PEM", "ssl.truststore.certificates": pem}
        if self.certificate is not None and self.private_key is not None:
            tls |= {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.certificate.chain": _secret_ref(namespace, self.certificate.secret, self.certificate.key),
                "ssl.keystore.key": _secret_ref(namespace, self.private_key.secret, self.private_key.key),
            }
        return tls

    def _own(self, tls: dict[str, str], password: str) -> dict[str, str]:
        """The client settings, unprefixed: protocol, trust and key stores, SASL."""
        own: dict[str, str] = {"security.protocol": self.protocol, **tls}
        if self.mechanism:
            module = LOGIN_MODULES[self.mechanism]
            jaas = f'{module} required username="{_jaas_quote(self.username or "")}" password="{password}";'
            own |= {"sasl.mechanism": self.mechanism, "sasl.jaas.config": jaas}
        return own

    def _render(
        self, own: dict[str, str], provider: str, user_providers: str | None, extra: dict[str, str]
    ) -> dict[str, str]:
        out = {prefix + key: value for prefix in PREFIXES for key, value in own.items()}
        if self.mechanism or (provider == KUBERNETES_PROVIDER and self.certificate is not None):
            out |= provider_settings(provider, user_providers, extra)
        return out


def provider_settings(provider: str, user_providers: str | None, extra: Mapping[str, str]) -> dict[str, str]:
    """The worker's declaration of sparklink's provider: Strimzi's order, the user's providers then its own."""
    names = [n.strip() for n in (user_providers or "").split(",") if n.strip()]
    return {
        "config.providers": ",".join([*[n for n in names if n != provider], provider]),
        f"config.providers.{provider}.class": _PROVIDER_CLASSES[provider],
        **extra,
    }


def _secret_ref(namespace: str, secret: str, key: str) -> str:
    return f"${{{KUBERNETES_PROVIDER}:{namespace}/{secret}:{key}}}"


@dataclass(frozen=True)
class Material:
    """The Secrets' contents a local worker reads, by file name; never printed."""

    files: Mapping[str, bytes] = field(default_factory=dict, repr=False)

    @property
    def digest(self) -> str:
        """Changes when any Secret's material changes (a restart of the workers); reveals nothing."""
        h = hashlib.sha256()
        for name in sorted(self.files):
            h.update(name.encode() + b"\0" + hashlib.sha256(self.files[name]).digest())
        return h.hexdigest()[:16]


def _trusted(tls: Any, where: str) -> tuple[CertSource, ...]:
    sources = tls.get("trustedCertificates") if isinstance(tls, Mapping) else None
    out = []
    for i, raw in enumerate(sources or []):
        at = f"{where}.tls.trustedCertificates[{i}]"
        secret = _text(raw, "secretName", at)
        cert, pattern = raw.get("certificate"), raw.get("pattern")
        if (cert is None) == (pattern is None):
            raise _invalid(f"{at} needs exactly one of certificate or pattern")
        out.append(CertSource(secret, None if cert is None else str(cert), None if pattern is None else str(pattern)))
    return tuple(out)


def _text(raw: Any, name: str, where: str) -> str:
    value = raw.get(name) if isinstance(raw, Mapping) else None
    if not isinstance(value, str) or not value:
        raise _invalid(f"{where}.{name} is missing")
    return value


def _jaas_quote(text: str) -> str:
    """A JAAS option value inside double quotes: backslashes and quotes escaped, so a username stays one value."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _invalid(message: str) -> ReconcileFailure:
    return ReconcileFailure(message, REASON_INVALID_RESOURCE)


def _missing(message: str) -> ReconcileFailure:
    # Retried soon: the Secret may be created after the resource (Strimzi retries on its periodic reconcile).
    return ReconcileFailure(message, REASON_INVALID_CONFIGURATION, retriable=True)


@dataclass(frozen=True)
class SourceAuth:
    """A MirrorMaker 2 source cluster's `tls` / `authentication` (`spec.mirrors[index].source`)."""

    index: int
    auth: ClientAuth
    material: Material | None = field(default=None, repr=False)  # set by the reconciler

    @property
    def directory(self) -> str:
        """Its subdirectory of the worker's credentials directory."""
        return f"source-{self.index}"
