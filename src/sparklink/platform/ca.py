"""Certificates for sparklink's TLS: a CA and the leaf certificates it signs, made with `cryptography`.

The one module that creates certificates. Callers: the local Kafka cluster (`cluster_ca`: one server
certificate per broker agent, the roller's client certificate), the broker-state agent and the roller
(which load the files), and the local Kubernetes control plane (`kube`: its CA, serving and client
certificates and the service-account signing key, all EC P-256, without the sparklink organization).

The choices follow Strimzi's CA model (CertificateAuthority / Ca.java / OpenSslCertIssuer):
- the CA key is RSA 4096, the certificate is self-signed with basicConstraints CA:true, pathlen:0 and
  keyUsage keyCertSign+cRLSign, and carries no subject alternative names;
- leaf keys are RSA 2048 (openssl's default for `req -new`, which Strimzi uses for its leaves), signed with
  SHA-256, basicConstraints CA:false, keyUsage digitalSignature+keyEncipherment;
- every certificate is valid for 365 days and is renewed once it is within 30 days of expiry
  (`DEFAULT_CERTS_VALIDITY_DAYS`, `DEFAULT_CERTS_RENEWAL_DAYS`); subjects carry O=io.strimzi's counterpart,
  O=io.sparklink.
`KeyType.EC` (P-256) is offered for callers that need fast keys or ES256 signing (the Kubernetes PKI); an
EC leaf carries no keyEncipherment usage, which ECDSA keys cannot do.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import enum
import ipaddress
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY_DAYS = 365
RENEWAL_DAYS = 30
ORGANIZATION = "io.sparklink"
LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
# A clock a few seconds behind ours must not reject a certificate made a moment ago.
BACKDATE = dt.timedelta(minutes=5)

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey


class KeyType(enum.Enum):
    RSA = "rsa"
    EC = "ec"


@dataclass(frozen=True)
class Issued:
    """A certificate and its private key, both PEM."""

    cert_pem: bytes
    key_pem: bytes

    @property
    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)

    def write(self, cert_path: Path, key_path: Path) -> None:
        """Key first, then certificate, each replaced whole: a reader never sees half a file."""
        write_private(key_path, self.key_pem)
        _replace(cert_path, self.cert_pem, 0o644)

    @classmethod
    def read(cls, cert_path: Path, key_path: Path) -> Issued:
        return cls(cert_path.read_bytes(), key_path.read_bytes())


def new_key(key_type: KeyType = KeyType.RSA, *, ca: bool = False) -> PrivateKey:
    if key_type is KeyType.EC:
        return ec.generate_private_key(ec.SECP256R1())
    return rsa.generate_private_key(public_exponent=65537, key_size=4096 if ca else 2048)


def key_pem(key: PrivateKey) -> bytes:
    encoding, fmt = serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8
    return key.private_bytes(encoding, fmt, serialization.NoEncryption())


def public_pem(key: PrivateKey) -> bytes:
    """The public half as PEM SubjectPublicKeyInfo (what kube-apiserver reads as a service-account key)."""
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def new_ca(
    common_name: str,
    *,
    key_type: KeyType = KeyType.RSA,
    organizations: tuple[str, ...] = (ORGANIZATION,),
    validity_days: int = VALIDITY_DAYS,
    now: dt.datetime | None = None,
) -> Issued:
    """A self-signed CA that signs leaf certificates only (path length 0)."""
    key = new_key(key_type, ca=True)
    name = _name(common_name, organizations)
    cert = _ca_certificate(name, key, validity_days, now)
    return Issued(cert.public_bytes(serialization.Encoding.PEM), key_pem(key))


def _ca_certificate(
    name: x509.Name, key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey, validity_days: int, now: dt.datetime | None
) -> x509.Certificate:
    """A self-signed certificate for a CA key that signs leaf certificates only (path length 0)."""
    return (
        _builder(name, name, key.public_key(), validity_days, now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )


def renew_ca(current: Issued, *, validity_days: int = VALIDITY_DAYS, now: dt.datetime | None = None) -> Issued:
    """A new certificate for the same CA key and subject, so what the old one signed still verifies."""
    cert = _ca_certificate(current.certificate.subject, _private_key(current.key_pem), validity_days, now)
    return Issued(cert.public_bytes(serialization.Encoding.PEM), current.key_pem)


def certify_key(
    key_pem: bytes,
    common_name: str,
    *,
    organizations: tuple[str, ...] = (ORGANIZATION,),
    validity_days: int = VALIDITY_DAYS,
    now: dt.datetime | None = None,
) -> Issued:
    """A CA certificate for an existing CA key whose certificate was lost (Strimzi: RENEW_CERT with no ca.crt)."""
    key = _private_key(key_pem)
    name = _name(common_name, organizations)
    cert = _ca_certificate(name, key, validity_days, now)
    return Issued(cert.public_bytes(serialization.Encoding.PEM), key_pem)


def truststore_p12(cert_pem: bytes, alias: str, password: str) -> bytes:
    """A PKCS12 trust store Java reads as trusted certificate entries (Strimzi's `ca.p12`)."""
    entry = pkcs12.PKCS12Certificate(x509.load_pem_x509_certificate(cert_pem), alias.encode())
    return pkcs12.serialize_java_truststore([entry], serialization.BestAvailableEncryption(password.encode()))


def keystore_p12(issued: Issued, alias: str, password: str) -> bytes:
    """A PKCS12 key store holding one key and its certificate (Strimzi's `user.p12`)."""
    key = _private_key(issued.key_pem)
    return pkcs12.serialize_key_and_certificates(
        alias.encode(), key, issued.certificate, None, serialization.BestAvailableEncryption(password.encode())
    )


def _private_key(key_pem: bytes) -> rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(key_pem, password=None)
    if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
        raise TypeError("the CA key must be an RSA or EC key")
    return key


def issue(
    ca: Issued,
    common_name: str,
    *,
    organizations: tuple[str, ...] = (ORGANIZATION,),
    hosts: Iterable[str] = (),
    server: bool = False,
    client: bool = False,
    key_type: KeyType | None = None,
    validity_days: int = VALIDITY_DAYS,
    now: dt.datetime | None = None,
) -> Issued:
    """A leaf certificate signed by `ca`, for TLS serving on `hosts` and/or client authentication.

    The key type defaults to the CA's. `now` moves the validity window (tests make expired certificates).
    """
    ca_cert = ca.certificate
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    if not isinstance(ca_key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
        raise TypeError("the CA key must be an RSA or EC key")
    if key_type is None:
        key_type = KeyType.EC if isinstance(ca_key, ec.EllipticCurvePrivateKey) else KeyType.RSA
    key = new_key(key_type)
    purposes = [ExtendedKeyUsageOID.SERVER_AUTH] * server + [ExtendedKeyUsageOID.CLIENT_AUTH] * client
    builder = (
        _builder(_name(common_name, organizations), ca_cert.subject, key.public_key(), validity_days, now)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=False, encipher=key_type is KeyType.RSA), critical=True)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
    )
    if purposes:
        builder = builder.add_extension(x509.ExtendedKeyUsage(purposes), critical=False)
    names = list(dict.fromkeys(hosts))
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName([_san(h) for h in names]), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return Issued(cert.public_bytes(serialization.Encoding.PEM), key_pem(key))


