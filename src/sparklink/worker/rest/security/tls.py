"""The TLS context of an https listener, from Connect's `ssl.*` settings (key and trust stores as PEM or PKCS12).

Connect (SSLUtils.createServerSideSslContextFactory) reads these settings all or nothing: when any key
starts with the listener's prefix (`listeners.https.`, or `admin.listeners.https.` for the admin
listener), only prefixed keys count; otherwise the plain `ssl.*` keys (the worker's Kafka client
settings) do. Key stores follow Kafka's formats: `ssl.keystore.type` PKCS12 (or JKS, Kafka's default
name, which Java also reads from a PKCS12 file) or PEM, from `ssl.keystore.location` or, for PEM, the
`ssl.keystore.key` + `ssl.keystore.certificate.chain` texts; trust stores likewise, with
`ssl.truststore.certificates` for PEM text. `ssl.client.auth` is none, requested or required; a client
certificate is verified against the trust store, so one from another CA, or an expired one, fails the
handshake. `client_context` is the other side: the context a worker forwards requests to the others of
its group with. Messages name settings and files, never a password or a key. Caller: settings.py.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import ssl
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.hazmat.primitives.serialization import pkcs12

from sparklink.worker.rest.security.exceptions import RestSecurityError

log = logging.getLogger(__name__)

LISTENER_PREFIX = "listeners.https."
ADMIN_PREFIX = "admin.listeners.https."
CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
JKS_MAGIC = b"\xfe\xed\xfe\xed"
PEM_KEY = re.compile(rb"-----BEGIN ((?:ENCRYPTED |RSA |EC )?PRIVATE KEY)-----.+?-----END \1-----", re.DOTALL)


@dataclass(frozen=True)
class ListenerTls:
    """A server context and a line for the log that says what it holds (no secrets)."""

    context: ssl.SSLContext
    description: str


class _Settings:
    """The settings one listener uses, and how to name each in a message (with the prefix the user wrote)."""

    def __init__(self, settings: Mapping[str, str], prefix: str, warn: bool = True) -> None:
        prefixed = {k[len(prefix) :]: v for k, v in settings.items() if k.startswith(prefix + "ssl.")}
        self.prefix = prefix if prefixed else ""
        self.values = prefixed or {k: v for k, v in settings.items() if k.startswith("ssl.")}
        plain_auth = settings.get("ssl.client.auth")
        if warn and prefixed and plain_auth and "ssl.client.auth" not in prefixed:
            log.warning(
                "ssl.client.auth=%s does not apply to the %s listener: settings under %s exist, and Connect reads "
                "those all or nothing; set %sssl.client.auth",
                plain_auth,
                prefix.split(".https.")[0],
                prefix,
                prefix,
            )

    def get(self, key: str, default: str | None = None) -> str | None:
        value = self.values.get(key)
        return value if value not in (None, "") else default

    def name(self, key: str) -> str:
        return self.prefix + key


def _limited(s: _Settings, context: ssl.SSLContext, offered: str) -> ssl.SSLContext:
    """`context` limited to the configured TLS versions; ssl.cipher.suites is refused, as Python's ssl
    cannot take Java's suite names (`offered`: who refuses it, for the message)."""
    if s.get("ssl.cipher.suites"):
        raise RestSecurityError(
            f"{s.name('ssl.cipher.suites')} is not supported {offered} OpenSSL's default suites for TLS 1.2 "
            f"and 1.3; remove it (or restrict {s.name('ssl.enabled.protocols')})"
        )
    context.minimum_version, context.maximum_version = _versions(s)
    return context


def server_context(settings: Mapping[str, str], prefix: str = LISTENER_PREFIX) -> ListenerTls:
    """The TLS context for an https listener; RestSecurityError names any setting it cannot use."""
    s = _Settings(settings, prefix)
    context = _limited(s, ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), "by sparklink's REST server, which offers")
    key, chain, key_source = _identity(s)
    _load_identity(context, key, chain, s)
    trusted, trust_source = _trusted(s)
    mode = (s.get("ssl.client.auth", "none") or "none").lower()
    if mode not in CLIENT_AUTH:
        raise RestSecurityError(
            f"Invalid value {mode} for configuration {s.name('ssl.client.auth')}: String must be one of: "
            "required, requested, none"
        )
    if mode != "none" and not trusted:
        raise RestSecurityError(
            f"{s.name('ssl.client.auth')}={mode} needs a trust store holding the CA that signs client certificates: "
            f"set {s.name('ssl.truststore.location')} (or {s.name('ssl.truststore.certificates')} with "
            f"{s.name('ssl.truststore.type')}=PEM)"
        )
    if trusted:
        context.load_verify_locations(cadata="".join(_pem(cert).decode() for cert in trusted))
    context.verify_mode = CLIENT_AUTH[mode]
    subject = chain[0].subject.rfc4514_string()
    description = f"certificate {subject} from {key_source}, client auth {mode}"
    if trusted:
        description += f", {len(trusted)} trusted certificate(s) from {trust_source}"
    return ListenerTls(context, description)


