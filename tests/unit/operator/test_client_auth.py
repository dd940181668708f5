"""KafkaConnect `spec.tls` and `spec.authentication` as Strimzi renders them: the settings for the worker
and its producer./consumer./admin. clients, the Secrets' material checked with Strimzi's messages, files
0600 for a local worker and no secret in any properties text."""

from __future__ import annotations

import stat
from datetime import timedelta
from pathlib import Path
from typing import Any

import javaproperties
import pytest

from sparklink.operator.hosting import HostState
from sparklink.operator.hosting.kubernetes import CONFIG_FILE, desired_objects
from sparklink.operator.hosting.local import LocalWorkerHost
from sparklink.operator.metrics import OperatorMetrics
from sparklink.operator.model import workers
from sparklink.operator.model.autorestart import BackOff
from sparklink.operator.model.client_auth import ClientAuth
from sparklink.operator.model.conditions import ReconcileFailure
from sparklink.operator.model.resources import Resource, Secret
from sparklink.operator.reconcile import kafka_connect
from sparklink.operator.reconcile.context import Deps
from tests.unit.operator.memory_store import MemoryStore
from tests.unit.operator.test_connect_workers import FixedClock, ScriptedHost, connect_body

CA = b"-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"
SCRAM = {
    "tls": {"trustedCertificates": [{"secretName": "my-cluster-cluster-ca-cert", "certificate": "ca.crt"}]},
    "authentication": {
        "type": "scram-sha-512",
        "username": "my-user",
        "passwordSecret": {"secretName": "my-user", "password": "password"},
    },
}
SECRETS = {"my-cluster-cluster-ca-cert": {"ca.crt": CA}, "my-user": {"password": b"s3cret-pw"}}


def test_scram_over_tls_is_rendered_for_the_worker_and_each_client_prefix_without_the_password() -> None:
    auth = ClientAuth.from_spec(SCRAM, "spec")
    assert auth is not None and auth.protocol == "SASL_SSL"
    settings = auth.local_settings("/state/credentials", "env")
    for prefix in ("", "producer.", "consumer.", "admin."):
        assert settings[prefix + "security.protocol"] == "SASL_SSL"
        assert settings[prefix + "sasl.mechanism"] == "SCRAM-SHA-512"
        assert settings[prefix + "ssl.truststore.location"] == "/state/credentials/trusted-certificates.crt"
        assert settings[prefix + "sasl.jaas.config"] == (
            'org.apache.kafka.common.security.scram.ScramLoginModule required username="my-user" '
            'password="${sparklinkcredentials:/state/credentials:sasl.password}";'
        )
    assert settings["config.providers"] == "env,sparklinkcredentials"
    assert settings["config.providers.sparklinkcredentials.param.allowed.paths"] == "/state/credentials"
    material = auth.resolve(SECRETS.get, "ns")
    assert material.files["sasl.password"] == b"s3cret-pw" and material.files["trusted-certificates.crt"] == CA
    assert "s3cret" not in repr(material) and "s3cret" not in str(settings)


def test_tls_authentication_and_a_pattern_of_trusted_certificates() -> None:
    spec = {
        "tls": {"trustedCertificates": [{"secretName": "cas", "pattern": "*.crt"}]},
        "authentication": {
            "type": "tls",
            "certificateAndKey": {"secretName": "me", "certificate": "user.crt", "key": "user.key"},
        },
    }
    auth = ClientAuth.from_spec(spec, "spec")
    assert auth is not None and auth.protocol == "SSL"
    secrets = {"cas": {"b.crt": b"B\n", "a.crt": b"A", "ca.p12": b"P"}, "me": {"user.crt": b"C\n", "user.key": b"K"}}
    material = auth.resolve(secrets.get, "ns")
    assert material.files["trusted-certificates.crt"] == b"A\nB\n"
    assert material.files["client.pem"] == b"K\nC\n"
    settings = auth.local_settings("/d", None)
    assert settings["admin.ssl.keystore.location"] == "/d/client.pem" and "config.providers" not in settings
    pod = auth.kubernetes_settings("ns", None, material)
    assert pod["consumer.ssl.keystore.key"] == "${strimzisecrets:ns/me:user.key}"
    assert pod["ssl.truststore.certificates"] == "A\nB\n"
    assert pod["config.providers.strimzisecrets.class"] == "io.strimzi.kafka.KubernetesSecretConfigProvider"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"authentication": {"type": "tls"}},
            "TLS Client authentication selected, but no certificate and key configured.",
        ),
        (
            {"authentication": {"type": "scram-sha-512", "username": "u"}},
            "SCRAM-SHA-512 authentication selected, but username or password configuration is missing.",
        ),
        ({"authentication": {"type": "oauth"}}, "spec.authentication type 'oauth' is not supported by sparklink"),
        ({"tls": {"trustedCertificates": [{"secretName": "x"}]}}, "needs exactly one of certificate or pattern"),
    ],
)
def test_incomplete_or_unsupported_authentication_is_refused_with_strimzis_words(
    spec: dict[str, Any], message: str
) -> None:
    with pytest.raises(ReconcileFailure) as refused:
        ClientAuth.from_spec(spec, "spec")
    assert message in refused.value.message and refused.value.reason == "InvalidResourceException"


