"""Trust stores and key stores as Kafka's Java clients take them, checked once and readable by every client.

Java's `ssl.truststore.*` / `ssl.keystore.*` settings name a PEM text, a PEM file, a PKCS12 file or a JKS file
(`type` defaults to JKS, as in Java; a PKCS12 file under type JKS is read as PKCS12, as Java's keystore
compatibility mode does). Parsing loads what it can (PEM text and files, PKCS12 with its password) so a wrong
password, a missing file or a key that does not match its certificate is refused at start with the setting
to fix. Other clients read them through `ca_pem()`, `pem_pair()` and `pkcs12()`; JKS is converted with
keytool when first asked. Caller: `security`.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.hazmat.primitives.serialization import pkcs12

from sparklink.clients import files
from sparklink.clients.errors import ClientSettingsError

__all__ = ["KeyStore", "TrustStore", "keystore_from", "truststore_from"]

TYPES = ("JKS", "PKCS12", "PEM")
_JKS_MAGIC = b"\xfe\xed\xfe\xed"


@dataclass(frozen=True)
class TrustStore:
    """The certificates a client trusts. `pem` is set for PEM stores (inline or read from `location`)."""

    type: str
    location: Path | None = None
    pem: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)

    @property
    def key(self) -> str:
        return "ssl.truststore.location" if self.location else "ssl.truststore.certificates"

    def ca_pem(self) -> str:
        """The trusted certificates as PEM text, whatever the store's type."""
        if self.pem is not None:
            return self.pem
        if self.type == "JKS" and not self.password:
            raise ClientSettingsError(
                "ssl.truststore.password", "ssl.truststore.password is needed to read the JKS trust store"
            )
        data = _pkcs12_bytes(self.type, self.location, self.password or "", None, self.key)
        bundle = _open_pkcs12(data, self.password, "ssl.truststore.password")
        certs = [c.certificate for c in bundle.additional_certs] + ([bundle.cert.certificate] if bundle.cert else [])
        if not certs:
            raise ClientSettingsError(self.key, f"{self.key} holds no certificate to trust")
        return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)


@dataclass(frozen=True)
class KeyStore:
    """The client's certificate chain and private key (for mutual TLS)."""

    type: str
    location: Path | None = None
    chain_pem: str | None = field(default=None, repr=False)
    key_pem: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)  # ssl.keystore.password (PKCS12, JKS)
    key_password: str | None = field(default=None, repr=False)  # ssl.key.password
    not_after: dt.datetime | None = None  # the client certificate's expiry, when it could be read
    subject: str | None = None

    @property
    def key(self) -> str:
        return "ssl.keystore.location" if self.location else "ssl.keystore.key"

    def pem_pair(self) -> tuple[str, str]:
        """(certificate chain, private key) as PEM text, the key unencrypted; any store type."""
        if self.chain_pem is not None and self.key_pem is not None:
            key = _load_key(self.key_pem.encode(), self.key_password, self.key)
            return self.chain_pem, _pkcs8(key)
        bundle = _open_pkcs12(self.pkcs12(), self.password, "ssl.keystore.password")
        if bundle.key is None or bundle.cert is None:
            raise ClientSettingsError(self.key, f"{self.key} holds no private key entry")
        chain = [bundle.cert.certificate] + [c.certificate for c in bundle.additional_certs]
        return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in chain), _pkcs8(bundle.key)

    def pkcs12(self) -> bytes:
        """The store as PKCS12 bytes (store password `password`); JKS converted by keytool."""
        return _pkcs12_bytes(self.type, self.location, self.password or "", self.key_password, self.key)


def truststore_from(props: Mapping[str, str]) -> TrustStore | None:
    """The trust store the `ssl.truststore.*` settings describe; None to trust the system's CAs."""
    kind = _type(props, "ssl.truststore.type")
    text, location = props.get("ssl.truststore.certificates"), props.get("ssl.truststore.location")
    password = props.get("ssl.truststore.password") or None
    if text:
        if kind != "PEM":
            raise ClientSettingsError(
                "ssl.truststore.certificates", "ssl.truststore.certificates needs ssl.truststore.type=PEM"
            )
        if location:
            raise ClientSettingsError(
                "ssl.truststore.location",
                "set either ssl.truststore.certificates or ssl.truststore.location, not both",
            )
        _no_password_with_pem(password, "ssl.truststore.password", "trust store")
        _certificates(text.encode(), "ssl.truststore.certificates")
        return TrustStore("PEM", pem="".join(_pem_blocks(text.encode(), "CERTIFICATE")))
    if not location:
        return None
    path, data = _read(location, "ssl.truststore.location")
    kind = _actual_type(kind, data, "ssl.truststore")
    if kind == "PEM":
        _no_password_with_pem(password, "ssl.truststore.password", "trust store")
        _certificates(data, "ssl.truststore.location")
        return TrustStore("PEM", path, pem="".join(_pem_blocks(data, "CERTIFICATE")))
    store = TrustStore(kind, path, password=password)
    if kind == "PKCS12":
        store.ca_pem()  # a wrong password or an empty store fails now, not at the first connection
    return store


