"""Assembles a worker: Kafka-backed stores, the SparkSession, the worker, the herder and the REST server.

Callers: `sparklink worker`, `sparklink mirror-maker` and the demo (run until a signal), the test
fixtures (in-process, sharing one SparkSession) and the benchmarks. `start_worker` returns a
`RunningWorker` whose parts all exist; the REST server comes up first so `/health` can say "starting"
while Spark and the stores load.

Every Kafka client of the worker takes its settings from one `WorkerClients` (sparklink.clients.connect),
built and checked before anything starts: an unusable client setting (an unknown `security.protocol`, a
missing key store, ...) is refused as a WorkerConfigError, and brokers that refuse the worker's settings
(a wrong password, an untrusted certificate, ...) fail the start within seconds with a KafkaAccessError
naming the broker, the protocol and mechanism and the setting to check, before Spark starts.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sparklink.clients import preflight
from sparklink.clients.connect import ClientKind, WorkerClients
from sparklink.clients.errors import ClientSettingsError, KafkaAccessError
from sparklink.clients.secrets import redact, secret_values
from sparklink.worker import log_context, redaction
from sparklink.worker.config import WorkerConfig, WorkerConfigError
from sparklink.worker.execution.tasks import TaskRuns
from sparklink.worker.execution.worker import Worker
from sparklink.worker.herder.distributed import DistributedHerder
from sparklink.worker.herder.herder import StandaloneHerder, Stores
from sparklink.worker.plugins import Plugins, jvm_host, locations
from sparklink.worker.rest import app as rest_app
from sparklink.worker.rest.security.settings import RestSecurity
from sparklink.worker.rest.server import RestServer
from sparklink.worker.storage.backend import KafkaBackend
from sparklink.worker.storage.config import ConfigStore
from sparklink.worker.storage.group_offsets import KafkaGroupOffsetStore
from sparklink.worker.storage.kafka_log import KafkaLog
from sparklink.worker.storage.offsets import OffsetStore
from sparklink.worker.storage.status import StatusStore

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from sparklink.worker.plugins.jvm_host import ConnectHost

log = logging.getLogger(__name__)


PREFLIGHT_TIMEOUT_S = 120.0
"""How long the start waits for brokers that do not answer at all (a cluster may still be starting; the stores
waited as long before); a refusal of the worker's settings fails the start at once."""


def kafka_clients(config: WorkerConfig) -> WorkerClients:
    """The worker's Kafka client settings, checked; WorkerConfigError names a setting no client could use."""
    try:
        return WorkerClients.from_worker(config.kafka_client_properties)
    except ClientSettingsError as exc:
        raise WorkerConfigError(
            f"Invalid worker configuration: {exc}. Correct this setting and start the worker again."
        ) from None


def kafka_stores(config: WorkerConfig, clients: WorkerClients | None = None) -> Stores:
    """The four stores on the worker group's internal topics (not started), with the worker's own client
    settings (the group offsets store: its task-admin settings)."""
    clients = clients or kafka_clients(config)
    # In a group every worker writes these topics; each follows them to see the others' writes.
    follow = config.mode == "distributed"
    # Java source tasks write their offsets from the Spark tasks that run them: followed too.
    follow_offsets = follow or bool(locations.scan(config.plugin_path).java)

    def backend(key: str, topic: str, partitions: int, rf: int, follows: bool = follow) -> KafkaBackend:
        create = config.internal_topics_creation
        log = KafkaLog(
            clients.worker, topic, partitions, rf, client_id=config.group_id, create=create, topic_config=key
        )
        return KafkaBackend(log, follow=follows)

    return Stores(
        configs=ConfigStore(backend("config.storage.topic", config.config_topic, 1, config.config_replication)),
        statuses=StatusStore(
            backend("status.storage.topic", config.status_topic, config.status_partitions, config.status_replication)
        ),
        offsets=OffsetStore(
            backend(
                "offset.storage.topic",
                config.offset_topic,
                config.offset_partitions,
                config.offset_replication,
                follow_offsets,
            )
        ),
        group_offsets=KafkaGroupOffsetStore(clients.task(ClientKind.ADMIN)),
    )


def connect_host(config: WorkerConfig, spark: SparkSession) -> ConnectHost | None:
    """The Connect host in the driver's JVM when plugin.path holds Java plugins (the bootstrap built it)."""
    from sparklink.worker.execution import spark as spark_setup

    classpath = spark_setup.connect_host_classpath()
    if not locations.scan(config.plugin_path).java or classpath is None:
        return None  # the plugin registry says why Java plugins are not loaded
    return jvm_host.ConnectHost(spark, classpath, functools.partial(spark_setup.start_callback_server, spark))


def converter_defaults(config: WorkerConfig) -> dict[str, str]:
    """The worker's `key.converter`, `value.converter`, `header.converter` settings and their options."""
    extra = config.model_extra or {}
    prefixes = ("key.converter", "value.converter", "header.converter")
    return {k: str(v) for k, v in extra.items() if k.startswith(prefixes)}


