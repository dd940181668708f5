"""A Kafka's two certificate authorities as Strimzi keeps them: their Secrets, settings and renewal. Pure.

Strimzi's model (Ca / InternalCa / CaProvider), which the reconciler (`reconcile.kafka_ca`) carries out:
- each Kafka has a cluster CA (it signs the nodes' certificates, which clients trust) and a clients CA (it
  signs users' certificates, which mutual-TLS listeners trust), in Secrets `<cluster>-cluster-ca-cert`
  (`ca.crt`, `ca.p12`, `ca.password`) and `<cluster>-cluster-ca` (`ca.key`), `<cluster>-clients-ca-cert` and
  `<cluster>-clients-ca`, labelled as Strimzi labels them and owned by the Kafka unless
  `generateSecretOwnerReference: false`;
- `spec.clusterCa` / `spec.clientsCa`: `validityDays` (365), `renewalDays` (30), `generateCertificateAuthority`
  (true; false: the user provides both Secrets, and a missing one makes the Kafka NotReady);
- the cert Secret carries `strimzi.io/ca-cert-generation`, the key Secret `strimzi.io/ca-key-generation`;
  each renewal increments the certificate generation. Renewal happens once the certificate is inside its
  renewal window, or at once when the cert Secret is annotated `strimzi.io/force-renew: "true"`, and keeps
  the CA key (Strimzi's default `certificateExpirationPolicy: renew-certificate`): what the old certificate
  signed still verifies, so clients that trust either keep working while the nodes get new certificates.
  Replacing the key (`replace-key`, `strimzi.io/force-replace`) is not done here; a Warning says so.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparklink.operator.model.conditions import REASON_INVALID_RESOURCE, Condition, ReconcileFailure, warning
from sparklink.operator.model.resources import Resource

CA_CERT_GENERATION = "strimzi.io/ca-cert-generation"
CA_KEY_GENERATION = "strimzi.io/ca-key-generation"
FORCE_RENEW = "strimzi.io/force-renew"
FORCE_REPLACE = "strimzi.io/force-replace"
CLUSTER_CA_CERT_GENERATION = "strimzi.io/cluster-ca-cert-generation"
CLIENTS_CA_CERT_GENERATION = "strimzi.io/clients-ca-cert-generation"
CLUSTER_CA_KEY_GENERATION = "strimzi.io/cluster-ca-key-generation"
VALIDITY_DAYS = 365
RENEWAL_DAYS = 30
MANAGED_BY = "sparklink-operator"


class Role(enum.Enum):
    CLUSTER = "cluster-ca"
    CLIENTS = "clients-ca"

    @property
    def title(self) -> str:
        return "Cluster CA" if self is Role.CLUSTER else "Clients CA"

    @property
    def field(self) -> str:
        return "clusterCa" if self is Role.CLUSTER else "clientsCa"


class Renewal(enum.Enum):
    NOOP = "noop"
    CREATE = "create"
    RENEW_CERT = "renew-cert"


@dataclass(frozen=True)
class CaConfig:
    """`spec.clusterCa` or `spec.clientsCa`."""

    validity_days: int = VALIDITY_DAYS
    renewal_days: int = RENEWAL_DAYS
    generate: bool = True
    owner_reference: bool = True


@dataclass(frozen=True)
class Authority:
    """One CA as the reconcile leaves it: PEM certificate and key, and their generations."""

    cert_pem: bytes
    key_pem: bytes
    cert_generation: int
    key_generation: int


@dataclass(frozen=True)
class Authorities:
    cluster: Authority
    clients: Authority
    cluster_config: CaConfig = CaConfig()
    clients_config: CaConfig = CaConfig()


def cert_secret_name(cluster: str, role: Role) -> str:
    return f"{cluster}-{role.value}-cert"


def key_secret_name(cluster: str, role: Role) -> str:
    return f"{cluster}-{role.value}"


def secret_labels(kafka: Resource) -> dict[str, str]:
    """Strimzi's `Labels.generateDefaultLabels(kafka, "strimzi", "certificate-authority", ...)`."""
    return {
        **{k: v for k, v in kafka.labels.items() if not _excluded_label(k)},
        "strimzi.io/kind": kafka.kind,
        "strimzi.io/name": "strimzi",
        "strimzi.io/cluster": kafka.name,
        "strimzi.io/component-type": "certificate-authority",
        "app.kubernetes.io/name": "certificate-authority",
        "app.kubernetes.io/instance": kafka.name,
        "app.kubernetes.io/part-of": f"strimzi-{kafka.name}"[:63],
        "app.kubernetes.io/managed-by": MANAGED_BY,
    }


