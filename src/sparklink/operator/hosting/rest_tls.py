"""The certificates of the operator's https connections to its worker groups (see `model.rest_tls`).

`OperatorIdentity` is the operator's side: a client CA and the one client certificate it signs, kept in
`<state dir>/rest-client/` (directory 0700, keys 0600) so that an operator that restarts is still trusted by
the workers that outlived it. `connect(url, group_ca)` opens a `ConnectClient` that presents that
certificate and accepts only a server certificate from the group's CA, checking the host name; there is
no plain-http path for a group that has a CA.

`group_material` makes (or keeps) a group's CA and worker certificate: the existing material is kept while
its certificate names the wanted hosts, chains to its CA and is outside its renewal window, so the workers
and the operator keep agreeing across reconciles and restarts; otherwise a new certificate is issued by the
same CA (the operator keeps trusting it) and the worker picks it up at its restart, which the material's
digest in the settings fingerprint causes. Callers: `hosting.local`, `hosting.kubernetes`, `kube.loop`.
"""

from __future__ import annotations

import hashlib
import ssl
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from cryptography import x509

from sparklink.operator.connect_client import ConnectClient
from sparklink.operator.model import rest_tls
from sparklink.operator.model.resources import Key
from sparklink.platform import ca

CLIENT_DIR = "rest-client"
OPERATOR_NAME = "sparklink-operator"


class OperatorIdentity:
    """The operator's client CA and client certificate, made once and kept in `directory`."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._lock = threading.Lock()
        self._contexts: dict[bytes, ssl.SSLContext] = {}
        with self._lock:
            self._ensure()

    @property
    def ca_pem(self) -> bytes:
        return (self.directory / rest_tls.CA_CERT).read_bytes()

    @property
    def keystore(self) -> Path:
        """The client certificate and its key in one PEM file (0600)."""
        return self.directory / rest_tls.KEYSTORE

    def _ensure(self) -> None:
        _private_dir(self.directory)
        ca_cert, ca_key = self.directory / rest_tls.CA_CERT, self.directory / rest_tls.CA_KEY
        if ca_cert.exists() and ca_key.exists():
            authority = ca.Issued.read(ca_cert, ca_key)
            if ca.needs_renewal(authority.cert_pem):
                # Same key: the client certificate it signed still verifies while the groups' trust stores
                # take the renewed certificate (their material's digest changes, so their workers restart).
                authority = ca.renew_ca(authority)
                ca_cert.write_bytes(authority.cert_pem)
        else:
            authority = ca.new_ca(f"{OPERATOR_NAME} REST client CA")
            authority.write(ca_cert, ca_key)
        current = self.directory / rest_tls.CERT
        if (
            current.exists()
            and self.keystore.exists()
            and ca.signed_by(current.read_bytes(), authority.cert_pem)
            and not ca.needs_renewal(current.read_bytes())
        ):
            return
        client = ca.issue(authority, OPERATOR_NAME, client=True)
        ca.write_private(self.keystore, rest_tls.keystore_pem(client.cert_pem, client.key_pem))
        current.write_bytes(client.cert_pem)

    def context(self, group_ca_pem: bytes) -> ssl.SSLContext:
        """A client context presenting the operator's certificate and trusting only `group_ca_pem`."""
        with self._lock:
            context = self._contexts.get(group_ca_pem)
            if context is None:
                context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=group_ca_pem.decode())
                context.load_cert_chain(str(self.keystore))
                self._contexts[group_ca_pem] = context
            return context

    def connect(self, url: str, group_ca_pem: bytes | None, timeout: float = 30.0) -> ConnectClient:
        """The REST client of a group: https with the operator's certificate when the group has a CA."""
        if group_ca_pem is None:
            # Only a group the operator did not start (tests' fixed workers) has no CA; ours never.
            return ConnectClient(url, timeout=timeout)
        if not url.startswith("https://"):
            raise ValueError(f"a worker group with a CA is reached over https only, not {url}")
        return ConnectClient(url, timeout=timeout, verify=self.context(group_ca_pem))


def group_material(
    key: Key, hosts: Sequence[str], operator_ca_pem: bytes, current: Mapping[str, bytes] | None
) -> dict[str, bytes]:
    """A group's REST TLS files (`model.rest_tls` names): its CA (cert and key), the worker's key store and
    certificate, and the trust store; `current`'s are kept while they still serve `hosts`."""
    authority = None
    if current and rest_tls.CA_CERT in current and rest_tls.CA_KEY in current:
        authority = ca.Issued(current[rest_tls.CA_CERT], current[rest_tls.CA_KEY])
        if ca.needs_renewal(authority.cert_pem):
            authority = ca.renew_ca(authority)  # same key: certificates it signed still verify
    if authority is None:
        authority = ca.new_ca(f"{rest_tls.common_name(key)} REST CA")
    cert = (current or {}).get(rest_tls.CERT)
    keystore = (current or {}).get(rest_tls.KEYSTORE)
    if cert is None or keystore is None or not _still_good(cert, authority.cert_pem, hosts):
        issued = ca.issue(authority, rest_tls.common_name(key), hosts=hosts, server=True, client=True)
        cert, keystore = issued.cert_pem, rest_tls.keystore_pem(issued.cert_pem, issued.key_pem)
    return {
        rest_tls.CA_CERT: authority.cert_pem,
        rest_tls.CA_KEY: authority.key_pem,
        rest_tls.CERT: cert,
        rest_tls.KEYSTORE: keystore,
        rest_tls.TRUSTED: rest_tls.trusted_pem(operator_ca_pem, authority.cert_pem),
    }


def digest(material: Mapping[str, bytes]) -> str:
    """Changes when what a worker reads changes (its restart picks it up)."""
    files = rest_tls.secret_files(material)
    return hashlib.sha256(b"\0".join(files[name] for name in sorted(files))).hexdigest()[:16]


def _still_good(cert_pem: bytes, ca_pem: bytes, hosts: Sequence[str]) -> bool:
    if not ca.signed_by(cert_pem, ca_pem) or ca.needs_renewal(cert_pem):
        return False
    try:
        names = x509.load_pem_x509_certificate(cert_pem).extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return False
    have = {str(v) for v in names.value.get_values_for_type(x509.DNSName)}
    have |= {str(v) for v in names.value.get_values_for_type(x509.IPAddress)}
    return set(hosts) <= have


def write_group_dir(directory: Path, material: Mapping[str, bytes]) -> None:
    """A local group's REST TLS directory (0700) with each file 0600, written whole or not at all."""
    _private_dir(directory)
    for name, data in material.items():
        path = directory / name
        if path.exists() and path.read_bytes() == data:
            continue
        ca.write_private(path, data)


def read_group_dir(directory: Path) -> dict[str, bytes] | None:
    try:
        return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file() and not p.name.startswith(".")}
    except OSError:
        return None


def _private_dir(directory: Path) -> None:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory.chmod(0o700)