def check_kafka(clients: WorkerClients, timeout: float = PREFLIGHT_TIMEOUT_S) -> str:
    """One metadata request with the worker's own settings (Connect's start looks up the cluster id the
    same way); the cluster id. Raises KafkaAccessError saying what to fix."""
    info = preflight.verify(clients.worker, timeout=timeout)
    log.info("Kafka cluster %s at %s", info.cluster_id, clients.worker.describe())
    return info.cluster_id or ""


def log_settings(config: WorkerConfig) -> None:
    """Connect's "WorkerConfig values:" at start, secrets `[hidden]`; the resolved secrets are kept out of
    every later log record too (a client error or a trace that quotes one)."""
    settings = {k: v for k, v in config.model_dump(by_alias=True).items() if v is not None}
    redaction.remember(secret_values(settings))
    lines = "".join(f"\n\t{k} = {v}" for k, v in sorted(redact(settings).items()))
    log.info("worker configuration values:%s", lines)


@dataclass(frozen=True)
class RunningWorker:
    """A started worker; every part exists."""

    config: WorkerConfig
    spark: SparkSession
    stores: Stores
    worker: Worker
    herder: StandaloneHerder
    rest: RestServer
    owns_spark: bool

    @property
    def url(self) -> str:
        """The URL this worker advertises to the others (Connect's advertised URL)."""
        return self.config.advertised_url

    def stop(self) -> None:
        """Stop every task query and connector, flush the stores, shut the REST server down. Idempotent."""
        from sparklink.worker.execution.spark import stop_session

        self.herder.stop()
        self.rest.stop()
        if self.owns_spark:
            stop_session(self.spark)

    def run_until(self, stop: threading.Event) -> None:
        """Serve until `stop` is set (a signal) or the REST server dies, then stop cleanly."""
        try:
            while self.rest.alive and not stop.wait(0.5):
                pass
        finally:
            self.stop()


def start_worker(
    config: WorkerConfig,
    spark: SparkSession | None = None,
    timeout: float = 120.0,
    environ: Mapping[str, str] | None = None,
) -> RunningWorker:
    """Serve REST, build Spark and the stores, start the herder; returns once every connector is started.

    The REST security settings and the Kafka client settings are read first (`environ` supplies KAFKA_OPTS;
    the process's by default): one the worker cannot serve or connect with raises WorkerConfigError before
    anything starts. Brokers that refuse the worker's Kafka settings raise KafkaAccessError before Spark starts.
    """
    from sparklink.worker.execution.spark import build_session, spark_dirs, stop_session

    log_context.install()
    log_settings(config)
    clients = kafka_clients(config)
    rest = RestServer(RestSecurity.of(config, os.environ if environ is None else environ))
    config = rest.bound(config)
    rest.start(timeout)
    owns_spark, session = spark is None, spark
    try:
        try:
            kafka_cluster_id = check_kafka(clients)
        except KafkaAccessError as exc:
            log.error("the worker cannot use Kafka: %s", exc)
            raise
        # Other spark.* worker properties (executor memory and cores, k8s image, ...) go to Spark as they are.
        spark_conf = {k: str(v) for k, v in (config.model_extra or {}).items() if k.startswith("spark.")}
        session = (
            spark
            if spark is not None
            else build_session(config.spark_master, f"sparklink-{config.worker_id}", spark_conf)
        )
        stores = kafka_stores(config, clients)
        plugins = Plugins(
            config.plugin_path,
            config.plugin_discovery,
            java=connect_host(config, session),
            clients=clients.worker,
            offsets_topic=config.offset_topic,
        )
        scratch = Path(config.state_dir) / "checkpoints" if config.state_dir else None
        # Plugins never write where the worker keeps code: its installation, state, Spark's jars and home.
        files = config.file_access(*spark_dirs(session))
        runs = TaskRuns(
            session,
            clients,
            stores.offsets,
            stores.group_offsets,
            config.trigger_interval_ms,
            scratch,
            converter_defaults(config),
            stop_grace_s=config.task_shutdown_graceful_timeout_ms / 1000,
            realtime_batch_ms=config.realtime_batch_ms,
            offset_flush_ms=config.offset_flush_interval_ms,
            warm_up_topic=config.config_topic if config.warm_up_enable else None,
            files=files,
        )
        worker = Worker(plugins, runs)
        herder: StandaloneHerder
        if config.mode == "distributed":
            # Requests to the other workers use the REST security settings' TLS (client certificate, trust).
            herder = DistributedHerder(
                config, stores, worker, plugins, kafka_cluster_id, files, peer_tls=rest.security.peer_tls.context
            )
        else:
            herder = StandaloneHerder(config, stores, worker, plugins, kafka_cluster_id, files)
        rest_app.attach(rest.app, herder)
        herder.start()
    except BaseException:
        # Nothing half-started stays behind: the REST server, and the Spark JVM if we launched it.
        rest.stop()
        if owns_spark and session is not None:
            stop_session(session)
        raise
    log.info("worker %s ready, advertising %s", herder.worker_id, config.advertised_url)
    return RunningWorker(config, session, stores, worker, herder, rest, owns_spark)