def needs_renewal(cert_pem: bytes, renewal_days: int = RENEWAL_DAYS, now: dt.datetime | None = None) -> bool:
    """True once the certificate is inside its renewal window (or already expired)."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    moment = now or dt.datetime.now(dt.UTC)
    return cert.not_valid_after_utc - dt.timedelta(days=renewal_days) <= moment


def issued_before(cert_pem: bytes, ca_pem: bytes) -> bool:
    """True when `cert_pem` was issued before the CA's current certificate (a renewal that kept the key):
    its holder should get a certificate of the current generation."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    authority = x509.load_pem_x509_certificate(ca_pem)
    return cert.not_valid_before_utc < authority.not_valid_before_utc


def signed_by(cert_pem: bytes, ca_pem: bytes) -> bool:
    """True when `ca_pem` issued `cert_pem` (checks the signature, not the dates)."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    try:
        cert.verify_directly_issued_by(x509.load_pem_x509_certificate(ca_pem))
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _name(common_name: str, organizations: Iterable[str]) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: rsa.RSAPublicKey | ec.EllipticCurvePublicKey,
    validity_days: int,
    now: dt.datetime | None,
) -> x509.CertificateBuilder:
    start = (now or dt.datetime.now(dt.UTC)) - BACKDATE
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + BACKDATE + dt.timedelta(days=validity_days))
    )


def _usage(*, cert_sign: bool, encipher: bool = False) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=encipher,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def write_private(path: Path, data: bytes) -> None:
    """Write a secret readable by its owner only (0600 before anything is in it), replacing the file whole."""
    _replace(path, data, 0o600)


def key_matches(cert_pem: bytes, key_pem: bytes) -> bool:
    """True when `key_pem` is the private key of the certificate's public key (a usable pair)."""
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError):
        return False
    spki = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    public = x509.load_pem_x509_certificate(cert_pem).public_key()
    return key.public_key().public_bytes(*spki) == public.public_bytes(*spki)


def _replace(path: Path, data: bytes, mode: int) -> None:
    """Write `data` to a new file beside `path` (created with `mode`) and rename it over `path`: readers (a
    broker loading its keystore, a client reading its certificate) see the old content or the new, never a
    truncated file, and a crash mid-write leaves the old one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
