"""The cluster CA model: key sizes, extensions, SANs, validity and renewal, without any cluster."""

from __future__ import annotations

import datetime as dt
import ipaddress
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa

from sparklink.platform import ca
from sparklink.platform.cluster_ca import ClusterCa


def test_ca_and_leaves_follow_strimzis_model(tmp_path: Path) -> None:
    cluster = ClusterCa(tmp_path / "tls", "demo")
    node = cluster.ensure_node(3)
    roller = cluster.ensure_roller()

    authority = x509.load_pem_x509_certificate(cluster.ca_cert.read_bytes())
    key = authority.public_key()
    assert isinstance(key, rsa.RSAPublicKey) and key.key_size == 4096
    constraints = authority.extensions.get_extension_for_class(x509.BasicConstraints)
    assert constraints.critical and constraints.value.ca and constraints.value.path_length == 0
    assert (authority.not_valid_after_utc - authority.not_valid_before_utc).days == ca.VALIDITY_DAYS

    server = x509.load_pem_x509_certificate(node.cert.read_bytes())
    server_key = server.public_key()
    assert isinstance(server_key, rsa.RSAPublicKey) and server_key.key_size == 2048
    sans = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(sans.get_values_for_type(x509.DNSName)) == {"localhost", "node-3"}
    assert ipaddress.ip_address("127.0.0.1") in sans.get_values_for_type(x509.IPAddress)
    assert ca.signed_by(node.cert.read_bytes(), cluster.ca_cert.read_bytes())
    assert node.key.stat().st_mode & 0o777 == 0o600

    client = x509.load_pem_x509_certificate(roller.cert.read_bytes())
    usages = client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]
    assert client.subject.rfc4514_string() == "CN=sparklink-roller,O=io.sparklink"


def test_certificates_are_kept_until_the_renewal_window_then_renewed(tmp_path: Path) -> None:
    cluster = ClusterCa(tmp_path / "tls", "demo")
    node = cluster.ensure_node(1)
    first_ca, first_node = cluster.ca_cert.read_bytes(), node.cert.read_bytes()

    cluster.ensure_node(1)
    assert (cluster.ca_cert.read_bytes(), node.cert.read_bytes()) == (first_ca, first_node)

    inside_window = dt.datetime.now(dt.UTC) + dt.timedelta(days=ca.VALIDITY_DAYS - ca.RENEWAL_DAYS + 1)
    assert ca.needs_renewal(first_node, now=inside_window)
    cluster.ensure_node(1, now=inside_window)
    renewed_ca, renewed_node = cluster.ca_cert.read_bytes(), node.cert.read_bytes()
    assert renewed_ca != first_ca and renewed_node != first_node
    assert not ca.needs_renewal(renewed_node, now=inside_window)
    # The CA kept its key: what it signed before still verifies against the renewed certificate.
    assert ca.signed_by(first_node, renewed_ca)


def test_a_new_host_name_reissues_the_node_certificate(tmp_path: Path) -> None:
    cluster = ClusterCa(tmp_path / "tls", "demo")
    before = cluster.ensure_node(2).cert.read_bytes()
    after = cluster.ensure_node(2, hosts=("broker-2.example",)).cert.read_bytes()
    assert before != after
    sans = x509.load_pem_x509_certificate(after).extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert "broker-2.example" in sans.value.get_values_for_type(x509.DNSName)


def test_another_ca_did_not_sign_our_certificates(tmp_path: Path) -> None:
    ours = ClusterCa(tmp_path / "a", "a")
    theirs = ca.new_ca("other", key_type=ca.KeyType.EC)
    leaf = ca.issue(theirs, "intruder", client=True)
    assert not ca.signed_by(leaf.cert_pem, ours.ensure_ca().cert_pem)
    assert ca.signed_by(leaf.cert_pem, theirs.cert_pem)