@pytest.mark.parametrize(
    ("secrets", "message"),
    [
        ({"my-user": {"password": b"x"}}, "Secret my-cluster-cluster-ca-cert not found in namespace ns"),
        ({**SECRETS, "my-user": {"other": b"x"}}, "Items with key(s) [password] are missing in Secret my-user"),
    ],
)
def test_a_missing_secret_or_key_makes_the_connect_not_ready_naming_it_and_nothing_starts(
    secrets: dict[str, dict[str, bytes]], message: str
) -> None:
    store = MemoryStore()
    store.secrets = {("ns", name): Secret("ns", name, data) for name, data in secrets.items()}
    key = store.put(connect_body(**SCRAM)).key
    host = ScriptedHost(HostState("http://127.0.0.1:8083", True, 1))
    deps = Deps(store, host, FixedClock(), BackOff(timedelta(seconds=1)), OperatorMetrics())
    result = kafka_connect.reconcile(deps, key)
    [condition] = store.resources[key].status["conditions"]
    assert result.failed and host.ensured == [] and result.requeue_after is not None
    assert (condition["type"], condition["reason"], condition["message"]) == (
        "NotReady",
        "InvalidConfigurationException",
        message,
    )


def test_the_host_gets_the_material_and_a_changed_secret_changes_the_fingerprint() -> None:
    store = MemoryStore()
    store.secrets = {("ns", name): Secret("ns", name, data) for name, data in SECRETS.items()}
    key = store.put(connect_body(**SCRAM)).key
    host = ScriptedHost(HostState("http://127.0.0.1:8083", False, 1, "starting"))
    deps = Deps(store, host, FixedClock(), BackOff(timedelta(seconds=1)), OperatorMetrics())
    kafka_connect.reconcile(deps, key)
    store.secrets[("ns", "my-user")] = Secret("ns", "my-user", {"password": b"rotated"})
    kafka_connect.reconcile(deps, key)
    first, second = host.ensured
    assert first.material is not None and first.material.files["sasl.password"] == b"s3cret-pw"
    assert first.fingerprint() != second.fingerprint()


def test_a_local_worker_reads_its_secrets_from_0600_files_and_no_properties_text_holds_one(tmp_path: Path) -> None:
    owner = Resource.from_json(connect_body(**SCRAM))
    auth = workers.from_resource(owner)
    material = auth.client_auth.resolve(SECRETS.get, "ns") if auth.client_auth else None
    settings = workers.WorkerSettings(**{**auth.__dict__, "material": material})
    props = LocalWorkerHost._credentials(tmp_path, tmp_path / "credentials", settings)
    directory = tmp_path / "credentials"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    for name in ("sasl.password", "trusted-certificates.crt"):
        assert stat.S_IMODE((directory / name).stat().st_mode) == 0o600
    assert (directory / "sasl.password").read_bytes() == b"s3cret-pw"
    assert "s3cret" not in str(props)
    config_map = desired_objects(owner, settings, "img")["ConfigMap"]["data"][CONFIG_FILE]
    pod = javaproperties.loads(config_map)
    assert "s3cret" not in config_map and "${strimzisecrets:ns/my-user:password}" in pod["sasl.jaas.config"]


def test_a_username_cannot_leave_its_jaas_quotes_or_carry_a_line_break() -> None:
    spec = {**SCRAM, "authentication": {**SCRAM["authentication"], "username": 'u" password="x'}}
    auth = ClientAuth.from_spec(spec, "spec")
    assert auth is not None
    assert 'username="u\\" password=\\"x"' in auth.local_settings("/d", None)["sasl.jaas.config"]
    body = connect_body(**{**SCRAM, "authentication": {**SCRAM["authentication"], "username": "u\nx"}})
    with pytest.raises(ReconcileFailure, match=r"spec\.authentication\.username has a line break"):
        workers.from_resource(Resource.from_json(body))
