"""A KafkaUser -> the user Strimzi's User Operator would make: its principal, credentials, ACLs and Secret. Pure.

As Strimzi (KafkaUserModel, SimpleAclRule, SimpleAclRuleResource):
- the user belongs to the Kafka its `strimzi.io/cluster` label names; its name is its user name: `<name>` for
  SCRAM-SHA-512, `CN=<name>` for `tls` and `tls-external` (the subject of a clients-CA certificate with no
  organization, as a broker's default principal builder names it); TLS user names are at most 64 characters;
- `authentication.type: scram-sha-512`: a generated password (kept once made) or `password.valueFrom.
  secretKeyRef`; Secret `<name>` with `password` and `sasl.jaas.config`. `tls`: Secret `<name>` with `ca.crt`,
  `user.crt`, `user.key`, `user.p12`, `user.password`, from the clients CA. `tls-external`: no Secret;
- `authorization.type: simple`: each rule's operations become one ACL each, `type` allow (default) or deny,
  `host` `*` by default, resources topic / group / transactionalId (literal or prefix) and cluster
  (`kafka-cluster`). ACLs of the other user-name form are removed (a user that switches from SCRAM to TLS);
- the Secret is labelled like Strimzi's (the KafkaUser's labels, `strimzi.io/kind: KafkaUser`, the
  user operator's app labels) and `spec.template.secret.metadata` adds labels and annotations.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sparklink.operator.model.conditions import REASON_INVALID_RESOURCE, ReconcileFailure
from sparklink.operator.model.resources import Resource

CLUSTER_LABEL = "strimzi.io/cluster"
USER_OPERATOR = "strimzi-user-operator"
TLS, TLS_EXTERNAL, SCRAM_SHA_512 = "tls", "tls-external", "scram-sha-512"
AUTHENTICATION_TYPES = (TLS, TLS_EXTERNAL, SCRAM_SHA_512)
OPERATIONS = (
    "Read", "Write", "Create", "Delete", "Alter", "Describe", "ClusterAction", "AlterConfigs", "DescribeConfigs",
    "IdempotentWrite", "All",
)  # fmt: skip
RESOURCE_TYPES = ("topic", "group", "cluster", "transactionalId")
CLUSTER_RESOURCE = "kafka-cluster"
MAX_TLS_NAME = 64  # OpenSslCertIssuer.MAXIMUM_CN_LENGTH
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True, order=True)
class AclRule:
    """One ACL: Strimzi's SimpleAclRule (one operation), named as Kafka's Admin API names it."""

    resource_type: str  # topic | group | cluster | transactionalId
    name: str
    pattern: str  # literal | prefix
    operation: str  # Strimzi's operation names (Read, Write, ...)
    permission: str  # allow | deny
    host: str


@dataclass(frozen=True)
class DesiredUser:
    namespace: str
    name: str
    cluster: str
    authentication: str | None
    password_ref: tuple[str, str] | None = None  # (Secret name, key) of a requested SCRAM password
    acls: tuple[AclRule, ...] | None = None  # None: no simple authorization asked for
    quotas: Mapping[str, float] = field(default_factory=dict)
    validity_days: int | None = None  # of a TLS user's certificate (default: the clients CA's)
    renewal_days: int | None = None
    secret_labels: Mapping[str, str] = field(default_factory=dict)
    secret_annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def username(self) -> str:
        return tls_username(self.name) if self.authentication in (TLS, TLS_EXTERNAL) else self.name

    @property
    def other_username(self) -> str:
        """The user name of the other authentication kind, whose ACLs must go."""
        return self.name if self.username != self.name else tls_username(self.name)

    @property
    def secret_name(self) -> str | None:
        return self.name if self.authentication in (TLS, SCRAM_SHA_512) else None


def tls_username(name: str) -> str:
    return f"CN={name}"


def invalid(message: str) -> ReconcileFailure:
    return ReconcileFailure(message, REASON_INVALID_RESOURCE)


def desired_user(user: Resource) -> DesiredUser:
    """The user `user` describes; InvalidResourceException (NotReady) when it cannot be made."""
    cluster = user.labels.get(CLUSTER_LABEL) or ""
    auth = user.spec.get("authentication")
    kind = auth.get("type") if isinstance(auth, Mapping) else None
    if auth is not None and kind not in AUTHENTICATION_TYPES:
        raise invalid(
            f"KafkaUser {user.namespace}/{user.name}: authentication type {kind!r} is not one of {AUTHENTICATION_TYPES}"
        )
    if kind in (TLS, TLS_EXTERNAL) and len(user.name) > MAX_TLS_NAME:
        raise invalid(
            "Users with TLS client authentication can have a username (name of the KafkaUser custom resource) only "
            "up to 64 characters long."
        )
    password_ref = _password_ref(auth) if kind == SCRAM_SHA_512 and isinstance(auth, Mapping) else None
    template = ((user.spec.get("template") or {}).get("secret") or {}).get("metadata") or {}
    return DesiredUser(
        namespace=user.namespace,
        name=user.name,
        cluster=cluster,
        authentication=kind,
        password_ref=password_ref,
        acls=_acls(user.spec.get("authorization")),
        quotas=_quotas(user.spec.get("quotas")),
        validity_days=_int(auth, "validityDays") if kind == TLS else None,
        renewal_days=_int(auth, "renewalDays") if kind == TLS else None,
        secret_labels=_strings(template.get("labels")),
        secret_annotations=_strings(template.get("annotations")),
    )


def _password_ref(auth: Mapping[str, Any]) -> tuple[str, str] | None:
    password = auth.get("password")
    if password is None:
        return None
    ref = ((password.get("valueFrom") or {}).get("secretKeyRef") or {}) if isinstance(password, Mapping) else {}
    if not (isinstance(ref, Mapping) and ref.get("name") and ref.get("key")):
        raise invalid("Resource requests custom SCRAM-SHA-512 password but doesn't specify the secret name and/or key")
    return str(ref["name"]), str(ref["key"])


def _acls(raw: Any) -> tuple[AclRule, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or raw.get("type") != "simple":
        kind = raw.get("type") if isinstance(raw, Mapping) else raw
        raise invalid(f"authorization type {kind!r} is not supported: use type simple")
    rules: set[AclRule] = set()
    for rule in raw.get("acls") or []:
        resource = rule.get("resource") if isinstance(rule, Mapping) else None
        if not isinstance(resource, Mapping) or resource.get("type") not in RESOURCE_TYPES:
            raise invalid(f"each ACL rule needs a resource of type {', '.join(RESOURCE_TYPES)}")
        kind = str(resource["type"])
        name = CLUSTER_RESOURCE if kind == "cluster" else resource.get("name")
        if not isinstance(name, str) or not name or _CONTROL.search(name):
            raise invalid(f"an ACL rule's {kind} resource needs a name (without control characters)")
        pattern = "literal" if kind == "cluster" else str(resource.get("patternType") or "literal")
        permission = str(rule.get("type") or "allow")
        host = str(rule.get("host") or "*")
        operations = rule.get("operations") or []
        if pattern not in ("literal", "prefix") or permission not in ("allow", "deny") or _CONTROL.search(host):
            raise invalid("an ACL rule's patternType must be literal or prefix, its type allow or deny")
        unknown = [o for o in operations if o not in OPERATIONS]
        if not operations or unknown:
            raise invalid(f"an ACL rule needs operations from {', '.join(OPERATIONS)} (not {unknown or 'none'})")
        rules |= {AclRule(kind, name, pattern, str(o), permission, host) for o in operations}
    return tuple(sorted(rules))


QUOTA_KEYS = {
    "producerByteRate": "producer_byte_rate",
    "consumerByteRate": "consumer_byte_rate",
    "requestPercentage": "request_percentage",
    "controllerMutationRate": "controller_mutation_rate",
}


def _quotas(raw: Any) -> dict[str, float]:
    if not isinstance(raw, Mapping):
        return {}
    return {
        kafka_key: float(raw[key])
        for key, kafka_key in QUOTA_KEYS.items()
        if isinstance(raw.get(key), int | float) and not isinstance(raw.get(key), bool)
    }


def _int(raw: Any, key: str) -> int | None:
    value = raw.get(key) if isinstance(raw, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _strings(raw: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}


def secret_labels(user: Resource, desired: DesiredUser) -> dict[str, str]:
    """Strimzi's labels of a user's Secret (KafkaUserModel: the user's labels plus the operator's)."""
    own = {
        k: v
        for k, v in user.labels.items()
        if not (k.startswith("app.kubernetes.io/") and k != "app.kubernetes.io/part-of")
    }
    return {
        **own,
        "strimzi.io/kind": user.kind,
        "app.kubernetes.io/name": USER_OPERATOR,
        "app.kubernetes.io/instance": user.name,
        "app.kubernetes.io/part-of": f"strimzi-{user.name}"[:63],
        "app.kubernetes.io/managed-by": USER_OPERATOR,
        **desired.secret_labels,
    }


def jaas_config(username: str, password: str) -> str:
    """Strimzi's `sasl.jaas.config` for a SCRAM user; quotes and backslashes escaped for Kafka's JAAS parser."""

    def quote(text: str) -> str:
        return text.replace("\\", "\\\\").replace('"', '\\"')

    module = "org.apache.kafka.common.security.scram.ScramLoginModule"
    return f'{module} required username="{quote(username)}" password="{quote(password)}";'


def check_password(password: str, where: str) -> None:
    if not password:
        raise invalid("The requested user password is empty.")
    if _CONTROL.search(password):
        raise invalid(f"The requested user password in {where} contains line breaks or control characters.")
