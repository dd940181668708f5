"""The operator's https to its worker groups (issue 29 item 5): each group's REST listener is https with client
certificates required, its trust store holds only the operator's client CA and the group's own CA, its
certificate names the addresses callers use, keys stay in 0600 files or a Secret volume (never in the
ConfigMap), and the operator's client reaches a group over https only, trusting only that group's CA."""

from __future__ import annotations

import datetime as dt
import ssl
import stat
from pathlib import Path

import javaproperties
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID

from sparklink.operator.hosting import rest_tls
from sparklink.operator.hosting.kubernetes import CONFIG_FILE, desired_objects
from sparklink.operator.model import connect_objects, workers
from sparklink.operator.model import rest_tls as listener
from sparklink.operator.model.resources import Key, Resource
from sparklink.platform import ca
from tests.unit.operator.test_connect_workers import connect_body

KEY = Key("KafkaConnect", "ns", "my-connect")


@pytest.fixture(scope="module")
def identity(tmp_path_factory: pytest.TempPathFactory) -> rest_tls.OperatorIdentity:
    return rest_tls.OperatorIdentity(tmp_path_factory.mktemp("operator") / rest_tls.CLIENT_DIR)


def sans(cert_pem: bytes) -> set[str]:
    names = x509.load_pem_x509_certificate(cert_pem).extensions.get_extension_for_class(x509.SubjectAlternativeName)
    return {str(v) for v in names.value.get_values_for_type(x509.DNSName)} | {
        str(v) for v in names.value.get_values_for_type(x509.IPAddress)
    }


def test_the_listener_is_https_with_client_certificates_required_from_pem_files() -> None:
    settings = listener.listener_settings("127.0.0.1", 41000, "/state/g/rest-tls")
    assert settings["listeners"] == "https://127.0.0.1:41000" and settings["rest.advertised.listener"] == "https"
    assert settings["listeners.https.ssl.client.auth"] == "required"
    assert settings["listeners.https.ssl.keystore.location"] == "/state/g/rest-tls/keystore.pem"
    assert settings["listeners.https.ssl.truststore.location"] == "/state/g/rest-tls/trusted.crt"
    assert settings["listeners.https.ssl.keystore.type"] == settings["listeners.https.ssl.truststore.type"] == "PEM"
    # Host names are checked between local workers; pods, reached by IP, check the chain to the group's CA.
    assert "listeners.https.ssl.endpoint.identification.algorithm" not in settings
    pods = listener.listener_settings("$POD_IP", 8083, "/tls", check_peer_hostname=False)
    assert pods["listeners.https.ssl.endpoint.identification.algorithm"] == ""


def test_the_trust_store_holds_only_the_operator_ca_and_the_groups_own(identity: rest_tls.OperatorIdentity) -> None:
    material = rest_tls.group_material(KEY, listener.LOCAL_HOSTS, identity.ca_pem, None)
    trusted = x509.load_pem_x509_certificates(material[listener.TRUSTED])
    assert [c.subject for c in trusted] == [
        x509.load_pem_x509_certificate(identity.ca_pem).subject,
        x509.load_pem_x509_certificate(material[listener.CA_CERT]).subject,
    ]
    other = rest_tls.group_material(Key("KafkaConnect", "ns", "other"), listener.LOCAL_HOSTS, identity.ca_pem, None)
    # Another group's worker certificate does not chain to this group's trust store.
    assert not any(ca.signed_by(other[listener.CERT], c.public_bytes(serialization.Encoding.PEM)) for c in trusted)
    # The worker's certificate serves and authenticates as a client (forwarded requests), on the loopback names.
    cert = x509.load_pem_x509_certificate(material[listener.CERT])
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(usage) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    assert sans(material[listener.CERT]) == {"127.0.0.1", "localhost"}
    assert b"PRIVATE KEY" in material[listener.KEYSTORE] and b"PRIVATE KEY" not in material[listener.TRUSTED]
    assert listener.CA_KEY not in listener.secret_files(material)  # the workers never get the CA key


def test_material_is_kept_while_it_serves_and_renewed_by_the_same_ca(identity: rest_tls.OperatorIdentity) -> None:
    first = rest_tls.group_material(KEY, listener.LOCAL_HOSTS, identity.ca_pem, None)
    assert rest_tls.group_material(KEY, listener.LOCAL_HOSTS, identity.ca_pem, first) == first
    hosts = connect_objects.rest_hosts(KEY)
    moved = rest_tls.group_material(KEY, hosts, identity.ca_pem, first)
    assert moved[listener.CA_CERT] == first[listener.CA_CERT] and moved[listener.CERT] != first[listener.CERT]
    assert sans(moved[listener.CERT]) == set(hosts)
    assert rest_tls.digest(moved) != rest_tls.digest(first)  # the workers restart with the new certificate
    # A certificate inside its renewal window is re-issued by the same CA, which the operator keeps trusting.
    old = ca.issue(
        ca.Issued(first[listener.CA_CERT], first[listener.CA_KEY]),
        listener.common_name(KEY),
        hosts=listener.LOCAL_HOSTS,
        server=True,
        client=True,
        now=dt.datetime.now(dt.UTC) - dt.timedelta(days=350),
    )
    aged = {**first, listener.CERT: old.cert_pem, listener.KEYSTORE: listener.keystore_pem(old.cert_pem, old.key_pem)}
    renewed = rest_tls.group_material(KEY, listener.LOCAL_HOSTS, identity.ca_pem, aged)
    assert renewed[listener.CERT] != old.cert_pem and ca.signed_by(renewed[listener.CERT], first[listener.CA_CERT])
    assert not ca.needs_renewal(renewed[listener.CERT])


