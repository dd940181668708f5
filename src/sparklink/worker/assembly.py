"""Assembles a worker: Kafka-backed stores, the SparkSession, the worker, the herder and the REST server.

Callers: `sparklink worker`, `sparklink mirror-maker` and the demo (run until a signal), the test
fixtures (in-process, sharing one SparkSession) and the benchmarks. `start_worker` returns a
`RunningWorker` whose parts all exist; the REST server comes up first so `/health` can say "starting"
while Spark and the stores load.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from confluent_kafka.admin import AdminClient

from sparklink.clients.settings import client_config
from sparklink.worker.config import WorkerConfig
from sparklink.worker.execution.tasks import TaskRuns
from sparklink.worker.execution.worker import Worker
from sparklink.worker.herder.distributed import DistributedHerder
from sparklink.worker.herder.herder import StandaloneHerder, Stores
from sparklink.worker.plugins import Plugins
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

log = logging.getLogger(__name__)


def kafka_stores(config: WorkerConfig) -> Stores:
    """The four stores on the worker group's internal topics (not started)."""
    bs = config.bootstrap_servers
    # In a group every worker writes these topics; each follows them to see the others' writes.
    follow = config.mode == "distributed"

    def backend(key: str, topic: str, partitions: int, rf: int) -> KafkaBackend:
        create = config.internal_topics_creation
        log = KafkaLog(bs, topic, partitions, rf, client_id=config.group_id, create=create, topic_config=key)
        return KafkaBackend(log, follow=follow)

    return Stores(
        configs=ConfigStore(backend("config.storage.topic", config.config_topic, 1, config.config_replication)),
        statuses=StatusStore(
            backend("status.storage.topic", config.status_topic, config.status_partitions, config.status_replication)
        ),
        offsets=OffsetStore(
            backend("offset.storage.topic", config.offset_topic, config.offset_partitions, config.offset_replication)
        ),
        group_offsets=KafkaGroupOffsetStore(bs),
    )


def converter_defaults(config: WorkerConfig) -> dict[str, str]:
    """The worker's `key.converter`, `value.converter`, `header.converter` settings and their options."""
    extra = config.model_extra or {}
    prefixes = ("key.converter", "value.converter", "header.converter")
    return {k: str(v) for k, v in extra.items() if k.startswith(prefixes)}


def cluster_id(bootstrap_servers: str) -> str:
    admin = AdminClient(client_config(bootstrap_servers))
    try:
        return str(admin.describe_cluster(request_timeout=10).result(timeout=15).cluster_id)
    except Exception:
        log.warning("could not read the Kafka cluster id from %s", bootstrap_servers, exc_info=True)
        return ""


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

    The REST security settings are read first (`environ` supplies KAFKA_OPTS; the process's by default):
    one the worker cannot serve with raises WorkerConfigError before anything starts.
    """
    from sparklink.worker.execution.spark import build_session, stop_session

    rest = RestServer(RestSecurity.of(config, os.environ if environ is None else environ))
    config = rest.bound(config)
    rest.start(timeout)
    owns_spark, session = spark is None, spark
    try:
        # Other spark.* worker properties (executor memory and cores, k8s image, ...) go to Spark as they are.
        spark_conf = {k: str(v) for k, v in (config.model_extra or {}).items() if k.startswith("spark.")}
        session = (
            spark
            if spark is not None
            else build_session(config.spark_master, f"sparklink-{config.worker_id}", spark_conf)
        )
        stores = kafka_stores(config)
        plugins = Plugins()
        scratch = Path(config.state_dir) / "checkpoints" if config.state_dir else None
        runs = TaskRuns(
            session,
            config.bootstrap_servers,
            stores.offsets,
            stores.group_offsets,
            config.trigger_interval_ms,
            scratch,
            converter_defaults(config),
            stop_grace_s=config.task_shutdown_graceful_timeout_ms / 1000,
            realtime_batch_ms=config.realtime_batch_ms,
            offset_flush_ms=config.offset_flush_interval_ms,
            warm_up_topic=config.config_topic,
        )
        worker = Worker(plugins, runs)
        herder: StandaloneHerder
        if config.mode == "distributed":
            # Requests to the other workers use the REST security settings' TLS (client certificate, trust).
            herder = DistributedHerder(
                config,
                stores,
                worker,
                plugins,
                cluster_id(config.bootstrap_servers),
                peer_tls=rest.security.peer_tls.context,
            )
        else:
            herder = StandaloneHerder(config, stores, worker, plugins, cluster_id(config.bootstrap_servers))
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
