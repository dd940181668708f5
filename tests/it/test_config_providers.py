"""Config providers on real parts: a JDBC sink whose password comes from a file writes to PostgreSQL while the
config topic, the REST answers and the worker's logs never hold the password; allowed.paths and the env
allow-list refuse what they must (the connector FAILED at start, as Connect fails it, saying why); a worker's own
SASL credentials come from a file and log in to a SCRAM listener; Strimzi's Kubernetes Secret provider reads
a real Secret from the API server."""

from __future__ import annotations

import base64
import json
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import javaproperties
import pytest
from confluent_kafka import Producer
from kubernetes import client

from sparklink.clients.preflight import verify
from sparklink.clients.security import is_security_key
from sparklink.clients.settings import KafkaClientSettings, client_config
from sparklink.platform.kafka import KafkaCluster
from sparklink.platform.kube import KubeCluster
from sparklink.worker.assembly import RunningWorker, log_settings, start_worker
from sparklink.worker.config import WorkerConfig
from sparklink.worker.providers.registry import ConfigProviders, UnresolvedError
from tests.conftest import worker_props
from tests.helpers import create_topic, read_topic, status, task_states, unique, wait_for
from tests.it.postgres import Postgres, postgres_server  # noqa: F401 - the `postgres` fixture
from tests.support.secured_kafka import SecuredKafka

KAFKA = "org.apache.kafka.common.config.provider."
ENV_USER = "SPARKLINK_TEST_PG_USER"


@pytest.fixture(scope="module")
def secrets_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("secrets")


@pytest.fixture(scope="module")
def provider_worker(
    kafka: KafkaCluster, spark: Any, postgres: Postgres, secrets_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningWorker]:
    """A worker declaring Connect's three providers: files only under `secrets_dir`, env only SPARKLINK_TEST_*."""
    with (secrets_dir / "pg.properties").open("w") as out:
        javaproperties.dump({"password": postgres.password}, out)
    (secrets_dir / "pg-password").write_text(postgres.password)  # as Kubernetes mounts a Secret's key
    os.environ[ENV_USER] = postgres.user  # read when the worker configures its env provider
    group = unique("providers")
    props = worker_props(
        kafka,
        group,
        tmp_path_factory.mktemp(group),
        **{
            "config.providers": "file,directory,env",
            "config.providers.file.class": KAFKA + "FileConfigProvider",
            "config.providers.file.param.allowed.paths": str(secrets_dir),
            "config.providers.directory.class": KAFKA + "DirectoryConfigProvider",
            "config.providers.directory.param.allowed.paths": str(secrets_dir),
            "config.providers.env.class": KAFKA + "EnvVarConfigProvider",
            "config.providers.env.param.allowlist.pattern": "SPARKLINK_TEST_.*",
        },
    )
    runtime = start_worker(WorkerConfig.model_validate(props), spark=spark)
    yield runtime
    runtime.stop()
    os.environ.pop(ENV_USER, None)


def _sink(postgres: Postgres, topic: str, password: str) -> dict[str, str]:
    return {
        "connector.class": "jdbc-sink",
        "topics": topic,
        "connection.url": postgres.jdbc_url,
        "connection.user": f"${{env:{ENV_USER}}}",
        "connection.password": password,
        "value.schema": "id BIGINT, name STRING",
    }


def _failed_trace(worker: RunningWorker, name: str) -> str:
    found = wait_for(
        lambda: (
            status(worker.url, name)["connector"].get("trace")
            if status(worker.url, name)["connector"]["state"] == "FAILED"
            else None
        ),
        60,
        f"{name} FAILED",
    )
    return str(found)