def client_context(settings: Mapping[str, str]) -> ssl.SSLContext:
    """The TLS context a worker opens https connections to the other workers of its group with.

    Connect's RestClient (SSLUtils.createClientSideSslContextFactory) reads the main listener's settings,
    `listeners.https.ssl.*` all or nothing, else `ssl.*`: the key store, if any, is the client certificate
    this worker presents (its listener's own, so it must allow client authentication); the trust store,
    if any, is all it trusts (else the system's CAs, as Java falls back to its cacerts); the host name is
    checked unless `ssl.endpoint.identification.algorithm` is set empty, which is logged.
    """
    s = _Settings(settings, LISTENER_PREFIX, warn=False)
    context = _limited(s, ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT), "for requests between workers, which offer")
    has_identity = any(
        s.get(k) for k in ("ssl.keystore.location", "ssl.keystore.key", "ssl.keystore.certificate.chain")
    )
    if has_identity:
        key, chain, _source = _identity(s)
        _load_identity(context, key, chain, s)
    trusted, _trust_source = _trusted(s)
    if trusted:
        context.load_verify_locations(cadata="".join(_pem(cert).decode() for cert in trusted))
    else:
        context.load_default_certs()
    identification = s.values.get("ssl.endpoint.identification.algorithm")
    if identification is not None and not identification.strip():
        log.warning(
            "%s is empty: requests to other workers check their certificates but not their host names",
            s.name("ssl.endpoint.identification.algorithm"),
        )
        context.check_hostname = False
    return context


def _versions(s: _Settings) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    names = [p.strip() for p in (s.get("ssl.enabled.protocols", "TLSv1.2,TLSv1.3") or "").split(",") if p.strip()]
    unknown = [n for n in names if n not in VERSIONS]
    if unknown or not names:
        raise RestSecurityError(
            f"{s.name('ssl.enabled.protocols')} may list TLSv1.2 and TLSv1.3 only (older versions are not safe); "
            f"not {', '.join(unknown) or 'nothing'}"
        )
    versions = sorted(VERSIONS[n] for n in names)
    return versions[0], versions[-1]


# ---------------------------------------------------------------------- key store
def _identity(s: _Settings) -> tuple[PrivateKeyTypes, list[x509.Certificate], str]:
    store_type = (s.get("ssl.keystore.type", "JKS") or "JKS").upper()
    location = s.get("ssl.keystore.location")
    key_text, chain_text = s.get("ssl.keystore.key"), s.get("ssl.keystore.certificate.chain")
    key_password = s.get("ssl.key.password")
    if key_text or chain_text:
        if store_type != "PEM" or location or not (key_text and chain_text):
            raise RestSecurityError(
                f"{s.name('ssl.keystore.key')} and {s.name('ssl.keystore.certificate.chain')} go together, with "
                f"{s.name('ssl.keystore.type')}=PEM and without {s.name('ssl.keystore.location')}"
            )
        _no_pem_store_password(s, "ssl.keystore.password")
        key = _pem_key(key_text.encode(), key_password, s, s.name("ssl.keystore.key"))
        return key, _pem_certs(chain_text.encode(), s.name("ssl.keystore.certificate.chain")), "PEM settings"
    if not location:
        raise RestSecurityError(
            f"An https listener needs a key store: set {s.name('ssl.keystore.location')} (PKCS12 or PEM, with "
            f"{s.name('ssl.keystore.type')}), or {s.name('ssl.keystore.key')} and "
            f"{s.name('ssl.keystore.certificate.chain')} with {s.name('ssl.keystore.type')}=PEM"
        )
    data = _read(location, s.name("ssl.keystore.location"))
    source = f"{store_type} key store {location}"
    if store_type == "PEM":
        _no_pem_store_password(s, "ssl.keystore.password")
        key = _pem_key(data, key_password, s, s.name("ssl.keystore.location"))
        return key, _pem_certs(data, s.name("ssl.keystore.location")), source
    if store_type not in ("PKCS12", "JKS"):
        raise RestSecurityError(f"{s.name('ssl.keystore.type')} must be PKCS12, JKS or PEM, not {store_type}")
    _not_jks(data, location, s.name("ssl.keystore.type"))
    store = _pkcs12(data, [s.get("ssl.keystore.password"), key_password], location, s.name("ssl.keystore.password"))
    if store.key is None or store.cert is None:
        raise RestSecurityError(
            f"The key store {location} ({s.name('ssl.keystore.location')}) holds no private key with its certificate"
        )
    chain = [store.cert.certificate, *(c.certificate for c in store.additional_certs)]
    return store.key, chain, source


