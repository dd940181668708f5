"""A Kafka cluster's certificate files: its cluster CA, one server certificate per node agent, the roller's
client certificate and, for secured clusters, each node's broker certificate (serving its listeners and
authenticating it to the other nodes) and client certificates (the platform's own, users'). A second
instance with `label="clients-ca"` is the clients CA, which signs users' certificates for mutual-TLS
listeners, as in Strimzi. Created on first use and renewed in place when a certificate enters its renewal
window; keys are written 0600.

Caller: `sparklink.platform.kafka.KafkaCluster` (lays them out under `<state>/tls`), the roller (reads the
client pair) and `sparklink agent` (reads a node's pair and the CA). Like Strimzi's RENEW_CERT, renewing
the CA keeps its key, so certificates it signed before stay valid while each is re-issued: a leaf issued
before the CA's current certificate is issued again at its next `ensure_*`, as Strimzi re-issues the
certificates of an older CA certificate generation.

Every node's broker certificate has the same subject, `CN=<cluster_name>-kafka` (as Strimzi's
`CN=<cluster>-kafka,O=io.strimzi`), so an authorizer names the brokers with one super user. A `managed` CA
belongs to someone else (the operator keeps it in Kubernetes Secrets and installs it with `install`): it is
never made or renewed here.
"""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509

from sparklink.platform import ca

ROLLER_NAME = "sparklink-roller"
# Every check-then-write of this process's certificate files, one at a time: the operator's threads (a Kafka's
# reconcile, its users' reconciles, the roller) ensure the same client certificate at once, and two issuers
# writing one pair could leave one's certificate beside the other's key.
_WRITING = threading.RLock()


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
    managed: bool = False  # installed by its owner (`install`); never made or renewed here

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

    @property
    def broker_subject(self) -> str:
        """The common name of every node's broker certificate (one super user for an authorizer)."""
        return f"{self.cluster_name}-kafka"

    def install(self, authority: ca.Issued) -> bool:
        """Write a managed CA's certificate and key (the key 0600); True when they changed."""
        with _WRITING:
            if (
                self.ca_cert.exists()
                and self.ca_key.exists()
                and self.ca_cert.read_bytes() == authority.cert_pem
                and self.ca_key.read_bytes() == authority.key_pem
            ):
                return False
            authority.write(self.ca_cert, self.ca_key)
            return True

    def ensure_ca(self, now: dt.datetime | None = None) -> ca.Issued:
        """The CA, made on first use; its certificate is re-signed with the same key inside the renewal window.
        A managed CA is only read (its owner installs and renews it)."""
        with _WRITING:
            if self.managed:
                if not (self.ca_cert.exists() and self.ca_key.exists()):
                    raise FileNotFoundError(
                        f"the {self.label} in {self.tls_dir} is managed by its owner and not installed"
                    )
                return ca.Issued.read(self.ca_cert, self.ca_key)
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
        self._ensure_leaf(paths, self.broker_subject, names, server=True, client=True, now=now)
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

    def principal(self, common_name: str) -> str:
        """How a Kafka broker names the holder of a certificate this CA issued with CN=`common_name` (its
        default principal builder: the subject in RFC 2253 order)."""
        return f"User:CN={common_name},O={ca.ORGANIZATION}"

    def _write_keystore(self, paths: CertPaths) -> None:
        with _WRITING:
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
        with _WRITING:
            authority = self.ensure_ca(now)
            if paths.cert.exists() and paths.key.exists():
                pem = paths.cert.read_bytes()
                if (
                    ca.key_matches(pem, paths.key.read_bytes())
                    and ca.signed_by(pem, authority.cert_pem)
                    and not ca.needs_renewal(pem, self.renewal_days, now)
                    and not ca.issued_before(pem, authority.cert_pem)
                    and set(hosts) <= _sans(pem)
                    and _common_name(pem) == common_name
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


def _common_name(cert_pem: bytes) -> str:
    names = x509.load_pem_x509_certificate(cert_pem).subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
    return str(names[0].value) if names else ""
