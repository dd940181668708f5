"""A Kafka cluster's certificate files: its cluster CA, one server certificate per node agent, the roller's
client certificate and, for secured clusters, each node's broker certificate (serving its listeners and
authenticating it to the other nodes) and client certificates (the platform's own, users'). A second
instance with `label="clients-ca"` is the clients CA, which signs users' certificates for mutual-TLS
listeners, as in Strimzi. Created on first use and renewed in place when a certificate enters its renewal
window; keys are written 0600.

Caller: `sparklink.platform.kafka.KafkaCluster` (lays them out under `<state>/tls`), the roller (reads the
client pair) and `sparklink agent` (reads a node's pair and the CA). Like Strimzi's RENEW_CERT, renewing
the CA keeps its key, so certificates it signed before stay valid while each is re-issued.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509

from sparklink.platform import ca

ROLLER_NAME = "sparklink-roller"


@dataclass(frozen=True)
class CertPaths:
    """Where one certificate and its key live, and the CA that vouches for its peers."""

    cert: Path
    key: Path
    ca_cert: Path

    @property
    def keystore(self) -> Path:
        """The key and certificate chain in one PEM file (a Kafka `ssl.keystore.type=PEM` location), written
        by `ensure_broker` and `ensure_client` only."""
        return self.cert.with_suffix(".pem")


@dataclass(frozen=True)
class ClusterCa:
    """The TLS directory of one cluster (`tls_dir`), named `cluster_name` in certificate subjects."""

    tls_dir: Path
    cluster_name: str
    renewal_days: int = ca.RENEWAL_DAYS
    validity_days: int = ca.VALIDITY_DAYS
    label: str = "cluster-ca"  # the CA's common name is "<label> <cluster_name>"

    @property
    def ca_cert(self) -> Path:
        return self.tls_dir / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.tls_dir / "ca.key"

    def node(self, node_id: int) -> CertPaths:
        return CertPaths(self.tls_dir / f"node-{node_id}.crt", self.tls_dir / f"node-{node_id}.key", self.ca_cert)

    @property
    def roller(self) -> CertPaths:
        return CertPaths(self.tls_dir / "roller.crt", self.tls_dir / "roller.key", self.ca_cert)

    def ensure_ca(self, now: dt.datetime | None = None) -> ca.Issued:
        """The CA, made on first use; its certificate is re-signed with the same key inside the renewal window."""
        if not (self.ca_cert.exists() and self.ca_key.exists()):
            issued = ca.new_ca(f"{self.label} {self.cluster_name}", validity_days=self.validity_days, now=now)
            issued.write(self.ca_cert, self.ca_key)
            return issued
        current = ca.Issued.read(self.ca_cert, self.ca_key)
        if ca.needs_renewal(current.cert_pem, self.renewal_days, now):
            renewed = ca.renew_ca(current, validity_days=self.validity_days, now=now)
            renewed.write(self.ca_cert, self.ca_key)
            return renewed
        return current

    def ensure_node(self, node_id: int, hosts: tuple[str, ...] = (), now: dt.datetime | None = None) -> CertPaths:
        """A node agent's server certificate for loopback, localhost, the node's name and `hosts`."""
        names = (*ca.LOOPBACK_HOSTS, f"node-{node_id}", *hosts)
        paths = self.node(node_id)
        self._ensure_leaf(paths, f"{self.cluster_name}-node-{node_id}", names, server=True, client=False, now=now)
        return paths

    def ensure_roller(self, now: dt.datetime | None = None) -> CertPaths:
        """The roller's client certificate (CN=sparklink-roller)."""
        self._ensure_leaf(self.roller, ROLLER_NAME, (), server=False, client=True, now=now)
        return self.roller

    def broker(self, node_id: int) -> CertPaths:
        return CertPaths(self.tls_dir / f"broker-{node_id}.crt", self.tls_dir / f"broker-{node_id}.key", self.ca_cert)

    def ensure_broker(self, node_id: int, hosts: tuple[str, ...] = (), now: dt.datetime | None = None) -> CertPaths:
        """A Kafka node's certificate: serves its listeners (loopback, localhost, `node-<id>`, `hosts`) and
        authenticates it to the other nodes on the mutual-TLS controller and replication listeners."""
        names = (*ca.LOOPBACK_HOSTS, f"node-{node_id}", *hosts)
        paths = self.broker(node_id)
        self._ensure_leaf(paths, f"{self.cluster_name}-kafka-{node_id}", names, server=True, client=True, now=now)
        self._write_keystore(paths)
        return paths

    def client(self, name: str) -> CertPaths:
        return CertPaths(self.tls_dir / f"{name}.crt", self.tls_dir / f"{name}.key", self.ca_cert)

    def ensure_client(self, name: str, now: dt.datetime | None = None) -> CertPaths:
        """A client certificate with CN=`name` (a user of a mutual-TLS listener, the platform's own client)."""
        paths = self.client(name)
        self._ensure_leaf(paths, name, (), server=False, client=True, now=now)
        self._write_keystore(paths)
        return paths

    def _write_keystore(self, paths: CertPaths) -> None:
        content = paths.key.read_bytes() + paths.cert.read_bytes()
        if not paths.keystore.exists() or paths.keystore.read_bytes() != content:
            ca.write_private(paths.keystore, content)

    def _ensure_leaf(
        self,
        paths: CertPaths,
        common_name: str,
        hosts: tuple[str, ...],
        *,
        server: bool,
        client: bool,
        now: dt.datetime | None,
    ) -> None:
        authority = self.ensure_ca(now)
        if paths.cert.exists() and paths.key.exists():
            pem = paths.cert.read_bytes()
            if (
                ca.signed_by(pem, authority.cert_pem)
                and not ca.needs_renewal(pem, self.renewal_days, now)
                and set(hosts) <= _sans(pem)
            ):
                return
        leaf = ca.issue(
            authority,
            common_name,
            hosts=hosts,
            server=server,
            client=client,
            validity_days=self.validity_days,
            now=now,
        )
        leaf.write(paths.cert, paths.key)


def _sans(cert_pem: bytes) -> set[str]:
    cert = x509.load_pem_x509_certificate(cert_pem)
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    return {str(v) for v in ext.get_values_for_type(x509.DNSName)} | {
        str(v) for v in ext.get_values_for_type(x509.IPAddress)
    }