def _load_identity(context: ssl.SSLContext, key: PrivateKeyTypes, chain: list[x509.Certificate], s: _Settings) -> None:
    # ssl loads a key only from a file: hand it an in-memory one (memfd), so the clear key never touches a disk.
    clear = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    with _secret_file(b"".join(_pem(cert) for cert in chain) + clear) as path:
        try:
            context.load_cert_chain(path)
        except ssl.SSLError as exc:
            raise RestSecurityError(
                f"The key store of {s.name('ssl.keystore.location')} cannot serve TLS ({exc.reason or exc}): its "
                "private key must belong to its first certificate"
            ) from None


@contextlib.contextmanager
def _secret_file(data: bytes) -> Iterator[str]:
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("sparklink-rest-tls", os.MFD_CLOEXEC)
        try:
            with os.fdopen(fd, "wb", closefd=False) as out:
                out.write(data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="sparklink-tls-") as directory:  # created 0700
        path = Path(directory) / "identity.pem"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        yield str(path)


# ---------------------------------------------------------------------- trust store
def _trusted(s: _Settings) -> tuple[list[x509.Certificate], str]:
    store_type = (s.get("ssl.truststore.type", "JKS") or "JKS").upper()
    text, location = s.get("ssl.truststore.certificates"), s.get("ssl.truststore.location")
    if text:
        if store_type != "PEM" or location:
            raise RestSecurityError(
                f"{s.name('ssl.truststore.certificates')} needs {s.name('ssl.truststore.type')}=PEM and no "
                f"{s.name('ssl.truststore.location')}"
            )
        _no_pem_store_password(s, "ssl.truststore.password")
        return _pem_certs(text.encode(), s.name("ssl.truststore.certificates")), "PEM settings"
    if not location:
        return [], ""
    data = _read(location, s.name("ssl.truststore.location"))
    source = f"{store_type} trust store {location}"
    if store_type == "PEM":
        _no_pem_store_password(s, "ssl.truststore.password")
        return _pem_certs(data, s.name("ssl.truststore.location")), source
    if store_type not in ("PKCS12", "JKS"):
        raise RestSecurityError(f"{s.name('ssl.truststore.type')} must be PKCS12, JKS or PEM, not {store_type}")
    _not_jks(data, location, s.name("ssl.truststore.type"))
    store = _pkcs12(data, [s.get("ssl.truststore.password")], location, s.name("ssl.truststore.password"))
    certs = [c.certificate for c in ([store.cert] if store.cert else []) + list(store.additional_certs)]
    if not certs:
        setting = s.name("ssl.truststore.location")
        raise RestSecurityError(f"The trust store {location} ({setting}) holds no certificate")
    return certs, source


# ---------------------------------------------------------------------- formats
def _read(location: str, setting: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as exc:
        raise RestSecurityError(f"Cannot read {location} ({setting}): {exc.strerror}") from None


def _not_jks(data: bytes, location: str, setting: str) -> None:
    if data.startswith(JKS_MAGIC):
        raise RestSecurityError(
            f"{location} is a JKS store, which sparklink cannot read. Convert it to PKCS12 "
            f"(keytool -importkeystore -srckeystore {location} -destkeystore {location}.p12 -deststoretype PKCS12), "
            f"point the location at the new file and set {setting}=PKCS12"
        )


def _pkcs12(data: bytes, passwords: list[str | None], location: str, setting: str) -> pkcs12.PKCS12KeyAndCertificates:
    # Java lets a key have its own password (ssl.key.password); a PKCS12 file has one, so try each given.
    for password in dict.fromkeys([*(p for p in passwords if p), None]):
        try:
            return pkcs12.load_pkcs12(data, password.encode() if password else None)
        except ValueError:
            continue
    raise RestSecurityError(f"Cannot open the PKCS12 store {location}: wrong {setting}, or not a PKCS12 file")


def _pem_key(data: bytes, password: str | None, s: _Settings, setting: str) -> PrivateKeyTypes:
    blocks = [m.group(0) for m in PEM_KEY.finditer(data)]
    if len(blocks) != 1:
        raise RestSecurityError(f"{setting} must hold exactly one PEM private key, not {len(blocks)}")
    try:
        return serialization.load_pem_private_key(blocks[0], password.encode() if password else None)
    except TypeError:
        if password:  # given, but the key is not encrypted: Kafka's PEM loader accepts that too
            return serialization.load_pem_private_key(blocks[0], None)
        raise RestSecurityError(
            f"The private key in {setting} is encrypted: set {s.name('ssl.key.password')}"
        ) from None
    except ValueError:
        raise RestSecurityError(
            f"Cannot read the private key in {setting}: wrong {s.name('ssl.key.password')}, or not a PEM key"
        ) from None


def _pem_certs(data: bytes, setting: str) -> list[x509.Certificate]:
    try:
        return x509.load_pem_x509_certificates(data)
    except ValueError:
        raise RestSecurityError(f"{setting} holds no PEM certificate") from None


def _no_pem_store_password(s: _Settings, key: str) -> None:
    if s.get(key):
        # Kafka's DefaultSslEngineFactory refuses the same: a PEM store has no password, only its key may.
        raise RestSecurityError(f"{s.name(key)} cannot be specified with PEM format, only a key password may be")


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)
