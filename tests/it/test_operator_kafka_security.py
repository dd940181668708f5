"""Strimzi's secured Kafka on the operator: TLS and SCRAM listeners, the CA Secrets, KafkaUsers with ACLs, and
a CA renewal - a real kube-apiserver + etcd, `sparklink operator run` as a subprocess, real KRaft nodes with
real TLS and SCRAM, and clients whose settings come from what the operator wrote into Secrets.

Two single-node clusters for the module, started together: Strimzi's `kafka-single-node.yaml` applied
unchanged (plain 9092, tls 9093), and `secured` (a mutual-TLS and a SCRAM-SHA-512 listener, simple
authorization) with the users of Strimzi's `kafka-user.yaml`: a TLS user as shipped (but for its name and
cluster) and SCRAM users with the same ACLs.
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from cryptography import x509
from cryptography.hazmat.primitives.serialization import pkcs12
from kubernetes.client.exceptions import ApiException

from sparklink.clients.errors import KafkaAccessError
from sparklink.clients.preflight import verify
from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform import process
from sparklink.platform.kafka import KafkaCluster
from tests.helpers import unique, wait_for
from tests.it.operator_fixtures import (
    TEST_WORKER_CONFIG,
    Kube,
    OperatorProcess,
    conditions,
    connector_state,
    is_ready,
    task_states,
)

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("clusters")]

DATA = Path(__file__).parent.parent / "data" / "strimzi"
SINGLE = "my-cluster"  # kafka-single-node.yaml
SECURED = "secured"
STEADY = ["--kafka-heap", "256m", "--full-reconcile-interval", "10"]


@pytest.fixture(scope="module")
def operator(operator_kubeconfig: Path, namespace: str) -> Iterator[OperatorProcess]:
    state = Path(tempfile.mkdtemp(prefix="sparklink-test-operator-"))
    proc = OperatorProcess(operator_kubeconfig, namespace, state, STEADY).start()
    try:
        yield proc
    finally:
        proc.stop()
        proc.cleanup_kafka()
        if os.environ.get("SPARKLINK_KEEP_OPERATOR_LOGS"):
            print(f"operator state kept in {state}")
        else:
            shutil.rmtree(state, ignore_errors=True)


def documents(name: str) -> list[dict[str, Any]]:
    return [dict(d) for d in yaml.safe_load_all((DATA / name).read_text()) if d]


def secured_cluster() -> list[dict[str, Any]]:
    """One dual-role node; a mutual-TLS and a SCRAM-SHA-512 listener (both TLS); simple authorization."""
    pool, kafka = copy.deepcopy(documents("kafka-single-node.yaml"))
    pool["metadata"] = {"name": "secured-node", "labels": {"strimzi.io/cluster": SECURED}}
    kafka["metadata"] = {"name": SECURED}
    spec = kafka["spec"]
    del spec["entityOperator"], spec["kafka"]["version"], spec["kafka"]["metadataVersion"]
    spec["kafka"]["listeners"] = [
        {"name": "mtls", "port": 9093, "type": "internal", "tls": True, "authentication": {"type": "tls"}},
        {"name": "scram", "port": 9094, "type": "internal", "tls": True, "authentication": {"type": "scram-sha-512"}},
    ]
    spec["kafka"]["authorization"] = {"type": "simple", "superUsers": ["CN=root"]}
    return [pool, kafka]


@pytest.fixture(scope="module")
def clusters(kubeobj: Kube, operator: OperatorProcess) -> dict[str, dict[str, Any]]:
    for doc in [*documents("kafka-single-node.yaml"), *secured_cluster()]:
        kubeobj.create(doc)
    return {name: kubeobj.wait("Kafka", name, is_ready, "Ready", timeout=600) for name in (SINGLE, SECURED)}


def secret(kubeobj: Kube, name: str) -> dict[str, bytes]:
    import base64

    found = kubeobj.core.read_namespaced_secret(name, kubeobj.ns)
    return {k: base64.b64decode(v) for k, v in (found.data or {}).items()}


def listener(kafka: dict[str, Any], name: str) -> dict[str, Any]:
    return next(lst for lst in kafka["status"]["listeners"] if lst["name"] == name)


def tls_client(kafka: dict[str, Any], name: str, ca_pem: bytes, **security: str) -> KafkaClientSettings:
    """A client of listener `name` trusting `ca_pem` (as a Strimzi user takes it from `<cluster>-cluster-ca-cert`)."""
    props = {
        "bootstrap.servers": listener(kafka, name)["bootstrapServers"],
        "security.protocol": "SASL_SSL" if "sasl.jaas.config" in security else "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": ca_pem.decode(),
        **security,
    }
    return KafkaClientSettings.from_properties(props)


def round_trip(settings: KafkaClientSettings, topic: str, group: str, count: int = 5) -> list[bytes]:
    producer = Producer(settings.librdkafka(**{"acks": "all"}))
    for i in range(count):
        producer.produce(topic, f"record-{i}".encode())
    assert producer.flush(60) == 0
    consumer = Consumer(settings.librdkafka(**{"group.id": group, "auto.offset.reset": "earliest"}))
    consumer.subscribe([topic])
    seen: list[bytes] = []
    try:
        deadline = time.monotonic() + 90
        while len(seen) < count and time.monotonic() < deadline:
            msg = consumer.poll(1)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            seen.append(msg.value() or b"")
    finally:
        consumer.close()
    return seen


def node_starts(operator: OperatorProcess, cluster: str) -> int:
    log = operator.state_dir / "workers" / operator.namespace / "Kafka" / cluster / "cluster" / "logs" / "node-0.log"
    return log.read_text(errors="replace").count("Kafka Server started")


def local_cluster(operator: OperatorProcess, cluster: str) -> KafkaCluster:
    return KafkaCluster.load(operator.state_dir / "workers" / operator.namespace / "Kafka" / cluster / "cluster")


# -- Strimzi's kafka-single-node.yaml ---------------------------------------------------------------------


def test_strimzis_single_node_example_serves_both_listeners_with_their_certificates(
    kubeobj: Kube, clusters: dict[str, dict[str, Any]]
) -> None:
    kafka = clusters[SINGLE]
    plain, tls = listener(kafka, "plain"), listener(kafka, "tls")
    for lst in (plain, tls):
        (address,) = lst["addresses"]
        assert lst["bootstrapServers"] == f"{address['host']}:{address['port']}"
    assert "certificates" not in plain
    ca_cert = secret(kubeobj, f"{SINGLE}-cluster-ca-cert")["ca.crt"]
    assert tls["certificates"] == [ca_cert.decode()]
    # The example names Kafka 4.3.1; sparklink runs the version of its jars and says so, nothing else is ignored.
    assert {c["reason"] for c in conditions(kafka, "Warning")} == {"UnsupportedKafkaVersion", "UnsupportedField"}
    assert all(
        "topicOperator" in c["message"] for c in conditions(kafka, "Warning") if c["reason"] == "UnsupportedField"
    )

    topic = unique("tls")
    records = round_trip(tls_client(kafka, "tls", ca_cert), topic, unique("g"))
    assert records == [f"record-{i}".encode() for i in range(5)]


def test_the_secured_cluster_serves_mutual_tls_and_scram_listeners_with_their_certificates(
    kubeobj: Kube, clusters: dict[str, dict[str, Any]]
) -> None:
    kafka = clusters[SECURED]
    ca_cert = secret(kubeobj, f"{SECURED}-cluster-ca-cert")["ca.crt"].decode()
    assert [lst["name"] for lst in kafka["status"]["listeners"]] == ["mtls", "scram"]
    for lst in kafka["status"]["listeners"]:
        (address,) = lst["addresses"]
        assert lst["bootstrapServers"] == f"{address['host']}:{address['port']}"
        assert lst["certificates"] == [ca_cert]
    assert not conditions(kafka, "Warning")
    # Neither listener lets in a client without credentials: TLS alone is refused on both.
    for name in ("mtls", "scram"):
        with pytest.raises(KafkaAccessError):
            verify(tls_client(kafka, name, ca_cert.encode()), 20)


def test_the_ca_secrets_are_strimzis_names_keys_labels_and_owner(kubeobj: Kube, clusters: dict[str, Any]) -> None:
    kafka = clusters[SINGLE]
    for role in ("cluster-ca", "clients-ca"):
        cert_secret = kubeobj.core.read_namespaced_secret(f"{SINGLE}-{role}-cert", kubeobj.ns)
        key_secret = kubeobj.core.read_namespaced_secret(f"{SINGLE}-{role}", kubeobj.ns)
        assert set(cert_secret.data) == {"ca.crt", "ca.p12", "ca.password"}
        assert set(key_secret.data) == {"ca.key"}
        assert cert_secret.metadata.annotations == {"strimzi.io/ca-cert-generation": "0"}
        assert key_secret.metadata.annotations == {"strimzi.io/ca-key-generation": "0"}
        for found in (cert_secret, key_secret):
            labels = found.metadata.labels
            assert labels["strimzi.io/cluster"] == SINGLE and labels["strimzi.io/kind"] == "Kafka"
            assert labels["strimzi.io/component-type"] == "certificate-authority"
            (owner,) = found.metadata.owner_references
            assert (owner.kind, owner.name, owner.uid, owner.controller) == (
                "Kafka",
                SINGLE,
                kafka["metadata"]["uid"],
                False,
            )
        data = secret(kubeobj, f"{SINGLE}-{role}-cert")
        store = pkcs12.load_pkcs12(data["ca.p12"], data["ca.password"])
        assert [c.certificate for c in store.additional_certs] == [x509.load_pem_x509_certificate(data["ca.crt"])]
        authority = x509.load_pem_x509_certificate(data["ca.crt"])
        assert authority.subject.rfc4514_string() == f"CN={role} v0,O=io.sparklink"


# -- KafkaUsers ---------------------------------------------------------------------------------------------


def kafka_user(name: str, cluster: str, authentication: dict[str, Any] | None) -> dict[str, Any]:
    """Strimzi's kafka-user.yaml (its ACLs on my-topic / my-group) with another name, cluster and authentication."""
    (user,) = copy.deepcopy(documents("kafka-user.yaml"))
    user["metadata"] = {"name": name, "labels": {"strimzi.io/cluster": cluster}}
    if authentication is None:
        del user["spec"]["authentication"]
    else:
        user["spec"]["authentication"] = authentication
    return user


