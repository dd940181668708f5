"""A KafkaUser's credentials as Strimzi's KafkaUserModel makes them: a SCRAM password, or a TLS certificate.

- password: the one `password.valueFrom.secretKeyRef` names (its Secret and key must exist and hold a
  non-empty password), else the one already in the user's Secret, else a new one (32 letters and digits);
- certificate: from the Kafka's clients CA (`<cluster>-clients-ca-cert`, `<cluster>-clients-ca`), subject
  `CN=<user>` with no organization, valid `authentication.validityDays` (else the clients CA's), kept while
  the user's Secret holds it with the clients CA's current `ca.crt`, it is not inside its renewal window and
  the Secret is not annotated `strimzi.io/force-renew`; with `user.p12`/`user.password` (PKCS12).
Caller: `reconcile.kafka_user`.
"""

from __future__ import annotations

import datetime as dt

from sparklink.operator.model import certificate_authority as cas
from sparklink.operator.model import kafka_user as model
from sparklink.operator.model.conditions import REASON_INVALID_RESOURCE, ReconcileFailure
from sparklink.operator.model.resources import Resource, Secret
from sparklink.operator.reconcile.kafka_ca import new_password
from sparklink.operator.reconcile.ports import Store
from sparklink.platform import ca

PASSWORD_LENGTH = 32


def password(store: Store, desired: model.DesiredUser, current: Secret | None) -> str:
    if desired.password_ref is not None:
        name, key = desired.password_ref
        source = store.secret(desired.namespace, name)
        if source is None:
            raise ReconcileFailure(
                f"Secret {name} with requested user password does not exist.", REASON_INVALID_RESOURCE
            )
        value = source.data.get(key)
        if value is None:
            raise ReconcileFailure(
                f"Secret {name} does not contain the key {key} with requested user password.", REASON_INVALID_RESOURCE
            )
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            raise ReconcileFailure(
                f"The requested user password in Secret {name} is not UTF-8 text.", REASON_INVALID_RESOURCE
            ) from None
        model.check_password(text, f"Secret {name}")
        return text
    kept = current.text("password") if current is not None else None
    return kept if kept else new_password(PASSWORD_LENGTH)


def certificate(
    store: Store, kafka: Resource, desired: model.DesiredUser, current: Secret | None, now: dt.datetime
) -> dict[str, bytes]:
    authority, config = _clients_ca(store, kafka)
    validity = desired.validity_days or config.validity_days
    renewal = desired.renewal_days or config.renewal_days
    if current is not None and not cas.annotation_true(current.annotations, cas.FORCE_RENEW):
        crt, key = current.data.get("user.crt"), current.data.get("user.key")
        if crt and key and current.data.get("ca.crt") == authority.cert_pem and not ca.needs_renewal(crt, renewal, now):
            p12, store_password = current.data.get("user.p12"), current.data.get("user.password")
            if not (p12 and store_password):
                pw = new_password()
                p12, store_password = ca.keystore_p12(ca.Issued(crt, key), desired.name, pw), pw.encode()
            return {
                "ca.crt": authority.cert_pem,
                "user.crt": crt,
                "user.key": key,
                "user.p12": p12,
                "user.password": store_password,
            }
    leaf = ca.issue(authority, desired.name, organizations=(), client=True, validity_days=validity, now=now)
    pw = new_password()
    return {
        "ca.crt": authority.cert_pem,
        "user.crt": leaf.cert_pem,
        "user.key": leaf.key_pem,
        "user.p12": ca.keystore_p12(leaf, desired.name, pw),
        "user.password": pw.encode(),
    }


def _clients_ca(store: Store, kafka: Resource) -> tuple[ca.Issued, cas.CaConfig]:
    """The clients CA from its Secrets, as Strimzi's User Operator reads it (InvalidCertificateException)."""
    cert_name = cas.cert_secret_name(kafka.name, cas.Role.CLIENTS)
    key_name = cas.key_secret_name(kafka.name, cas.Role.CLIENTS)
    cert_secret, key_secret = store.secret(kafka.namespace, cert_name), store.secret(kafka.namespace, key_name)
    if cert_secret is None or not cert_secret.data.get("ca.crt"):
        raise ReconcileFailure(
            f"The Clients CA Cert Secret {cert_name} is missing or lacks ca.crt", "InvalidCertificateException"
        )
    if key_secret is None or not key_secret.data.get("ca.key"):
        raise ReconcileFailure(
            f"The Clients CA Key Secret {key_name} is missing or lacks ca.key", "InvalidCertificateException"
        )
    config, _ = cas.ca_config(kafka, cas.Role.CLIENTS)
    return ca.Issued(cert_secret.data["ca.crt"], key_secret.data["ca.key"]), config
