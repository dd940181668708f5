"""A Kafka's cluster and clients CAs, kept in Strimzi's Secrets: create them, renew them, read them back.

The first step of a Kafka's reconcile, as Strimzi's CaReconciler is (`model.certificate_authority` holds the
rules). For each CA: read `<cluster>-<role>-cert` and `<cluster>-<role>`; with `generateCertificateAuthority`
create the CA when its key is missing, renew its certificate (same key, generation + 1) when it is inside
its renewal window or the cert Secret says `strimzi.io/force-renew: "true"`, and write both Secrets as
Strimzi writes them (which drops the annotation); without it, use the user's Secrets as they are, and make
the Kafka NotReady when one is missing. The hosts then install the CAs for the nodes and roll the nodes whose
certificates are of an older generation. Caller: `reconcile.kafka`.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
import string

from cryptography import x509

from sparklink.operator.model import certificate_authority as model
from sparklink.operator.model.certificate_authority import Authorities, Authority, CaConfig, Renewal, Role
from sparklink.operator.model.conditions import REASON_INVALID_RESOURCE, Condition, ReconcileFailure, warning
from sparklink.operator.model.resources import Resource, Secret
from sparklink.operator.reconcile.ports import Store
from sparklink.platform import ca

log = logging.getLogger("sparklink.operator")

CA_CRT, CA_KEY, CA_P12, CA_PASSWORD = "ca.crt", "ca.key", "ca.p12", "ca.password"


def reconcile_cas(store: Store, kafka: Resource, now: dt.datetime) -> tuple[Authorities, list[Condition]]:
    """Both CAs of `kafka` as their Secrets hold them after this reconcile, and Warnings for what is ignored."""
    notes: list[Condition] = []
    configs = {}
    for role in Role:
        configs[role], role_notes = model.ca_config(kafka, role)
        notes += role_notes
    cluster = _reconcile(store, kafka, Role.CLUSTER, configs[Role.CLUSTER], now, notes)
    clients = _reconcile(store, kafka, Role.CLIENTS, configs[Role.CLIENTS], now, notes)
    return Authorities(cluster, clients, configs[Role.CLUSTER], configs[Role.CLIENTS]), notes


def _reconcile(
    store: Store, kafka: Resource, role: Role, config: CaConfig, now: dt.datetime, notes: list[Condition]
) -> Authority:
    cert_name, key_name = model.cert_secret_name(kafka.name, role), model.key_secret_name(kafka.name, role)
    cert_secret, key_secret = store.secret(kafka.namespace, cert_name), store.secret(kafka.namespace, key_name)
    cert_pem = cert_secret.data.get(CA_CRT) if cert_secret else None
    key_pem = key_secret.data.get(CA_KEY) if key_secret else None
    cert_generation = model.generation(cert_secret.annotations, model.CA_CERT_GENERATION) if cert_secret else 0
    key_generation = model.generation(key_secret.annotations, model.CA_KEY_GENERATION) if key_secret else 0
    if not config.generate:
        if not (cert_pem and key_pem):
            raise ReconcileFailure(
                f"{role.title} should not be generated, but the secrets were not found. Create Secrets "
                f"{cert_name} (with {CA_CRT}) and {key_name} (with {CA_KEY}), or set "
                f"spec.{role.field}.generateCertificateAuthority to true.",
                REASON_INVALID_RESOURCE,
            )
        return Authority(cert_pem, key_pem, cert_generation, key_generation)
    if key_secret is not None and model.annotation_true(key_secret.annotations, model.FORCE_REPLACE):
        notes.append(
            warning(
                "UnsupportedAnnotation",
                f"{model.FORCE_REPLACE} on Secret {key_name} is not supported by sparklink yet: the {role.title} key "
                f"is kept. Use {model.FORCE_RENEW} on Secret {cert_name} to renew its certificate.",
            )
        )
    force = cert_secret is not None and model.annotation_true(cert_secret.annotations, model.FORCE_RENEW)
    decision, reason = model.renewal(config, bool(key_pem), _not_after(cert_pem), force, now)
    issued: ca.Issued | None = None
    if decision is Renewal.CREATE:
        issued = ca.new_ca(f"{role.value} v{key_generation}", validity_days=config.validity_days, now=now)
    elif decision is Renewal.RENEW_CERT:
        assert key_pem is not None
        subject = f"{role.value} v{key_generation}"
        current = ca.Issued(cert_pem, key_pem) if cert_pem and _not_after(cert_pem) else None
        issued = (
            ca.renew_ca(current, validity_days=config.validity_days, now=now)
            if current
            else ca.certify_key(key_pem, subject, validity_days=config.validity_days, now=now)
        )
        cert_generation += 1
    if issued is not None:
        log.info("%s/%s: %s %s: %s", kafka.namespace, kafka.name, role.title, decision.value, reason)
        cert_pem, key_pem = issued.cert_pem, issued.key_pem
    assert cert_pem is not None and key_pem is not None
    owners = (kafka.owner_reference(controller=False),) if config.owner_reference else ()
    labels = model.secret_labels(kafka)
    store.apply_secret(
        Secret(
            kafka.namespace,
            cert_name,
            _cert_data(cert_pem, cert_secret if issued is None else None),
            labels,
            {model.CA_CERT_GENERATION: str(cert_generation)},
            owners,
        )
    )
    store.apply_secret(
        Secret(
            kafka.namespace,
            key_name,
            {CA_KEY: key_pem},
            labels,
            {model.CA_KEY_GENERATION: str(key_generation)},
            owners,
        )
    )
    return Authority(cert_pem, key_pem, cert_generation, key_generation)


def _cert_data(cert_pem: bytes, kept: Secret | None) -> dict[str, bytes]:
    """`ca.crt` and its PKCS12 trust store; an unchanged certificate keeps its store and password (no churn)."""
    if kept is not None and kept.data.get(CA_CRT) == cert_pem and kept.data.get(CA_P12) and kept.data.get(CA_PASSWORD):
        return {CA_CRT: cert_pem, CA_P12: kept.data[CA_P12], CA_PASSWORD: kept.data[CA_PASSWORD]}
    password = new_password()
    return {CA_CRT: cert_pem, CA_P12: ca.truststore_p12(cert_pem, CA_CRT, password), CA_PASSWORD: password.encode()}


def new_password(length: int = 12) -> str:
    """A store password as Strimzi's PasswordGenerator makes them: letters and digits."""
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(length))


def _not_after(cert_pem: bytes | None) -> dt.datetime | None:
    if not cert_pem:
        return None
    try:
        return x509.load_pem_x509_certificate(cert_pem).not_valid_after_utc
    except ValueError:
        return None