def user_ready(kubeobj: Kube, name: str, operator: OperatorProcess) -> dict[str, Any]:
    def explain() -> dict[str, Any]:
        """A time-out says the user's status, whether the operator runs, and what it last said about users."""
        return {
            "status": kubeobj.get("KafkaUser", name).get("status"),
            "operator alive": process.alive(operator.pid),
            "operator log": [line for line in operator.log_since_start() if "KafkaUser" in line][-15:],
            "operator threads": operator.stacks() if process.alive(operator.pid) else None,
        }

    return kubeobj.wait("KafkaUser", name, is_ready, "Ready", timeout=180, explain=explain)


def refused(settings: KafkaClientSettings, topic: str, group: str | None = None) -> KafkaError:
    """The error of a write to `topic` (or, with `group`, a read in that group)."""
    if group is None:
        errors: list[KafkaError] = []
        producer = Producer(settings.librdkafka(**{"acks": "all", "message.timeout.ms": 20000}))
        producer.produce(topic, b"x", on_delivery=lambda err, _msg: errors.append(err))
        producer.flush(40)
        assert errors and errors[0] is not None, "the write was allowed"
        return errors[0]
    consumer = Consumer(settings.librdkafka(**{"group.id": group, "auto.offset.reset": "earliest"}))
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            msg = consumer.poll(1)
            if msg is not None and msg.error() and msg.error().code() != KafkaError._PARTITION_EOF:
                return msg.error()
    finally:
        consumer.close()
    raise AssertionError("the read was allowed")