def keystore_from(props: Mapping[str, str]) -> KeyStore | None:
    """The key store the `ssl.keystore.*` and `ssl.key.password` settings describe; None without one."""
    kind = _type(props, "ssl.keystore.type")
    chain, key = props.get("ssl.keystore.certificate.chain"), props.get("ssl.keystore.key")
    location = props.get("ssl.keystore.location")
    password, key_password = props.get("ssl.keystore.password") or None, props.get("ssl.key.password") or None
    if chain or key:
        if kind != "PEM":
            raise ClientSettingsError(
                "ssl.keystore.key" if key else "ssl.keystore.certificate.chain",
                "ssl.keystore.key and ssl.keystore.certificate.chain need ssl.keystore.type=PEM",
            )
        if not (chain and key):
            missing = "ssl.keystore.key" if chain else "ssl.keystore.certificate.chain"
            raise ClientSettingsError(
                missing, f"{missing} is missing: a PEM key store needs both the certificate chain and the key"
            )
        if location:
            raise ClientSettingsError(
                "ssl.keystore.location", "set either ssl.keystore.key/certificate.chain or ssl.keystore.location"
            )
        _no_password_with_pem(password, "ssl.keystore.password", "key store (use ssl.key.password for the key)")
        return _pem_keystore(chain.encode(), key.encode(), key_password, None, "ssl.keystore.key")
    if not location:
        return None
    path, data = _read(location, "ssl.keystore.location")
    kind = _actual_type(kind, data, "ssl.keystore")
    if kind == "PEM":
        _no_password_with_pem(password, "ssl.keystore.password", "key store (use ssl.key.password for the key)")
        return _pem_keystore(data, data, key_password, path, "ssl.keystore.location")
    if not password:
        raise ClientSettingsError(
            "ssl.keystore.password", f"ssl.keystore.password is needed to open the {kind} key store"
        )
    if kind == "JKS":
        return KeyStore("JKS", path, password=password, key_password=key_password)
    bundle = _open_pkcs12(data, password, "ssl.keystore.password")
    if bundle.key is None or bundle.cert is None:
        raise ClientSettingsError("ssl.keystore.location", "ssl.keystore.location holds no private key entry")
    leaf = bundle.cert.certificate
    return KeyStore(
        "PKCS12",
        path,
        password=password,
        key_password=key_password,
        not_after=leaf.not_valid_after_utc,
        subject=leaf.subject.rfc4514_string(),
    )


# ----------------------------------------------------------------------------------------------- helpers
def _type(props: Mapping[str, str], key: str) -> str:
    kind = (props.get(key) or "JKS").strip().upper()
    if kind not in TYPES:
        raise ClientSettingsError(key, f"{key} must be one of {', '.join(TYPES)}, not {kind!r}")
    return kind


def _actual_type(declared: str, data: bytes, prefix: str) -> str:
    looks_pem = data.lstrip().startswith(b"-----BEGIN")
    if declared != "PEM" and looks_pem:
        raise ClientSettingsError(f"{prefix}.type", f"{prefix}.location is a PEM file; set {prefix}.type=PEM")
    if declared == "PEM" and not looks_pem:
        raise ClientSettingsError(
            f"{prefix}.type", f"{prefix}.location is not a PEM file; set {prefix}.type to PKCS12 or JKS"
        )
    if declared == "JKS" and not data.startswith(_JKS_MAGIC):
        return "PKCS12"  # Java reads a PKCS12 file under type JKS (keystore.type.compat)
    if declared == "PKCS12" and data.startswith(_JKS_MAGIC):
        raise ClientSettingsError(f"{prefix}.type", f"{prefix}.location is a JKS file; set {prefix}.type=JKS")
    return declared