def test_jdbc_sink_password_from_a_file_writes_rows_and_is_never_shown(
    provider_worker: RunningWorker,
    kafka: KafkaCluster,
    postgres: Postgres,
    secrets_dir: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    worker, secret = provider_worker, postgres.password
    topic = unique("people")
    create_topic(kafka.bootstrap_servers, topic)
    placeholder = f"${{file:{secrets_dir}/pg.properties:password}}"
    config = _sink(postgres, topic, placeholder)
    created = httpx.post(f"{worker.url}/connectors", json={"name": "pg-file", "config": config}, timeout=60)
    assert created.status_code == 201, created.text
    wait_for(lambda: task_states(worker.url, "pg-file") == ["RUNNING"], 60, "pg-file RUNNING")
    producer = Producer(client_config(kafka.bootstrap_servers))
    for i in range(3):
        producer.produce(topic, value=json.dumps({"id": i, "name": f"n{i}"}).encode())
    assert producer.flush(30) == 0
    wait_for(
        lambda: len(postgres.query(f'SELECT id FROM "{topic}"')) == 3 if _has_table(postgres, topic) else False, 90
    )

    # GET /config, /tasks and /tasks-config keep the placeholder.
    got = httpx.get(f"{worker.url}/connectors/pg-file/config", timeout=30).json()
    assert got["connection.password"] == placeholder and got["connection.user"] == f"${{env:{ENV_USER}}}"
    tasks = httpx.get(f"{worker.url}/connectors/pg-file/tasks", timeout=30).json()
    assert [t["config"]["connection.password"] for t in tasks] == [placeholder]
    tasks_config = httpx.get(f"{worker.url}/connectors/pg-file/tasks-config", timeout=30).json()
    assert tasks_config["pg-file-0"]["connection.password"] == placeholder
    # So does the raw config topic: the connector record and its task record.
    records = read_topic(kafka.bootstrap_servers, worker.config.config_topic, 1)
    mine = {r.key().decode(): r.value().decode() for r in records if b"pg-file" in r.key()}
    assert json.loads(mine["connector-pg-file"])["properties"]["connection.password"] == placeholder
    assert json.loads(mine["task-pg-file-0"])["properties"]["connection.password"] == placeholder
    assert all(secret not in value for value in mine.values())

    # /config/validate: [hidden] for the password, whether a placeholder (of either file provider) or literal.
    for password in (placeholder, f"${{directory:{secrets_dir}:pg-password}}", secret):
        answer = httpx.put(
            f"{worker.url}/connector-plugins/jdbc-sink/config/validate",
            json={**config, "name": "pg-file", "connection.password": password},
            timeout=60,
        )
        assert answer.status_code == 200, answer.text
        values = {c["value"]["name"]: c["value"] for c in answer.json()["configs"]}
        assert values["connection.password"]["value"] == "[hidden]" and answer.json()["error_count"] == 0
        assert secret not in answer.text

    # Nothing the worker logged in all this holds the password: Python's log records or the JVM's output.
    assert (
        "starting connector pg-file with config" in caplog.text and "'connection.password': '[hidden]'" in caplog.text
    )
    assert secret not in caplog.text
    out, err = capfd.readouterr()
    assert secret not in out and secret not in err


def _has_table(postgres: Postgres, table: str) -> bool:
    return bool(postgres.query(f"SELECT 1 FROM pg_tables WHERE tablename = '{table}'"))


def test_a_file_outside_allowed_paths_is_accepted_then_fails_the_connector_saying_why(
    provider_worker: RunningWorker, postgres: Postgres, secrets_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.properties"
    outside.write_text(f"password={postgres.password}\n")
    placeholder = f"${{file:{outside}:password}}"
    config = _sink(postgres, unique("t"), placeholder)
    # Connect validates with what it could resolve and stores the config; the connector then fails.
    created = httpx.post(f"{provider_worker.url}/connectors", json={"name": "pg-outside", "config": config}, timeout=60)
    assert created.status_code == 201, created.text
    trace = _failed_trace(provider_worker, "pg-outside")
    assert f"connection.password: cannot resolve {placeholder}" in trace
    assert f"the file provider may not read {outside}: it is not under its allowed.paths ({secrets_dir});" in trace
    assert "add its directory to config.providers.file.param.allowed.paths in the worker's properties" in trace
    assert postgres.password not in trace


def test_the_env_allowlist_refuses_a_variable_outside_it(provider_worker: RunningWorker, postgres: Postgres) -> None:
    os.environ.setdefault("HOME", "/root")
    config = {**_sink(postgres, unique("t"), postgres.password), "connection.user": "${env:HOME}"}
    created = httpx.post(f"{provider_worker.url}/connectors", json={"name": "pg-env", "config": config}, timeout=60)
    assert created.status_code == 201, created.text
    trace = _failed_trace(provider_worker, "pg-env")
    assert (
        "connection.user: cannot resolve ${env:HOME}: the env provider may not read environment variable HOME: it "
        in trace
    )
    assert "does not match its allowlist.pattern (SPARKLINK_TEST_.*); use a variable it matches" in trace


def test_worker_sasl_credentials_from_a_file_log_in_to_a_scram_listener(
    secured_kafka: SecuredKafka, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    client_props = secured_kafka.properties("saslssl", "SCRAM-SHA-512")
    creds = tmp_path / "worker-credentials.properties"
    with creds.open("w") as out:
        javaproperties.dump({"jaas": client_props["sasl.jaas.config"]}, out)
    worker_config = {
        **{k: v for k, v in client_props.items() if k != "sasl.jaas.config"},
        "config.providers": "file",
        "config.providers.file.class": KAFKA + "FileConfigProvider",
        "config.providers.file.param.allowed.paths": str(tmp_path),
        "sasl.jaas.config": f"${{file:{creds}:jaas}}",
        "producer.sasl.jaas.config": f"${{file:{creds}:jaas}}",
    }
    config = WorkerConfig.model_validate(worker_config)
    extra = config.model_extra or {}
    assert extra["sasl.jaas.config"] == client_props["sasl.jaas.config"] == extra["producer.sasl.jaas.config"]
    log_settings(config)
    # The resolved settings are what a worker client uses: they log in over SASL_SSL with SCRAM-SHA-512.
    security = {k: v for k, v in extra.items() if is_security_key(k)}
    cluster = verify(KafkaClientSettings.from_properties(security, config.bootstrap_servers), timeout=60)
    assert cluster.cluster_id
    assert "sasl.jaas.config = [hidden]" in caplog.text
    assert client_props["sasl.jaas.config"] not in caplog.text and creds.read_text() not in caplog.text


@pytest.mark.kube
def test_strimzi_secret_provider_reads_a_real_secret(kube: KubeCluster, kube_api: client.ApiClient) -> None:
    core = client.CoreV1Api(kube_api)
    namespace = unique("providers")
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    data = {"password": "k8s-s3cret", "ca.crt": "CA-ONE", "ca2.crt": "CA-TWO"}
    encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    core.create_namespaced_secret(namespace, client.V1Secret(metadata=client.V1ObjectMeta(name="db"), data=encoded))
    core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="settings"), data={"mode": "upsert"})
    )
    providers = ConfigProviders.from_properties(
        {
            "config.providers": "secrets,configmaps",
            "config.providers.secrets.class": "io.strimzi.kafka.KubernetesSecretConfigProvider",
            "config.providers.secrets.param.kubeconfig": str(kube.kubeconfig),
            "config.providers.configmaps.class": "io.strimzi.kafka.KubernetesConfigMapConfigProvider",
            "config.providers.configmaps.param.kubeconfig": str(kube.kubeconfig),
        }
    )
    try:
        resolved = providers.resolve(
            {
                "connection.password": f"${{secrets:{namespace}/db:password}}",
                "ssl.truststore.certificates": f"${{secrets:{namespace}/db:*.crt}}",
                "insert.mode": f"${{configmaps:{namespace}/settings:mode}}",
            }
        )
        assert resolved == {
            "connection.password": "k8s-s3cret",
            "ssl.truststore.certificates": "CA-ONE\nCA-TWO",  # sorted by key, joined by the separator
            "insert.mode": "upsert",
        }
        with pytest.raises(UnresolvedError) as missing:
            providers.resolve({"k": f"${{secrets:{namespace}/nope:password}}"})
        assert f"the secrets provider: Secret nope in namespace {namespace} not found" in str(missing.value)
        with pytest.raises(UnresolvedError, match="has no key 'username'"):
            providers.resolve({"k": f"${{secrets:{namespace}/db:username}}"})
        with pytest.raises(UnresolvedError, match=re.escape("Invalid path Bad_Name. It has to be in format")):
            providers.resolve({"k": "${secrets:Bad_Name:password}"})
    finally:
        providers.close()
        core.delete_namespace(namespace)