def test_a_scram_user_gets_strimzis_secret_and_its_acls_allow_what_they_grant_only(
    kubeobj: Kube, operator: OperatorProcess, clusters: dict[str, Any]
) -> None:
    kubeobj.create(kafka_user("bob", SECURED, {"type": "scram-sha-512"}))
    user = user_ready(kubeobj, "bob", operator)
    assert (user["status"]["username"], user["status"]["secret"]) == ("bob", "bob")
    creds = secret(kubeobj, "bob")
    assert set(creds) == {"password", "sasl.jaas.config"}
    jaas = creds["sasl.jaas.config"].decode()
    assert jaas == (
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" '
        f'password="{creds["password"].decode()}";'
    )
    ca_cert = secret(kubeobj, f"{SECURED}-cluster-ca-cert")["ca.crt"]
    kafka = kubeobj.get("Kafka", SECURED)
    bob = tls_client(kafka, "scram", ca_cert, **{"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas})
    # Every record, in any order: a producer that retries (not idempotent) may reorder a partition's records.
    assert sorted(round_trip(bob, "my-topic", "my-group", 3)) == [f"record-{i}".encode() for i in range(3)]
    assert refused(bob, unique("other")).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert refused(bob, "my-topic", group=unique("other-group")).code() == KafkaError.GROUP_AUTHORIZATION_FAILED


def test_a_tls_user_as_strimzi_ships_it_reads_and_writes_over_mutual_tls(
    kubeobj: Kube, operator: OperatorProcess, clusters: dict[str, Any]
) -> None:
    kubeobj.create(kafka_user("alice", SECURED, {"type": "tls"}))
    user = user_ready(kubeobj, "alice", operator)
    assert (user["status"]["username"], user["status"]["secret"]) == ("CN=alice", "alice")
    creds = secret(kubeobj, "alice")
    assert set(creds) == {"ca.crt", "user.crt", "user.key", "user.p12", "user.password"}
    assert creds["ca.crt"] == secret(kubeobj, f"{SECURED}-clients-ca-cert")["ca.crt"]
    cert = x509.load_pem_x509_certificate(creds["user.crt"])
    assert cert.subject.rfc4514_string() == "CN=alice"
    key, store_cert, _ = pkcs12.load_key_and_certificates(creds["user.p12"], creds["user.password"])
    assert key is not None and store_cert == cert
    kafka = kubeobj.get("Kafka", SECURED)
    ca_cert = secret(kubeobj, f"{SECURED}-cluster-ca-cert")["ca.crt"]
    alice = tls_client(
        kafka,
        "mtls",
        ca_cert,
        **{"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": creds["user.crt"].decode(),
           "ssl.keystore.key": creds["user.key"].decode()},
    )  # fmt: skip
    topic_records = round_trip(alice, "my-topic", "my-group", 2)
    assert len(topic_records) == 2  # bob's three records are there too; alice reads from the group's offsets
    assert refused(alice, unique("other")).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_a_requested_password_is_honoured(kubeobj: Kube, operator: OperatorProcess, clusters: dict[str, Any]) -> None:
    kubeobj.core.create_namespaced_secret(
        kubeobj.ns, {"metadata": {"name": "carol-password"}, "stringData": {"pw": "Carol-Secret-1"}}
    )
    kubeobj.create(
        kafka_user(
            "carol",
            SECURED,
            {
                "type": "scram-sha-512",
                "password": {"valueFrom": {"secretKeyRef": {"name": "carol-password", "key": "pw"}}},
            },
        )
    )
    user_ready(kubeobj, "carol", operator)
    assert secret(kubeobj, "carol")["password"] == b"Carol-Secret-1"
    kafka = kubeobj.get("Kafka", SECURED)
    ca_cert = secret(kubeobj, f"{SECURED}-cluster-ca-cert")["ca.crt"]
    jaas = (
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="carol" password="Carol-Secret-1";'
    )
    verify(tls_client(kafka, "scram", ca_cert, **{"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas}), 60)


def test_deleting_a_user_removes_its_credentials_acls_and_secret(
    kubeobj: Kube, operator: OperatorProcess, clusters: dict[str, Any]
) -> None:
    kubeobj.create(kafka_user("dave", SECURED, {"type": "scram-sha-512"}))
    user_ready(kubeobj, "dave", operator)
    jaas = secret(kubeobj, "dave")["sasl.jaas.config"].decode()
    kafka = kubeobj.get("Kafka", SECURED)
    ca_cert = secret(kubeobj, f"{SECURED}-cluster-ca-cert")["ca.crt"]
    dave = tls_client(kafka, "scram", ca_cert, **{"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas})
    verify(dave, 60)
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.admin._acl import AclBindingFilter, AclOperation, AclPermissionType
    from confluent_kafka.admin._resource import ResourcePatternType, ResourceType

    admin = AdminClient(local_cluster(operator, SECURED).access.platform_settings().librdkafka())
    daves = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, "User:dave", None, AclOperation.ANY, AclPermissionType.ANY
    )  # type: ignore[arg-type]
    assert len(admin.describe_acls(daves).result(30)) == 5  # kafka-user.yaml: five distinct operations

    kubeobj.delete("KafkaUser", "dave")

    def gone() -> bool:
        try:
            kubeobj.core.read_namespaced_secret("dave", kubeobj.ns)
            return False
        except ApiException as exc:
            return exc.status == 404

    wait_for(gone, 120, "dave's Secret to be deleted")
    wait_for(lambda: not admin.describe_acls(daves).result(30), 120, "dave's ACLs to be removed")

    def login_refused() -> str | None:
        try:
            verify(dave, 30)
        except KafkaAccessError as exc:
            return str(exc)
        return None

    message = wait_for(login_refused, 120, "dave's login to be refused")
    assert "SASL authentication failed" in message


def test_users_that_cannot_work_say_what_to_do_and_harm_no_other(
    kubeobj: Kube, operator: OperatorProcess, clusters: dict[str, Any]
) -> None:
    kubeobj.create(kafka_user("henry", SECURED, {"type": "scram-sha-512"}))
    user_ready(kubeobj, "henry", operator)
    # Strimzi's kafka-user.yaml as shipped names my-cluster, whose example has no authorization: its ACLs cannot apply.
    (shipped,) = documents("kafka-user.yaml")
    kubeobj.create(shipped)
    found = kubeobj.wait("KafkaUser", "my-user", lambda u: conditions(u, "NotReady"), "NotReady", timeout=120)
    assert conditions(found, "NotReady")[0]["message"].startswith(
        "Simple authorization ACL rules are configured but not supported in the Kafka cluster configuration."
    )
    kubeobj.create(kafka_user("eve", "no-such-kafka", {"type": "scram-sha-512"}))
    found = kubeobj.wait("KafkaUser", "eve", lambda u: conditions(u, "NotReady"), "NotReady", timeout=120)
    assert conditions(found, "NotReady")[0]["message"].startswith(
        "Kafka cluster 'no-such-kafka' named by label 'strimzi.io/cluster' of KafkaUser"
    )
    # A SCRAM user of a cluster without a SCRAM listener: made, with a Warning saying no listener accepts it.
    lonely = kafka_user("frank", SINGLE, {"type": "scram-sha-512"})
    del lonely["spec"]["authorization"]
    kubeobj.create(lonely)
    found = user_ready(kubeobj, "frank", operator)
    (note,) = conditions(found, "Warning")
    assert note["message"].startswith(f"No listener of Kafka {SINGLE} has authentication type scram-sha-512")
    with pytest.raises(ApiException) as bad:  # the API server refuses what Strimzi's schema refuses
        kubeobj.create(kafka_user("gina", SECURED, {"type": "plain"}))
    assert bad.value.status == 422
    # Nothing else was harmed: the cluster stays Ready and a good user of it still logs in and writes.
    assert is_ready(kubeobj.get("Kafka", SECURED))
    assert is_ready(kubeobj.get("KafkaUser", "henry"))
    kafka = kubeobj.get("Kafka", SECURED)
    ca_cert = secret(kubeobj, f"{SECURED}-cluster-ca-cert")["ca.crt"]
    jaas = secret(kubeobj, "henry")["sasl.jaas.config"].decode()
    henry = tls_client(kafka, "scram", ca_cert, **{"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas})
    assert len(round_trip(henry, "my-topic", "my-group", 1)) == 1


# -- CA renewal ---------------------------------------------------------------------------------------------


# -- Strimzi's quick-start chain, unchanged --------------------------------------------------------------


def test_strimzis_quick_start_chain_runs_its_connector_over_tls_to_the_single_node_cluster(
    kubeobj: Kube, operator: OperatorProcess, clusters: dict[str, Any]
) -> None:
    """kafka-single-node.yaml (the module's my-cluster), then kafka-connect.yaml with the
    use-connector-resources annotation its comment asks for, then source-connector.yaml, unchanged.

    The example reads /opt/kafka/LICENSE, a file of Strimzi's container image. Local workers run as the
    operator's user, so their file connectors may use only the group's files directory: the connector is
    refused, naming the file and that directory; with the file placed there, it runs and its records are
    readable over TLS with the cluster CA."""
    (connect,) = documents("kafka-connect.yaml")
    assert connect["spec"]["bootstrapServers"] == f"{SINGLE}-kafka-bootstrap:9093"
    connect["metadata"]["annotations"] = {"strimzi.io/use-connector-resources": "true"}
    (connector,) = documents("source-connector.yaml")
    kubeobj.create(connect)
    kubeobj.create(connector)
    try:
        obj = kubeobj.wait("KafkaConnect", "my-connect-cluster", is_ready, "Ready over TLS on 9093", timeout=300)
        assert not conditions(obj, "Warning"), conditions(obj, "Warning")

        def running(o: dict[str, Any]) -> bool:
            return is_ready(o) and connector_state(o) == "RUNNING" and task_states(o) == ["RUNNING"]

        files = operator.files_dir("KafkaConnect", "my-connect-cluster")

        def refused(o: dict[str, Any]) -> bool:
            text = " ".join(c.get("message", "") for c in conditions(o))
            return "/opt/kafka/LICENSE" in text and str(files) in text

        kubeobj.wait("KafkaConnector", "my-source-connector", refused, "refused, naming the allowed directory")
        lines = [f"line {i}" for i in range(20)]
        (files / "LICENSE").write_text("".join(f"{line}\n" for line in lines))
        kubeobj.spec("KafkaConnector", "my-source-connector", config={"file": str(files / "LICENSE")})
        found = kubeobj.wait("KafkaConnector", "my-source-connector", running, "RUNNING", timeout=240)
        assert not conditions(found, "Warning"), conditions(found, "Warning")
        # Its records, over TLS with the CA of my-cluster-cluster-ca-cert, as a Strimzi user reads them.
        ca = secret(kubeobj, f"{SINGLE}-cluster-ca-cert")["ca.crt"]
        reader = tls_client(kubeobj.get("Kafka", SINGLE), "tls", ca)
        values = read_until(reader, "my-topic", lambda seen: len(seen) >= len(lines))
        assert all(any(f'"{line}"'.encode() in v for v in values) for line in lines), values[:3]
        properties = operator.worker_log("KafkaConnect", "my-connect-cluster").with_name("worker.properties")
        assert "security.protocol=SSL" in properties.read_text().splitlines()
    finally:
        kubeobj.delete("KafkaConnector", "my-source-connector")
        kubeobj.delete("KafkaConnect", "my-connect-cluster")


# -- MirrorMaker 2 from the TLS cluster to the SCRAM cluster (before the renewal, which rolls my-cluster) --------

MM2 = "tls-to-scram"
# What MirrorMaker 2 does on its target: its own topics and the mirrored ones, its groups, creating topics.
MM2_ACLS = [
    {"resource": {"type": "topic", "name": "*", "patternType": "literal"}, "operations": ["All"]},
    {"resource": {"type": "group", "name": "*", "patternType": "literal"}, "operations": ["All"]},
    {"resource": {"type": "cluster"}, "operations": ["Describe", "Create", "DescribeConfigs"]},
]


def mirror_maker_2(topic: str) -> dict[str, Any]:
    """Strimzi's kafka-mirror-maker-2.yaml with its clusters made this module's: the source my-cluster's TLS
    listener (trusting its cluster CA), the target secured's SCRAM listener as KafkaUser mm2-user."""
    (body,) = copy.deepcopy(documents("kafka-mirror-maker-2.yaml"))
    body["metadata"] = {"name": MM2}
    target = body["spec"]["target"]
    target |= {
        "alias": SECURED,
        "bootstrapServers": f"{SECURED}-kafka-bootstrap:9094",
        "tls": {"trustedCertificates": [{"secretName": f"{SECURED}-cluster-ca-cert", "certificate": "ca.crt"}]},
        "authentication": {
            "type": "scram-sha-512",
            "username": "mm2-user",
            "passwordSecret": {"secretName": "mm2-user", "password": "password"},
        },
    }
    target["config"].update(TEST_WORKER_CONFIG)
    (mirror,) = body["spec"]["mirrors"]
    mirror["source"] = {
        "alias": SINGLE,
        "bootstrapServers": f"{SINGLE}-kafka-bootstrap:9093",
        "tls": {"trustedCertificates": [{"secretName": f"{SINGLE}-cluster-ca-cert", "pattern": "*.crt"}]},
    }
    mirror["topicsPattern"], mirror["groupsPattern"] = topic, "none-here"
    return body


def test_a_mirror_maker_2_from_the_tls_cluster_to_the_scram_cluster_mirrors_records(
    kubeobj: Kube, operator: OperatorProcess, clusters: dict[str, Any]
) -> None:
    user = kafka_user("mm2-user", SECURED, {"type": "scram-sha-512"})
    user["spec"]["authorization"]["acls"] = MM2_ACLS
    kubeobj.create(user)
    user_ready(kubeobj, "mm2-user", operator)
    single, secured = clusters[SINGLE], clusters[SECURED]
    source_ca = secret(kubeobj, f"{SINGLE}-cluster-ca-cert")["ca.crt"]
    topic = unique("mirrored")
    assert len(round_trip(tls_client(single, "tls", source_ca), topic, unique("g"))) == 5
    kubeobj.create(mirror_maker_2(topic))
    try:
        obj = kubeobj.wait(
            "KafkaMirrorMaker2",
            MM2,
            lambda o: is_ready(o) and len(o["status"].get("connectors", [])) == 2,
            "Ready over TLS (source) and SCRAM (target)",
            timeout=300,
        )
        assert not conditions(obj, "Warning")
        # The mirrored topic on the target, read over its SCRAM listener as the MirrorMaker 2 user.
        target_ca = secret(kubeobj, f"{SECURED}-cluster-ca-cert")["ca.crt"]
        jaas = secret(kubeobj, "mm2-user")["sasl.jaas.config"].decode()
        reader = tls_client(
            secured, "scram", target_ca, **{"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas}
        )
        mirrored = read_until(reader, f"{SINGLE}.{topic}", lambda seen: len(seen) >= 5)
        assert sorted(mirrored) == [f"record-{i}".encode() for i in range(5)]
        # The source's trust is a 0600 file of the workers' credentials, the password in none of their files.
        base = operator.state_dir / "workers" / operator.namespace / "KafkaMirrorMaker2" / MM2
        assert (base / "credentials" / "source-0" / "trusted-certificates.crt").read_bytes() == source_ca
        password = secret(kubeobj, "mm2-user")["password"].decode()
        assert password not in (base / "worker.properties").read_text() and password not in str(obj["status"])
    finally:
        kubeobj.delete("KafkaMirrorMaker2", MM2)
        kubeobj.delete("KafkaUser", "mm2-user")


def read_until(settings: KafkaClientSettings, topic: str, enough: Callable[[list[bytes]], bool]) -> list[bytes]:
    """The values of `topic` from its start until `enough` of them are read (the topic may not exist yet)."""
    consumer = Consumer(settings.librdkafka(**{"group.id": unique("reader"), "auto.offset.reset": "earliest"}))
    consumer.subscribe([topic])
    seen: list[bytes] = []
    try:
        deadline = time.monotonic() + 180
        while not enough(seen) and time.monotonic() < deadline:
            msg = consumer.poll(1)
            if msg is None or (msg.error() and msg.error().code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
                continue
            if msg.error():
                raise KafkaException(msg.error())
            seen.append(msg.value() or b"")
    finally:
        consumer.close()
    return seen


def test_a_forced_ca_renewal_rolls_the_broker_once_and_a_client_trusting_the_ca_keeps_reading(
    kubeobj: Kube, operator: OperatorProcess, clusters: dict[str, Any]
) -> None:
    kafka = kubeobj.get("Kafka", SINGLE)
    old_ca = secret(kubeobj, f"{SINGLE}-cluster-ca-cert")["ca.crt"]
    settings = tls_client(kafka, "tls", old_ca)
    topic = unique("renewal")
    produced: list[bytes] = []
    received: list[bytes] = []
    tls_errors: list[str] = []
    stop = threading.Event()

    def on_error(err: KafkaError) -> None:
        # Only a failed trust check counts ("certificate verify failed" and the like). A handshake the broker
        # cuts off as it shuts down for the roll ("SSL handshake failed: Disconnected: connection reset by
        # peer") is the roll itself, which the client rides out by reconnecting.
        if any(word in err.str().lower() for word in ("certificate", "verify")):
            tls_errors.append(err.str())

    def delivered(err: KafkaError | None, msg: Any) -> None:
        if err is None:
            produced.append(msg.value())

    def produce() -> None:
        producer = Producer(settings.librdkafka(**{"acks": "all", "error_cb": on_error}))
        i = 0
        try:
            while not stop.is_set():
                value = f"r{i}".encode()
                producer.produce(topic, value, on_delivery=delivered)
                producer.poll(0.2)
                i += 1
            producer.flush(120)
        finally:
            flushed.append(time.monotonic())  # every delivery is reported by now: `produced` is final

    def consume() -> None:
        consumer = Consumer(
            settings.librdkafka(**{"group.id": unique("g"), "auto.offset.reset": "earliest", "error_cb": on_error})
        )
        consumer.subscribe([topic])
        # Until every record the producer saw delivered is read (or a minute after its last delivery).
        while not flushed or not set(produced) <= set(received):
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                received.append(msg.value() or b"")
            if flushed and time.monotonic() > flushed[0] + 60:
                break
        consumer.close()

    flushed: list[float] = []
    threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
    for thread in threads:
        thread.start()
    try:
        wait_for(lambda: len(received) >= 5, 120, "the consumer to read over TLS")
        starts = node_starts(operator, SINGLE)
        kubeobj.core.patch_namespaced_secret(
            f"{SINGLE}-cluster-ca-cert", kubeobj.ns, {"metadata": {"annotations": {"strimzi.io/force-renew": "true"}}}
        )

        def renewed() -> bool:
            found = kubeobj.core.read_namespaced_secret(f"{SINGLE}-cluster-ca-cert", kubeobj.ns)
            return found.metadata.annotations.get("strimzi.io/ca-cert-generation") == "1"

        wait_for(renewed, 120, "the cluster CA certificate to be renewed")
        wait_for(lambda: node_starts(operator, SINGLE) == starts + 1, 300, "the broker to restart")
        kubeobj.wait("Kafka", SINGLE, is_ready, "Ready after the roll", timeout=300)
        after = len(received)
        wait_for(lambda: len(received) >= after + 20, 180, "records read after the roll, by the old CA's client")
    finally:
        stop.set()
        for thread in threads:
            thread.join(180)
    assert node_starts(operator, SINGLE) == starts + 1, "the broker restarted once"
    assert not tls_errors, tls_errors
    assert set(produced) <= set(received)

    new_secret = kubeobj.core.read_namespaced_secret(f"{SINGLE}-cluster-ca-cert", kubeobj.ns)
    assert "strimzi.io/force-renew" not in new_secret.metadata.annotations
    new_ca = secret(kubeobj, f"{SINGLE}-cluster-ca-cert")["ca.crt"]
    assert new_ca != old_ca
    old_cert, new_cert = (x509.load_pem_x509_certificate(p) for p in (old_ca, new_ca))
    assert old_cert.public_key() == new_cert.public_key() and new_cert.subject == old_cert.subject  # key kept
    # The status may list the renewed CA one reconcile after the roll: wait for it rather than read it once.
    wait_for(
        lambda: listener(kubeobj.get("Kafka", SINGLE), "tls")["certificates"] == [new_ca.decode()],
        120,
        "the Kafka status to list the renewed CA certificate",
    )
    # The broker now presents a certificate of the new generation, which a client of the new CA trusts too.
    verify(tls_client(kubeobj.get("Kafka", SINGLE), "tls", new_ca), 60)
    broker_cert = local_cluster(operator, SINGLE).tls.broker(0).cert.read_bytes()
    assert x509.load_pem_x509_certificate(broker_cert).not_valid_before_utc >= new_cert.not_valid_before_utc