def _excluded_label(key: str) -> bool:
    # Strimzi's STRIMZI_LABELS_EXCLUSION_PATTERN: app.kubernetes.io/* (but part-of) are not copied.
    return key.startswith("app.kubernetes.io/") and key != "app.kubernetes.io/part-of"


def ca_config(kafka: Resource, role: Role) -> tuple[CaConfig, list[Condition]]:
    """The CA's settings from `spec.clusterCa` / `spec.clientsCa`; InvalidResourceException when renewal would
    never end, Warnings for what is not done."""
    raw = kafka.spec.get(role.field)
    if raw is None:
        return CaConfig(), []
    if not isinstance(raw, Mapping):
        raise ReconcileFailure(f"spec.{role.field} must be an object", REASON_INVALID_RESOURCE)
    validity = _days(raw, "validityDays", VALIDITY_DAYS, role)
    renewal = _days(raw, "renewalDays", RENEWAL_DAYS, role)
    if renewal >= validity:
        raise ReconcileFailure(
            f"spec.{role.field}.renewalDays ({renewal}) must be smaller than validityDays ({validity}): a certificate "
            "would be inside its renewal window as soon as it is made, and the CA renewed (and the cluster rolled) "
            "at every reconciliation",
            REASON_INVALID_RESOURCE,
        )
    notes = []
    if raw.get("certificateExpirationPolicy") == "replace-key":
        notes.append(
            warning(
                "UnsupportedField",
                f"spec.{role.field}.certificateExpirationPolicy replace-key is not supported by sparklink yet: the "
                f"{role.title} certificate is renewed with its key kept (renew-certificate).",
            )
        )
    config = CaConfig(
        validity,
        renewal,
        raw.get("generateCertificateAuthority", True) is not False,
        raw.get("generateSecretOwnerReference", True) is not False,
    )
    return config, notes


def _days(raw: Mapping[str, Any], name: str, default: int, role: Role) -> int:
    value = raw.get(name)
    if value is None or value == 0:  # Strimzi: 0 (not set) means the default
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ReconcileFailure(
            f"spec.{role.field}.{name} must be a whole number of days, 1 or more", REASON_INVALID_RESOURCE
        )
    return value


def renewal(
    config: CaConfig,
    has_key: bool,
    not_after: dt.datetime | None,
    force_renew: bool,
    now: dt.datetime,
) -> tuple[Renewal, str]:
    """What to do with a generated CA (Strimzi's InternalCa.shouldCreateOrRenew without maintenance windows),
    and why. `not_after` is None when the cert Secret has no certificate."""
    if not has_key:
        return Renewal.CREATE, "the CA key Secret is missing or lacks ca.key"
    if not_after is None:
        return Renewal.RENEW_CERT, "the CA certificate Secret is missing or lacks ca.crt"
    if force_renew:
        return Renewal.RENEW_CERT, f"the CA certificate Secret is annotated with {FORCE_RENEW}"
    if now > not_after - dt.timedelta(days=config.renewal_days):
        return Renewal.RENEW_CERT, f"within the renewal period of the CA certificate (expires on {not_after:%Y-%m-%d})"
    return Renewal.NOOP, "the CA key and certificate exist and need no renewal"


def generation(annotations: Mapping[str, str], name: str) -> int:
    """A generation annotation's value (0 when absent or not a number, as Strimzi reads it)."""
    try:
        return int(annotations.get(name, "0"))
    except ValueError:
        return 0


def annotation_true(annotations: Mapping[str, str], name: str) -> bool:
    return annotations.get(name, "").strip().lower() == "true"
