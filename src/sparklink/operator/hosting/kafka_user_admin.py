"""What the User Operator asks of a Kafka cluster through its Admin API: SCRAM credentials and ACLs.

Strimzi's ScramCredentialsOperator and SimpleAclOperator, on confluent-kafka's AdminClient
(alter_user_scram_credentials, describe/create/delete_acls), with the operator's own client settings for
the cluster (its super-user certificate, `KafkaHost.admin`). Quotas are not here: confluent-kafka 2.16 has no
client-quota API (Kafka's AlterClientQuotas), so `spec.quotas` gets a Warning instead.
Caller: `reconcile.kafka_user`.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, cast

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._acl import AclBinding, AclBindingFilter, AclOperation, AclPermissionType
from confluent_kafka.admin._resource import ResourcePatternType, ResourceType
from confluent_kafka.admin._scram import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialAlteration,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from sparklink.clients.settings import KafkaClientSettings
from sparklink.operator.model.kafka_user import CLUSTER_RESOURCE, AclRule

ITERATIONS = 4096  # Strimzi's ScramCredentialsOperator
_RESOURCES = {
    "topic": ResourceType.TOPIC,
    "group": ResourceType.GROUP,
    "cluster": ResourceType.BROKER,  # librdkafka's name for Kafka's CLUSTER resource (code 4)
    "transactionalId": ResourceType.TRANSACTIONAL_ID,
}
_PATTERNS = {"literal": ResourcePatternType.LITERAL, "prefix": ResourcePatternType.PREFIXED}
_OPERATIONS = {
    "Read": AclOperation.READ,
    "Write": AclOperation.WRITE,
    "Create": AclOperation.CREATE,
    "Delete": AclOperation.DELETE,
    "Alter": AclOperation.ALTER,
    "Describe": AclOperation.DESCRIBE,
    "ClusterAction": AclOperation.CLUSTER_ACTION,
    "AlterConfigs": AclOperation.ALTER_CONFIGS,
    "DescribeConfigs": AclOperation.DESCRIBE_CONFIGS,
    "IdempotentWrite": AclOperation.IDEMPOTENT_WRITE,
    "All": AclOperation.ALL,
}
_PERMISSIONS = {"allow": AclPermissionType.ALLOW, "deny": AclPermissionType.DENY}


class UserAdminError(RuntimeError):
    """Kafka refused or did not answer a request about a user."""


class UserAdmin:
    def __init__(self, settings: KafkaClientSettings, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.describe = settings.describe()
        self._admin = AdminClient(settings.librdkafka(**{"socket.timeout.ms": int(timeout * 1000)}))

    # -- SCRAM credentials ------------------------------------------------------------------------

    def upsert_scram(self, user: str, password: str) -> None:
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, ITERATIONS)
        self._alter([UserScramCredentialUpsertion(user, info, password.encode())], f"set the credentials of {user}")

    def delete_scram(self, user: str) -> None:
        """Remove the user's SCRAM-SHA-512 credentials; nothing when it has none."""
        try:
            self._alter(
                [UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_512)], f"remove the credentials of {user}"
            )
        except UserAdminError as exc:
            cause = exc.__cause__
            if not (isinstance(cause, KafkaException) and cause.args[0].code() == KafkaError.RESOURCE_NOT_FOUND):
                raise

    def _alter(self, alterations: list[UserScramCredentialAlteration], what: str) -> None:
        try:
            for future in self._admin.alter_user_scram_credentials(alterations, request_timeout=self.timeout).values():
                future.result(self.timeout)
        except (KafkaException, FutureTimeout) as exc:
            raise UserAdminError(f"could not {what} ({self.describe}): {_failure(exc, self.timeout)}") from exc

    # -- ACLs -------------------------------------------------------------------------------------

    def acls(self, principal: str) -> set[AclRule]:
        """The ACLs of `principal` (`User:<name>`) Strimzi's rules can express."""
        anything = cast(str, None)  # a filter's None matches any name and host
        found = AclBindingFilter(
            ResourceType.ANY,
            anything,
            ResourcePatternType.ANY,
            principal,
            anything,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        try:
            bindings = self._admin.describe_acls(found, request_timeout=self.timeout).result(self.timeout)
        except (KafkaException, FutureTimeout) as exc:
            raise UserAdminError(
                f"could not describe the ACLs of {principal} ({self.describe}): {_failure(exc, self.timeout)}"
            ) from exc
        return {rule for b in bindings if (rule := _rule(b)) is not None}

    def create_acls(self, principal: str, rules: set[AclRule]) -> None:
        if rules:
            bindings = [AclBinding(*_fields(principal, r)) for r in sorted(rules)]
            self._acl_call("create", self._admin.create_acls(bindings, request_timeout=self.timeout), principal)

    def delete_acls(self, principal: str, rules: set[AclRule]) -> None:
        if rules:
            filters = [AclBindingFilter(*_fields(principal, r)) for r in sorted(rules)]
            self._acl_call("delete", self._admin.delete_acls(filters, request_timeout=self.timeout), principal)

    def _acl_call(self, verb: str, futures: Mapping[Any, Future[Any]], principal: str) -> None:
        try:
            for future in futures.values():
                future.result(self.timeout)
        except (KafkaException, FutureTimeout) as exc:
            raise UserAdminError(
                f"could not {verb} ACLs of {principal} ({self.describe}): {_failure(exc, self.timeout)}"
            ) from exc


def _fields(
    principal: str, rule: AclRule
) -> tuple[ResourceType, str, ResourcePatternType, str, str, AclOperation, AclPermissionType]:
    return (
        _RESOURCES[rule.resource_type],
        CLUSTER_RESOURCE if rule.resource_type == "cluster" else rule.name,
        _PATTERNS[rule.pattern],
        principal,
        rule.host,
        _OPERATIONS[rule.operation],
        _PERMISSIONS[rule.permission],
    )


def _rule(binding: AclBinding) -> AclRule | None:
    kinds: dict[Any, str] = {v: k for k, v in _RESOURCES.items()}
    patterns: dict[Any, str] = {v: k for k, v in _PATTERNS.items()}
    operations: dict[Any, str] = {v: k for k, v in _OPERATIONS.items()}
    permissions: dict[Any, str] = {v: k for k, v in _PERMISSIONS.items()}
    try:
        return AclRule(
            kinds[binding.restype],
            binding.name,
            patterns[binding.resource_pattern_type],
            operations[binding.operation],
            permissions[binding.permission_type],
            binding.host,
        )
    except KeyError:
        return None


def _failure(exc: BaseException, timeout: float) -> str:
    return str(exc) if isinstance(exc, KafkaException) else f"no answer within {timeout:.0f}s"
