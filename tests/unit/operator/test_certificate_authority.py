"""A Kafka's cluster and clients CAs in Strimzi's Secrets (model and reconcile, an in-memory store): the
Secrets made on the first reconcile, kept on the next, renewed with the key kept when forced or inside the
renewal window, taken as they are when the user provides them, and the settings Strimzi would refuse."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import pkcs12

from sparklink.operator.model import certificate_authority as model
from sparklink.operator.model.certificate_authority import CaConfig, Renewal, Role
from sparklink.operator.model.conditions import ReconcileFailure
from sparklink.operator.model.resources import Resource
from sparklink.operator.reconcile.kafka_ca import reconcile_cas
from sparklink.platform import ca
from tests.unit.operator.memory_store import MemoryStore

NOW = dt.datetime(2026, 11, 22, 10, 0, tzinfo=dt.UTC)


def kafka(**spec: Any) -> Resource:
    return Resource.from_json(
        {
            "kind": "Kafka",
            "apiVersion": "kafka.strimzi.io/v1",
            "metadata": {"namespace": "ns", "name": "my-cluster", "uid": "uid-k", "generation": 1},
            "spec": {"kafka": {"listeners": []}, **spec},
        }
    )


def test_the_first_reconcile_makes_both_cas_in_strimzis_secrets() -> None:
    store = MemoryStore()
    cas, notes = reconcile_cas(store, kafka(), NOW)
    assert notes == []
    assert sorted(name for _, name in store.secrets) == [
        "my-cluster-clients-ca",
        "my-cluster-clients-ca-cert",
        "my-cluster-cluster-ca",
        "my-cluster-cluster-ca-cert",
    ]
    cert = store.secrets[("ns", "my-cluster-cluster-ca-cert")]
    key = store.secrets[("ns", "my-cluster-cluster-ca")]
    assert set(cert.data) == {"ca.crt", "ca.p12", "ca.password"} and set(key.data) == {"ca.key"}
    assert (cert.annotations, key.annotations) == (
        {"strimzi.io/ca-cert-generation": "0"},
        {"strimzi.io/ca-key-generation": "0"},
    )
    assert cert.labels["strimzi.io/component-type"] == "certificate-authority"
    assert cert.labels["strimzi.io/cluster"] == "my-cluster" and cert.labels["strimzi.io/kind"] == "Kafka"
    (owner,) = cert.owner_references
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("Kafka", "my-cluster", "uid-k", False)
    authority = x509.load_pem_x509_certificate(cert.data["ca.crt"])
    assert authority.subject.rfc4514_string() == "CN=cluster-ca v0,O=io.sparklink"
    assert authority.not_valid_after_utc - authority.not_valid_before_utc >= dt.timedelta(days=365)
    trusted = pkcs12.load_pkcs12(cert.data["ca.p12"], cert.data["ca.password"])
    assert [c.certificate for c in trusted.additional_certs] == [authority]
    assert (cas.cluster.cert_pem, cas.cluster.cert_generation) == (cert.data["ca.crt"], 0)
    assert cas.clients.cert_pem != cas.cluster.cert_pem


def test_a_second_reconcile_keeps_everything() -> None:
    store = MemoryStore()
    first, _ = reconcile_cas(store, kafka(), NOW)
    before = dict(store.secrets)
    second, _ = reconcile_cas(store, kafka(), NOW + dt.timedelta(days=100))
    assert second == first and store.secrets == before


def test_force_renew_renews_the_certificate_with_the_key_kept_and_drops_the_annotation() -> None:
    store = MemoryStore()
    first, _ = reconcile_cas(store, kafka(), NOW)
    name = ("ns", "my-cluster-cluster-ca-cert")
    store.secrets[name] = dataclasses.replace(
        store.secrets[name], annotations={**store.secrets[name].annotations, model.FORCE_RENEW: "true"}
    )
    renewed, _ = reconcile_cas(store, kafka(), NOW + dt.timedelta(minutes=10))
    assert (renewed.cluster.cert_generation, renewed.cluster.key_generation) == (1, 0)
    assert renewed.cluster.key_pem == first.cluster.key_pem and renewed.cluster.cert_pem != first.cluster.cert_pem
    assert store.secrets[name].annotations == {"strimzi.io/ca-cert-generation": "1"}
    old, new = (x509.load_pem_x509_certificate(a.cluster.cert_pem) for a in (first, renewed))
    assert (new.subject, new.public_key()) == (old.subject, old.public_key())
    assert renewed.clients == first.clients  # only the annotated CA


def test_the_renewal_window_renews_and_an_unusable_window_is_refused() -> None:
    store = MemoryStore()
    spec = {"clientsCa": {"validityDays": 10, "renewalDays": 3}}
    first, _ = reconcile_cas(store, kafka(**spec), NOW)
    kept, _ = reconcile_cas(store, kafka(**spec), NOW + dt.timedelta(days=6))
    assert kept.clients.cert_generation == 0
    renewed, _ = reconcile_cas(store, kafka(**spec), NOW + dt.timedelta(days=8))
    assert renewed.clients.cert_generation == 1 and renewed.clients.key_pem == first.clients.key_pem
    assert renewed.cluster.cert_generation == 0
    with pytest.raises(ReconcileFailure) as refused:
        model.ca_config(kafka(clusterCa={"validityDays": 5, "renewalDays": 5}), Role.CLUSTER)
    assert refused.value.message.startswith("spec.clusterCa.renewalDays (5) must be smaller than validityDays (5)")


@pytest.mark.parametrize(
    ("has_key", "not_after", "force", "expected"),
    [
        (False, None, False, Renewal.CREATE),
        (True, None, False, Renewal.RENEW_CERT),
        (True, NOW + dt.timedelta(days=300), True, Renewal.RENEW_CERT),
        (True, NOW + dt.timedelta(days=29), False, Renewal.RENEW_CERT),
        (True, NOW + dt.timedelta(days=31), False, Renewal.NOOP),
    ],
)
def test_renewal_follows_strimzis_order(
    has_key: bool, not_after: dt.datetime | None, force: bool, expected: Renewal
) -> None:
    assert model.renewal(CaConfig(), has_key, not_after, force, NOW)[0] is expected


def test_a_user_provided_ca_is_used_as_is_and_its_absence_is_not_ready() -> None:
    store = MemoryStore()
    spec = {"clusterCa": {"generateCertificateAuthority": False}}
    with pytest.raises(ReconcileFailure) as missing:
        reconcile_cas(store, kafka(**spec), NOW)
    assert missing.value.message.startswith("Cluster CA should not be generated, but the secrets were not found.")
    own = ca.new_ca("my own CA")
    from sparklink.operator.model.resources import Secret

    store.apply_secret(
        Secret(
            "ns", "my-cluster-cluster-ca-cert", {"ca.crt": own.cert_pem}, annotations={model.CA_CERT_GENERATION: "4"}
        )
    )
    store.apply_secret(Secret("ns", "my-cluster-cluster-ca", {"ca.key": own.key_pem}))
    cas, _ = reconcile_cas(store, kafka(**spec), NOW)
    assert (cas.cluster.cert_pem, cas.cluster.key_pem, cas.cluster.cert_generation) == (own.cert_pem, own.key_pem, 4)
    assert store.secrets[("ns", "my-cluster-cluster-ca-cert")].data == {"ca.crt": own.cert_pem}  # not rewritten


def test_what_is_not_done_is_a_warning_and_owner_references_can_be_off() -> None:
    store = MemoryStore()
    spec = {"clusterCa": {"certificateExpirationPolicy": "replace-key", "generateSecretOwnerReference": False}}
    _, notes = reconcile_cas(store, kafka(**spec), NOW)
    assert [n.reason for n in notes] == ["UnsupportedField"]
    assert "replace-key is not supported" in (notes[0].message or "")
    assert store.secrets[("ns", "my-cluster-cluster-ca-cert")].owner_references == ()
    assert store.secrets[("ns", "my-cluster-clients-ca-cert")].owner_references != ()