def test_broker_and_client_certificates_for_secured_listeners(tmp_path: Path) -> None:
    cluster = ClusterCa(tmp_path / "tls", "demo")
    clients = ClusterCa(tmp_path / "tls" / "clients-ca", "demo", label="clients-ca")
    broker = cluster.ensure_broker(2)
    user = clients.ensure_client("alice")

    cert = x509.load_pem_x509_certificate(broker.cert.read_bytes())
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(usages) == {x509.oid.ExtendedKeyUsageOID.SERVER_AUTH, x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH}
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {"localhost", "node-2"} <= set(sans.get_values_for_type(x509.DNSName))
    for paths in (broker, user):
        assert paths.keystore.read_bytes() == paths.key.read_bytes() + paths.cert.read_bytes()
        assert paths.keystore.stat().st_mode & 0o777 == 0o600
    authority = x509.load_pem_x509_certificate(clients.ca_cert.read_bytes())
    assert authority.subject.rfc4514_string() == "CN=clients-ca demo,O=io.sparklink"
    assert ca.signed_by(user.cert.read_bytes(), clients.ca_cert.read_bytes())
    assert not ca.signed_by(user.cert.read_bytes(), cluster.ca_cert.read_bytes())


def test_a_renewed_ca_certificate_reissues_the_leaves_it_signed_before(tmp_path: Path) -> None:
    cluster = ClusterCa(tmp_path / "tls", "demo")
    first = cluster.ensure_broker(1).cert.read_bytes()
    assert cluster.ensure_broker(1).cert.read_bytes() == first  # kept while the CA certificate is the same
    later = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=30)
    ca.renew_ca(cluster.ensure_ca(), now=later).write(cluster.ca_cert, cluster.ca_key)
    second = cluster.ensure_broker(1, now=later).cert.read_bytes()
    assert second != first
    assert ca.signed_by(first, cluster.ca_cert.read_bytes())  # the old leaf still verifies: same key
    subjects = {x509.load_pem_x509_certificate(pem).subject.rfc4514_string() for pem in (first, second)}
    assert subjects == {"CN=demo-kafka,O=io.sparklink"}  # every node's broker certificate: one principal


def test_a_managed_ca_is_only_installed_never_made_or_renewed(tmp_path: Path) -> None:
    managed = ClusterCa(tmp_path / "tls", "demo", renewal_days=30, validity_days=40, managed=True)
    with pytest.raises(FileNotFoundError, match="managed by its owner"):
        managed.ensure_ca()
    authority = ca.new_ca("cluster-ca v0", validity_days=40)
    assert managed.install(authority) and not managed.install(authority)
    inside_window = dt.datetime.now(dt.UTC) + dt.timedelta(days=20)
    assert managed.ensure_ca(now=inside_window) == authority
    assert managed.ca_key.stat().st_mode & 0o777 == 0o600


def test_a_certificate_beside_another_certificates_key_is_issued_again(tmp_path: Path) -> None:
    """A pair left mismatched (two issuers racing, a crash between the two files) is no pair a client can
    use: the next ensure issues a new one instead of keeping it because the certificate alone looks valid."""
    cluster = ClusterCa(tmp_path / "tls", "demo")
    paths = cluster.ensure_client("app")
    cluster.ensure_client("other").key.replace(paths.key)
    assert not ca.key_matches(paths.cert.read_bytes(), paths.key.read_bytes())
    again = cluster.ensure_client("app")
    assert ca.key_matches(again.cert.read_bytes(), again.key.read_bytes())
    assert again.keystore.read_bytes() == again.key.read_bytes() + again.cert.read_bytes()


def test_threads_ensuring_one_certificate_at_once_end_with_one_matching_pair(tmp_path: Path) -> None:
    cluster = ClusterCa(tmp_path / "tls", "demo")
    cluster.ensure_ca()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: cluster.ensure_client("platform"), range(8)))
    paths = cluster.client("platform")
    assert ca.key_matches(paths.cert.read_bytes(), paths.key.read_bytes())
    assert paths.keystore.read_bytes() == paths.key.read_bytes() + paths.cert.read_bytes()


def test_secrets_are_written_owner_only_and_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "secret.key"
    path.write_bytes(b"old")
    inode = path.stat().st_ino
    ca.write_private(path, b"new")
    assert path.read_bytes() == b"new" and path.stat().st_mode & 0o777 == 0o600
    assert path.stat().st_ino != inode  # a new file renamed over the old: no reader sees it half-written
    assert [p.name for p in tmp_path.iterdir()] == ["secret.key"]  # no temporary file left