def _read(location: str, key: str) -> tuple[Path, bytes]:
    path = Path(location).expanduser()
    try:
        return path, path.read_bytes()
    except OSError as exc:
        raise ClientSettingsError(key, f"{key}: cannot read {path} ({exc.strerror or exc})") from None


def _no_password_with_pem(password: str | None, key: str, what: str) -> None:
    if password:
        raise ClientSettingsError(key, f"{key} cannot be set for a PEM {what}; remove it")


def _certificates(data: bytes, key: str) -> list[x509.Certificate]:
    try:
        certs = x509.load_pem_x509_certificates(data)
    except ValueError:
        certs = []
    if not certs:
        raise ClientSettingsError(key, f"{key} holds no readable PEM certificate (-----BEGIN CERTIFICATE-----)")
    return certs


def _pem_keystore(chain: bytes, key: bytes, key_password: str | None, path: Path | None, source: str) -> KeyStore:
    chain_key = "ssl.keystore.location" if path else "ssl.keystore.certificate.chain"
    certs = _certificates(chain, chain_key)
    if b"-----BEGIN RSA PRIVATE KEY" in key or b"-----BEGIN EC PRIVATE KEY" in key:
        raise ClientSettingsError(
            source,
            f"{source} holds a traditional (PKCS#1/SEC1) key; Kafka's clients need PKCS#8. Convert it: "
            "openssl pkcs8 -topk8 -in key.pem -out key-pkcs8.pem (add -nocrypt for an unencrypted key)",
        )
    private = _load_key(key, key_password, source)
    if private.public_key().public_bytes(*_SPKI) != certs[0].public_key().public_bytes(*_SPKI):
        raise ClientSettingsError(source, f"the private key in {source} does not belong to the first certificate")
    blocks = _pem_blocks(chain, "CERTIFICATE")
    key_block = _pem_blocks(key, "PRIVATE KEY")
    return KeyStore(
        "PEM",
        path,
        chain_pem="".join(blocks),
        key_pem=key_block[0],
        key_password=key_password,
        not_after=certs[0].not_valid_after_utc,
        subject=certs[0].subject.rfc4514_string(),
    )


_SPKI = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _load_key(data: bytes, password: str | None, key: str) -> PrivateKeyTypes:
    try:
        return serialization.load_pem_private_key(data, password.encode() if password else None)
    except TypeError:
        if password:
            raise ClientSettingsError(
                "ssl.key.password", f"ssl.key.password is set but the key in {key} is not encrypted; remove it"
            ) from None
        raise ClientSettingsError("ssl.key.password", f"the key in {key} is encrypted; set ssl.key.password") from None
    except ValueError:
        if password:
            raise ClientSettingsError(
                "ssl.key.password", f"ssl.key.password does not decrypt the key in {key}"
            ) from None
        raise ClientSettingsError(key, f"{key} holds no readable PEM private key (BEGIN PRIVATE KEY)") from None


def _pkcs8(key: PrivateKeyTypes) -> str:
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return pem.decode()


def _pem_blocks(data: bytes, label: str) -> list[str]:
    text, out, start = data.decode(errors="replace"), [], 0
    while (begin := text.find("-----BEGIN ", start)) >= 0:
        end_marker = text.find("-----END ", begin)
        close = text.find("-----", end_marker + 9) + 5 if end_marker >= 0 else -1
        if close < 5:
            break
        block = text[begin:close]
        header = block.split("-----", 2)[1]
        if header.endswith(label):
            out.append(block.strip() + "\n")
        start = close
    return out


def _open_pkcs12(data: bytes, password: str | None, key: str) -> pkcs12.PKCS12KeyAndCertificates:
    try:
        return pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError:
        raise ClientSettingsError(key, f"{key} does not open the PKCS12 store (wrong password or not PKCS12)") from None


@functools.lru_cache(maxsize=32)
def _jks_as_pkcs12(path: Path, mtime: float, store_password: str, key_password: str | None, key: str) -> bytes:
    try:
        return files.jks_to_pkcs12(path, store_password, key_password, key)
    except files.KeytoolError as exc:
        raise ClientSettingsError(key, str(exc)) from None


def _pkcs12_bytes(kind: str, path: Path | None, store_password: str, key_password: str | None, key: str) -> bytes:
    if path is None:
        raise ClientSettingsError(key, f"{key} is not a file store")
    if kind == "JKS":
        return _jks_as_pkcs12(path, path.stat().st_mtime, store_password, key_password, key)
    return path.read_bytes()
