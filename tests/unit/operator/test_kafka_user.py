"""KafkaUser, Strimzi's User Operator: the model (user names, ACLs from Strimzi's example, what is refused) and
the reconcile against an in-memory store and a twin of the Admin API: the Secret and credentials of SCRAM
and TLS users, ACLs set and those of the other name form removed, deletion, and users that cannot work."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from sparklink.clients.settings import KafkaClientSettings
from sparklink.operator.hosting.kafka import KafkaState
from sparklink.operator.metrics import OperatorMetrics
from sparklink.operator.model import kafka_user as model
from sparklink.operator.model.autorestart import BackOff
from sparklink.operator.model.conditions import ReconcileFailure
from sparklink.operator.model.kafka_user import AclRule
from sparklink.operator.model.resources import Key, Resource, Secret
from sparklink.operator.reconcile import kafka_user
from sparklink.operator.reconcile.context import Deps
from sparklink.operator.reconcile.kafka_ca import reconcile_cas
from tests.unit.operator.memory_store import MemoryStore

DATA = Path(__file__).parent.parent.parent / "data" / "strimzi"
NOW = dt.datetime(2026, 11, 22, 10, 0, tzinfo=dt.UTC)


def shipped() -> dict[str, Any]:
    """Strimzi's kafka-user.yaml."""
    (doc,) = [d for d in yaml.safe_load_all((DATA / "kafka-user.yaml").read_text()) if d]
    doc["metadata"].update(namespace="ns", uid="uid-u", generation=1)
    return dict(doc)


def test_strimzis_example_user_is_a_tls_user_with_one_acl_per_operation() -> None:
    desired = model.desired_user(Resource.from_json(shipped()))
    assert (desired.username, desired.other_username, desired.secret_name) == ("CN=my-user", "my-user", "my-user")
    assert desired.cluster == "my-cluster"
    assert desired.acls == tuple(
        sorted(
            {
                AclRule("topic", "my-topic", "literal", op, "allow", "*")
                for op in ("Describe", "Read", "Create", "Write")
            }
            | {AclRule("group", "my-group", "literal", "Read", "allow", "*")}
        )
    )


def test_scram_names_cluster_resources_and_what_is_refused() -> None:
    body = shipped()
    body["spec"] = {
        "authentication": {"type": "scram-sha-512"},
        "authorization": {
            "type": "simple",
            "acls": [{"resource": {"type": "cluster"}, "operations": ["DescribeConfigs"], "type": "deny"}],
        },
    }
    desired = model.desired_user(Resource.from_json(body))
    assert (desired.username, desired.other_username) == ("my-user", "CN=my-user")
    assert desired.acls == (AclRule("cluster", "kafka-cluster", "literal", "DescribeConfigs", "deny", "*"),)
    body["spec"]["authentication"]["password"] = {"valueFrom": {"secretKeyRef": {"name": "only-a-name"}}}
    with pytest.raises(ReconcileFailure, match="doesn't specify the secret name and/or key"):
        model.desired_user(Resource.from_json(body))
    tls = shipped()
    tls["metadata"]["name"] = "x" * 65
    with pytest.raises(ReconcileFailure, match="only up to 64 characters long"):
        model.desired_user(Resource.from_json(tls))


def test_the_jaas_config_quotes_what_would_end_its_strings() -> None:
    assert model.jaas_config("u", 'a"b\\c') == (
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="a\\"b\\\\c";'
    )
    with pytest.raises(ReconcileFailure, match="line breaks"):
        model.check_password("secret\nsasl.jaas.config=x", "Secret p")


# -- reconcile ------------------------------------------------------------------------------------------------


@dataclass
class AdminTwin:
    """Kafka's users and ACLs, as the Admin API would keep them."""

    scram: dict[str, str] = field(default_factory=dict)
    acl: dict[str, set[AclRule]] = field(default_factory=dict)

    def upsert_scram(self, user: str, password: str) -> None:
        self.scram[user] = password

    def delete_scram(self, user: str) -> None:
        self.scram.pop(user, None)

    def acls(self, principal: str) -> set[AclRule]:
        return set(self.acl.get(principal, set()))

    def create_acls(self, principal: str, rules: set[AclRule]) -> None:
        self.acl.setdefault(principal, set()).update(rules)

    def delete_acls(self, principal: str, rules: set[AclRule]) -> None:
        self.acl.setdefault(principal, set()).difference_update(rules)


@dataclass
class KafkaTwin:
    reachable: bool = True

    def admin(self, owner: Resource) -> KafkaClientSettings | None:
        return KafkaClientSettings("127.0.0.1:9091") if self.reachable else None

    def running(self, owner: Resource) -> KafkaState | None:
        return None


class Clock:
    def now(self) -> dt.datetime:
        return NOW


def setup(authorization: bool = True, running: bool = True) -> tuple[MemoryStore, Deps, AdminTwin, Resource]:
    store = MemoryStore()
    listeners = [{"name": "tls", "port": 9093, "tls": True, "authentication": {"type": "tls"}}]
    spec: dict[str, Any] = {"kafka": {"listeners": listeners}}
    if authorization:
        spec["kafka"]["authorization"] = {"type": "simple"}
    kafka = store.put({"kind": "Kafka", "metadata": {"namespace": "ns", "name": "my-cluster"}, "spec": spec})
    reconcile_cas(store, kafka, NOW)
    twin = AdminTwin()
    deps = Deps(store, None, Clock(), BackOff(dt.timedelta(seconds=1)), OperatorMetrics(), kafka=KafkaTwin(running))  # type: ignore[arg-type]
    deps.user_admin = lambda settings: twin  # type: ignore[assignment,return-value]
    return store, deps, twin, kafka


