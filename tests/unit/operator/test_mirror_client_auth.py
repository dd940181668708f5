"""KafkaMirrorMaker2's per-cluster `tls` and `authentication` (issue 29): the target's for the workers and the
connectors, each `mirrors[].source`'s for the connectors (Strimzi's `source.cluster.` / `target.cluster.`
settings), the Secrets' files 0600 in the worker's credentials directory, a missing Secret NotReady naming
it, a changed source Secret restarting the workers; and a resource's file config providers confined to the
credentials on the local runtime."""

from __future__ import annotations

import copy
import stat
from datetime import timedelta
from pathlib import Path
from typing import Any

import javaproperties

from sparklink.operator.hosting import HostState
from sparklink.operator.hosting.kubernetes import CONFIG_FILE, desired_objects
from sparklink.operator.hosting.local import LocalWorkerHost
from sparklink.operator.metrics import OperatorMetrics
from sparklink.operator.model import worker_security, workers
from sparklink.operator.model.autorestart import BackOff
from sparklink.operator.model.connectors import from_mirror_maker_2
from sparklink.operator.model.resources import Resource, Secret
from sparklink.operator.reconcile import mirror_maker_2
from sparklink.operator.reconcile.context import Deps
from tests.unit.operator.memory_store import MemoryStore
from tests.unit.operator.test_connect_workers import FixedClock, ScriptedHost, connect_body, worker_spec

CA_A = b"-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----\n"
CA_B = b"-----BEGIN CERTIFICATE-----\nB\n-----END CERTIFICATE-----\n"
SECRETS = {
    "cluster-a-cluster-ca-cert": {"ca.crt": CA_A},
    "cluster-b-cluster-ca-cert": {"ca.crt": CA_B},
    "mm2-user": {"password": b"target-pw"},
}
TLS_A = {"tls": {"trustedCertificates": [{"secretName": "cluster-a-cluster-ca-cert", "certificate": "ca.crt"}]}}
SCRAM_B = {
    "tls": {"trustedCertificates": [{"secretName": "cluster-b-cluster-ca-cert", "pattern": "*.crt"}]},
    "authentication": {
        "type": "scram-sha-512",
        "username": "mm2-user",
        "passwordSecret": {"secretName": "mm2-user", "password": "password"},
    },
}


