"""KafkaUser: Strimzi's User Operator, for the Kafkas this operator runs.

For a KafkaUser labelled `strimzi.io/cluster: <kafka>` (rules in `model.kafka_user`), in Strimzi's order:
the credentials (a SCRAM-SHA-512 password: requested, kept from the user's Secret, or generated; or a TLS
certificate from the Kafka's clients CA, kept while the clients CA certificate and its validity allow) ->
Kafka (SCRAM credentials upserted, or removed when the user is not a SCRAM user; the simple-authorization
ACLs of its user name set, those of the other name form removed) -> the user's Secret (written, or deleted
when the user has none) -> status `username`, `secret`, conditions, observedGeneration. Every Kafka call uses
the operator's own super-user identity (`KafkaHost.admin`).

A deleted KafkaUser's credentials and ACLs are removed from every Kafka of its namespace this operator runs
(the user name is the KafkaUser's name, unique in the namespace), and its Secret is deleted.
Where Strimzi says nothing, this says what to do: a user naming no Kafka, a Kafka not ready yet, ACLs on a
Kafka without `authorization: simple` (Strimzi's message), no listener with the user's authentication.
"""

from __future__ import annotations

import logging

from sparklink.operator.hosting.kafka_user_admin import UserAdmin, UserAdminError
from sparklink.operator.model import kafka_user as model
from sparklink.operator.model.conditions import (
    REASON_INVALID_RESOURCE,
    REASON_NO_SUCH_RESOURCE,
    Condition,
    ReconcileFailure,
    not_ready,
    ready,
    warning,
)
from sparklink.operator.model.resources import KAFKA, Key, Resource, Secret
from sparklink.operator.model.status import KafkaUserStatus
from sparklink.operator.reconcile import kafka_user_credentials as credentials
from sparklink.operator.reconcile.context import Deps, ReconcileResult

log = logging.getLogger("sparklink.operator")

RETRY_SECONDS = 10.0
REASON_KAFKA = "KafkaException"


def reconcile(deps: Deps, key: Key) -> ReconcileResult:
    result = ReconcileResult()
    user = deps.store.get(key)
    if user is None or user.deleting:
        if not _delete(deps, key):
            result.requeue_after = RETRY_SECONDS  # a Kafka did not answer: try again
        return result
    notes: list[Condition] = []
    username = secret_name = None
    try:
        desired = model.desired_user(user)
        kafka = _kafka(deps, user, desired)
        admin_settings = deps.kafka.admin(kafka) if deps.kafka is not None else None
        if admin_settings is None:
            raise ReconcileFailure(
                f"Kafka cluster '{desired.cluster}' has no running broker yet; the user is created once it has",
                REASON_NO_SUCH_RESOURCE,
                retriable=True,
            )
        notes += _checks(kafka, desired)
        admin = deps.user_admin(admin_settings)
        secret = _credentials(deps, user, kafka, desired, admin)
        _acls(admin, desired)
        secret_name = _write_secret(deps, user, desired, secret)
        username = desired.username
        condition = ready()
    except ReconcileFailure as exc:
        condition = not_ready(exc.reason, exc.message)
        result.requeue_after = RETRY_SECONDS if exc.retriable else None
    except UserAdminError as exc:
        condition = not_ready(REASON_KAFKA, str(exc))
        result.requeue_after = RETRY_SECONDS
    status = KafkaUserStatus(
        conditions=[condition, *notes], observed_generation=user.generation, username=username, secret=secret_name
    )
    result.status_written = deps.write_status(user, status)
    if condition.type != "Ready":
        result.failed = True
        # Said once when it becomes so (retries of a user waiting for its Kafka would repeat it).
        log.log(logging.WARNING if result.status_written else logging.DEBUG, "%s: %s", key, condition.message)
    return result


def _kafka(deps: Deps, user: Resource, desired: model.DesiredUser) -> Resource:
    ref = f"{user.namespace}/{user.name}"
    if not desired.cluster:
        raise ReconcileFailure(
            f"KafkaUser {ref} lacks the label '{model.CLUSTER_LABEL}': it belongs to no Kafka cluster. Label it "
            "with the name of its Kafka.",
            REASON_INVALID_RESOURCE,
        )
    kafka = deps.store.get(Key(KAFKA, user.namespace, desired.cluster))
    if kafka is None or deps.kafka is None:
        raise ReconcileFailure(
            f"Kafka cluster '{desired.cluster}' named by label '{model.CLUSTER_LABEL}' of KafkaUser {ref} does not "
            f"exist in namespace {user.namespace}{'' if deps.kafka else ' (this operator runs no Kafka clusters)'}. "
            "Create the Kafka, or fix the label.",
            REASON_NO_SUCH_RESOURCE,
        )  # not retried: the Kafka's first reconcile looks at its users
    return kafka