def status(store: MemoryStore, name: str) -> dict[str, Any]:
    return dict(store.resources[Key("KafkaUser", "ns", name)].status)


def test_a_tls_user_gets_a_certificate_from_the_clients_ca_and_its_acls() -> None:
    store, deps, twin, _ = setup()
    key = store.put(shipped()).key
    kafka_user.reconcile(deps, key)
    found = status(store, "my-user")
    assert (found["conditions"][0]["type"], found["username"], found["secret"]) == ("Ready", "CN=my-user", "my-user")
    secret = store.secrets[("ns", "my-user")]
    assert set(secret.data) == {"ca.crt", "user.crt", "user.key", "user.p12", "user.password"}
    assert secret.data["ca.crt"] == store.secrets[("ns", "my-cluster-clients-ca-cert")].data["ca.crt"]
    assert x509.load_pem_x509_certificate(secret.data["user.crt"]).subject.rfc4514_string() == "CN=my-user"
    assert secret.labels["app.kubernetes.io/managed-by"] == "strimzi-user-operator"
    assert len(twin.acl["User:CN=my-user"]) == 5
    kafka_user.reconcile(deps, key)  # the certificate is kept while it may be
    assert store.secrets[("ns", "my-user")].data["user.crt"] == secret.data["user.crt"]


def test_a_user_switched_to_scram_gets_a_password_and_loses_its_tls_acls() -> None:
    store, deps, twin, _ = setup()
    key = store.put(shipped()).key
    kafka_user.reconcile(deps, key)
    body = shipped()
    body["spec"]["authentication"] = {"type": "scram-sha-512"}
    store.put(body)
    kafka_user.reconcile(deps, key)
    secret = store.secrets[("ns", "my-user")]
    password = secret.data["password"].decode()
    assert len(password) == 32 and twin.scram == {"my-user": password}
    assert secret.data["sasl.jaas.config"].decode() == model.jaas_config("my-user", password)
    assert not twin.acl["User:CN=my-user"] and len(twin.acl["User:my-user"]) == 5
    kafka_user.reconcile(deps, key)
    assert twin.scram == {"my-user": password}  # kept, not made again


def test_a_deleted_user_leaves_no_credentials_acls_or_secret() -> None:
    store, deps, twin, _ = setup()
    body = shipped()
    body["spec"]["authentication"] = {"type": "scram-sha-512"}
    key = store.put(body).key
    kafka_user.reconcile(deps, key)
    del store.resources[key]
    kafka_user.reconcile(deps, key)
    assert twin.scram == {} and not any(twin.acl.values()) and ("ns", "my-user") not in store.secrets


def test_a_users_own_secret_of_the_same_name_is_never_taken_over_or_deleted() -> None:
    store, deps, _, _ = setup()
    store.apply_secret(Secret("ns", "my-user", {"mine": b"x"}))
    body = shipped()
    del body["spec"]["authentication"]
    key = store.put(body).key
    kafka_user.reconcile(deps, key)
    del store.resources[key]
    kafka_user.reconcile(deps, key)
    assert store.secrets[("ns", "my-user")].data == {"mine": b"x"}


@pytest.mark.parametrize(
    ("authorization", "running", "label", "message"),
    [
        (False, True, "my-cluster", "Simple authorization ACL rules are configured but not supported"),
        (True, False, "my-cluster", "Kafka cluster 'my-cluster' has no running broker yet"),
        (True, True, "other", "Kafka cluster 'other' named by label 'strimzi.io/cluster' of KafkaUser ns/my-user"),
    ],
)
def test_a_user_that_cannot_be_made_is_not_ready_saying_why(
    authorization: bool, running: bool, label: str, message: str
) -> None:
    store, deps, twin, _ = setup(authorization, running)
    body = shipped()
    body["metadata"]["labels"] = {"strimzi.io/cluster": label}
    result = kafka_user.reconcile(deps, store.put(body).key)
    (condition,) = status(store, "my-user")["conditions"]
    assert condition["type"] == "NotReady" and condition["message"].startswith(message)
    assert result.failed and not twin.acl and ("ns", "my-user") not in store.secrets


def test_no_listener_for_the_users_authentication_and_quotas_are_warnings() -> None:
    store, deps, _, _ = setup()
    body = shipped()
    body["spec"]["authentication"] = {"type": "scram-sha-512"}
    body["spec"]["quotas"] = {"producerByteRate": 1024}
    kafka_user.reconcile(deps, store.put(body).key)
    ready, *warnings = status(store, "my-user")["conditions"]
    assert ready["type"] == "Ready"
    assert [w["reason"] for w in warnings] == ["NoMatchingListener", "UnsupportedField"]
    assert warnings[0]["message"].startswith("No listener of Kafka my-cluster has authentication type scram-sha-512")