def test_keys_are_written_0600_in_a_0700_directory_and_the_identity_survives_a_restart(
    identity: rest_tls.OperatorIdentity, tmp_path: Path
) -> None:
    for path in identity.directory.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 or not path.name.endswith((".key", ".pem")), path
    assert stat.S_IMODE(identity.directory.stat().st_mode) == 0o700
    again = rest_tls.OperatorIdentity(identity.directory)
    assert again.ca_pem == identity.ca_pem and again.keystore.read_bytes() == identity.keystore.read_bytes()
    group = tmp_path / "rest-tls"
    rest_tls.write_group_dir(group, rest_tls.group_material(KEY, listener.LOCAL_HOSTS, identity.ca_pem, None))
    assert stat.S_IMODE(group.stat().st_mode) == 0o700
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in group.iterdir()} == dict.fromkeys(
        (listener.CA_CERT, listener.CA_KEY, listener.CERT, listener.KEYSTORE, listener.TRUSTED), 0o600
    )
    assert rest_tls.read_group_dir(group) == rest_tls.read_group_dir(group)


def test_the_operator_reaches_a_group_over_https_only_trusting_that_groups_ca(
    identity: rest_tls.OperatorIdentity,
) -> None:
    material = rest_tls.group_material(KEY, listener.LOCAL_HOSTS, identity.ca_pem, None)
    with pytest.raises(ValueError, match="https only"):
        identity.connect("http://127.0.0.1:8083", material[listener.CA_CERT])
    context = identity.context(material[listener.CA_CERT])
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert [c["subject"] for c in context.get_ca_certs()] == [
        ((("organizationName", "io.sparklink"),), (("commonName", f"{listener.common_name(KEY)} REST CA"),))
    ]
    identity.connect("https://127.0.0.1:8083", material[listener.CA_CERT]).close()


def test_pods_mount_their_certificates_from_a_secret_and_the_config_map_holds_no_key() -> None:
    owner = Resource.from_json(connect_body())
    rendered = desired_objects(owner, workers.from_resource(owner), "img", None, "digest-1")
    properties = javaproperties.loads(rendered["ConfigMap"]["data"][CONFIG_FILE])
    assert properties["listeners.https.ssl.client.auth"] == "required"
    assert properties["listeners.https.ssl.keystore.location"] == f"{connect_objects.REST_TLS_DIR}/keystore.pem"
    assert "PRIVATE KEY" not in rendered["ConfigMap"]["data"][CONFIG_FILE]
    template = rendered["Deployment"]["spec"]["template"]
    volumes = {v["name"]: v for v in template["spec"]["volumes"]}
    assert volumes["rest-tls"]["secret"] == {"secretName": "my-connect-connect-rest-certs", "defaultMode": 0o440}
    (container,) = template["spec"]["containers"]
    assert {"name": "rest-tls", "mountPath": connect_objects.REST_TLS_DIR, "readOnly": True} in container[
        "volumeMounts"
    ]
    # The kubelet has no client certificate: its probes open a TCP connection.
    assert container["readinessProbe"]["tcpSocket"] == container["livenessProbe"]["tcpSocket"] == {"port": "rest-api"}
    # A renewed certificate rolls the pods (they read it at start).
    assert template["metadata"]["annotations"][connect_objects.REST_TLS_ANNOTATION] == "digest-1"
    assert set(connect_objects.rest_hosts(owner.key)) >= {f"my-connect-connect-api.{owner.namespace}.svc"}


def test_the_operators_ca_is_renewed_with_its_key_so_its_client_certificate_still_verifies(tmp_path: Path) -> None:
    first = rest_tls.OperatorIdentity(tmp_path / rest_tls.CLIENT_DIR)
    ca_cert, ca_key = first.directory / listener.CA_CERT, first.directory / listener.CA_KEY
    aged = ca.renew_ca(ca.Issued.read(ca_cert, ca_key), now=dt.datetime.now(dt.UTC) - dt.timedelta(days=350))
    ca_cert.write_bytes(aged.cert_pem)
    again = rest_tls.OperatorIdentity(first.directory)
    assert again.ca_pem != aged.cert_pem and not ca.needs_renewal(again.ca_pem)
    assert ca_key.read_bytes() == aged.key_pem
    assert ca.signed_by((again.directory / listener.CERT).read_bytes(), again.ca_pem)