def _checks(kafka: Resource, desired: model.DesiredUser) -> list[Condition]:
    spec = kafka.spec.get("kafka") or {}
    authorization = spec.get("authorization")
    if desired.acls and not (isinstance(authorization, dict) and authorization.get("type") == "simple"):
        raise ReconcileFailure(
            "Simple authorization ACL rules are configured but not supported in the Kafka cluster configuration. "
            f"Set spec.kafka.authorization.type to simple on Kafka {kafka.name}.",
            REASON_INVALID_RESOURCE,
        )
    notes = []
    kinds = {
        (lst.get("authentication") or {}).get("type") for lst in spec.get("listeners") or [] if isinstance(lst, dict)
    }
    wanted = "tls" if desired.authentication == model.TLS_EXTERNAL else desired.authentication
    if wanted is not None and wanted not in kinds:
        notes.append(
            warning(
                "NoMatchingListener",
                f"No listener of Kafka {kafka.name} has authentication type {wanted}, so no client can log in as "
                f"{desired.username} yet. Add a listener with authentication: {{type: {wanted}}}.",
            )
        )
    if desired.quotas:
        notes.append(
            warning(
                "UnsupportedField",
                "spec.quotas is not applied: the operator's Kafka client (confluent-kafka) has no client-quota API "
                "(AlterClientQuotas). Set the quotas with kafka-configs.sh --entity-type users.",
            )
        )
    return notes


def _credentials(
    deps: Deps, user: Resource, kafka: Resource, desired: model.DesiredUser, admin: UserAdmin
) -> dict[str, bytes] | None:
    """The Secret data of the user's credentials (None: it has no Secret), its SCRAM credentials set in Kafka."""
    current = deps.store.secret(user.namespace, user.name)
    ours = current if current is not None and _ours(current, user) else None
    if desired.authentication == model.SCRAM_SHA_512:
        password = credentials.password(deps.store, desired, ours)
        admin.upsert_scram(desired.name, password)
        return {"password": password.encode(), "sasl.jaas.config": model.jaas_config(desired.name, password).encode()}
    admin.delete_scram(desired.name)
    if desired.authentication == model.TLS:
        return credentials.certificate(deps.store, kafka, desired, ours, deps.clock.now())
    return None


def _acls(admin: UserAdmin, desired: model.DesiredUser) -> None:
    want = set(desired.acls or ())
    principal = f"User:{desired.username}"
    have = admin.acls(principal)
    admin.delete_acls(principal, have - want)
    admin.create_acls(principal, want - have)
    other = f"User:{desired.other_username}"
    admin.delete_acls(other, admin.acls(other))


def _write_secret(deps: Deps, user: Resource, desired: model.DesiredUser, data: dict[str, bytes] | None) -> str | None:
    if data is None:
        current = deps.store.secret(user.namespace, user.name)
        if current is not None and _ours(current, user):
            deps.store.delete_secret(user.namespace, user.name)
        return None
    secret = Secret(
        user.namespace,
        user.name,
        data,
        model.secret_labels(user, desired),
        dict(desired.secret_annotations),
        (user.owner_reference(controller=False),),
    )
    if deps.store.apply_secret(secret):
        log.info("%s/%s: wrote the user's Secret", user.namespace, user.name)
    return user.name


def _ours(secret: Secret, user: Resource) -> bool:
    """A Secret this operator wrote for the user (its labels say so), not one of the user's own."""
    return secret.labels.get("app.kubernetes.io/managed-by") == model.USER_OPERATOR and any(
        o.get("kind") == user.kind and o.get("name") == user.name for o in secret.owner_references
    )


def _delete(deps: Deps, key: Key) -> bool:
    """Remove a deleted user everywhere; False when some Kafka could not be asked (the caller retries)."""
    secret = deps.store.secret(key.namespace, key.name)
    if secret is not None and secret.labels.get("app.kubernetes.io/managed-by") == model.USER_OPERATOR:
        deps.store.delete_secret(key.namespace, key.name)
    if deps.kafka is None:
        return True
    done = True
    for kafka in deps.store.list(KAFKA, key.namespace):
        settings = deps.kafka.admin(kafka)
        if settings is None:
            continue
        try:
            admin = deps.user_admin(settings)
            admin.delete_scram(key.name)
            for principal in (f"User:{key.name}", f"User:{model.tls_username(key.name)}"):
                admin.delete_acls(principal, admin.acls(principal))
            log.info("%s: deleted; its credentials and ACLs were removed from Kafka %s", key, kafka.name)
        except UserAdminError as exc:
            log.warning(
                "%s: deleted, but its credentials or ACLs could not be removed from Kafka %s: %s", key, kafka.name, exc
            )
            done = False
    return done