def mirror(target: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    """A TLS cluster `a` mirrored to a SCRAM cluster `b`, in Strimzi's v1 fields."""
    return {
        "kind": "KafkaMirrorMaker2",
        "metadata": {"namespace": "ns", "name": "my-mm2", "uid": "u1"},
        "spec": {
            "replicas": 1,
            "target": {"alias": "b", **worker_spec(**target)},
            "mirrors": [
                {
                    "source": {"alias": "a", "bootstrapServers": "a:9093", **source},
                    "sourceConnector": {"tasksMax": 1, "config": {"replication.factor": 1}},
                    "checkpointConnector": {"tasksMax": 1},
                    "topicsPattern": "t.*",
                }
            ],
        },
    }


def resolved(body: dict[str, Any], secrets: dict[str, dict[str, bytes]] = SECRETS) -> workers.WorkerSettings:
    store = MemoryStore()
    store.secrets = {("ns", name): Secret("ns", name, data) for name, data in secrets.items()}
    key = store.put(body).key
    host = ScriptedHost(HostState("http://127.0.0.1:8083", False, 1, "starting", "/st/credentials"))
    deps = Deps(store, host, FixedClock(), BackOff(timedelta(seconds=1)), OperatorMetrics())
    mirror_maker_2.reconcile(deps, key)
    (settings,) = host.ensured
    return settings


def test_each_clusters_tls_and_scram_are_rendered_into_the_connectors_under_its_prefix() -> None:
    settings = resolved(mirror(SCRAM_B, TLS_A))
    target, sources = worker_security.connector_settings(settings, "/st/credentials", "ns")
    owner = Resource.from_json(mirror(SCRAM_B, TLS_A))
    source_connector, checkpoint = from_mirror_maker_2(owner, target, sources)
    for config in (source_connector.config, checkpoint.config):
        assert config["source.cluster.security.protocol"] == "SSL"
        assert config["source.cluster.ssl.truststore.type"] == "PEM"
        assert config["source.cluster.ssl.truststore.location"] == "/st/credentials/source-0/trusted-certificates.crt"
        assert "source.cluster.sasl.jaas.config" not in config
        assert config["target.cluster.security.protocol"] == "SASL_SSL"
        assert config["target.cluster.sasl.mechanism"] == "SCRAM-SHA-512"
        assert config["target.cluster.sasl.jaas.config"] == (
            'org.apache.kafka.common.security.scram.ScramLoginModule required username="mm2-user" '
            'password="${sparklinkcredentials:/st/credentials:sasl.password}";'
        )
        assert config["target.cluster.ssl.truststore.location"] == "/st/credentials/trusted-certificates.crt"
        assert "target-pw" not in str(config)
    assert source_connector.config["replication.factor"] == "1" and source_connector.config["topics"] == "t.*"
    # The workers' own clients speak SCRAM to the target.
    assert settings.client_auth is not None and settings.client_auth.protocol == "SASL_SSL"
    # Strimzi's MirrorMaker 2 defaults: records are copied byte for byte.
    for kind in ("key", "value", "header"):
        assert settings.config[f"{kind}.converter"] == "org.apache.kafka.connect.converters.ByteArrayConverter"


def test_the_source_credentials_are_0600_files_and_the_worker_declares_the_provider_that_reads_them(
    tmp_path: Path,
) -> None:
    source_scram = copy.deepcopy(SCRAM_B)  # a SCRAM source too, to a TLS target
    settings = resolved(mirror(TLS_A, source_scram))
    props = LocalWorkerHost._credentials(tmp_path, tmp_path / "credentials", settings)
    directory = tmp_path / "credentials"
    files = {p.relative_to(directory).as_posix(): p for p in directory.rglob("*")}
    assert set(files) == {
        "trusted-certificates.crt",
        "source-0",
        "source-0/trusted-certificates.crt",
        "source-0/sasl.password",
    }
    assert stat.S_IMODE(files["source-0"].stat().st_mode) == 0o700
    assert stat.S_IMODE(files["source-0/sasl.password"].stat().st_mode) == 0o600
    assert files["source-0/sasl.password"].read_bytes() == b"target-pw"
    assert props["config.providers"] == "sparklinkcredentials"
    assert props["config.providers.sparklinkcredentials.param.allowed.paths"] == str(directory)
    assert props["security.protocol"] == "SSL" and "sasl.jaas.config" not in props
    assert "target-pw" not in str(props)
    # In a pod: the Secret provider is declared for the source's placeholder; no secret in the ConfigMap.
    owner = Resource.from_json(mirror(TLS_A, source_scram))
    text = desired_objects(owner, settings, "img")["ConfigMap"]["data"][CONFIG_FILE]
    pod = javaproperties.loads(text)
    assert pod["config.providers"] == "strimzisecrets" and "target-pw" not in text
    _, sources = worker_security.connector_settings(settings, None, "ns")
    assert "${strimzisecrets:ns/mm2-user:password}" in sources[0]["source.cluster.sasl.jaas.config"]


def test_a_missing_source_secret_is_not_ready_naming_it_and_the_cluster() -> None:
    store = MemoryStore()
    store.secrets = {("ns", "mm2-user"): Secret("ns", "mm2-user", {"password": b"pw"})}
    key = store.put(mirror(SCRAM_B | {"tls": None}, TLS_A)).key
    host = ScriptedHost(HostState("http://127.0.0.1:8083", True, 1))
    deps = Deps(store, host, FixedClock(), BackOff(timedelta(seconds=1)), OperatorMetrics())
    result = mirror_maker_2.reconcile(deps, key)
    assert result.failed and not host.ensured
    (condition,) = store.get(key).status["conditions"]  # type: ignore[union-attr]
    assert condition["type"] == "NotReady"
    assert condition["message"] == (
        "Secret cluster-a-cluster-ca-cert not found in namespace ns (spec.mirrors[0].source)"
    )


def test_a_changed_source_secret_restarts_the_workers() -> None:
    first = resolved(mirror({}, TLS_A))
    renewed = {**SECRETS, "cluster-a-cluster-ca-cert": {"ca.crt": CA_B}}
    second = resolved(mirror({}, TLS_A), renewed)
    assert first.fingerprint() != second.fingerprint()
    assert first.fingerprint() == resolved(mirror({}, TLS_A)).fingerprint()


def test_file_providers_of_a_resource_read_only_the_credentials_on_the_local_runtime(tmp_path: Path) -> None:
    config = {
        "config.providers": "file,dir,env",
        "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
        "config.providers.file.param.allowed.paths": "/",
        "config.providers.dir.class": "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
        "config.providers.env.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
    }
    settings = workers.from_resource(Resource.from_json(connect_body(config=config)))
    assert settings.config["config.providers"] == "file,dir,env"  # Strimzi allows config.providers
    props = LocalWorkerHost._credentials(tmp_path, tmp_path / "credentials", settings)
    directory = str(tmp_path / "credentials")
    assert props["config.providers.file.param.allowed.paths"] == directory
    assert props["config.providers.dir.param.allowed.paths"] == directory
    assert "config.providers.env.param.allowed.paths" not in props
    (note,) = worker_security.provider_warnings(settings.config)
    assert note.type == "Warning" and note.reason == "ConfigProviderConfined"
    assert '"config.providers.file.param.allowed.paths" was replaced' in note.message
