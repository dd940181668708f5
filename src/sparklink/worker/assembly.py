"""Assembles a worker: Kafka-backed stores, the SparkSession, the worker, the herder and the REST server.

Callers: `sparklink worker`, `sparklink mirror-maker` and the demo (run until a signal), the test
fixtures (in-process, sharing one SparkSession) and the benchmarks. `start_worker` returns a
`RunningWorker` whose parts all exist; the REST server comes up first so `/health` can say "starting"
while Spark and the stores load.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import uvicorn
from confluent_kafka.admin import AdminClient
from fastapi import FastAPI

from sparklink.clients.settings import client_config
from sparklink.platform import ports
from sparklink.worker.config import WorkerConfig
from sparklink.worker.execution.tasks import TaskQueries
from sparklink.worker.execution.worker import Worker
from sparklink.worker.herder.distributed import DistributedHerder
from sparklink.worker.herder.herder import StandaloneHerder, Stores
from sparklink.worker.plugins import Plugins
from sparklink.worker.rest import app as rest_app
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


class RestServer:
    """The Connect REST API served by uvicorn on a thread of this process."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.app: FastAPI = rest_app.create_app()
        # uvloop and httptools (C) instead of asyncio's loop and h11 (pure Python): the REST server
        # shares the GIL with Spark's callbacks, so its own cost per request is what it can save.
        config = uvicorn.Config(
            self.app,
            host=host,
            port=port,
            loop="uvloop",
            http="httptools",
            log_level="warning",
            access_log=False,
            lifespan="off",
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="rest", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def start(self, timeout: float) -> None:
        self._thread.start()
        ports.wait_until(
            lambda: ports.port_open(self.port, self.host), timeout, what=f"the REST server on port {self.port}"
        )

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=15)


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
        return self.rest.url

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


def start_worker(config: WorkerConfig, spark: SparkSession | None = None, timeout: float = 120.0) -> RunningWorker:
    """Serve REST, build Spark and the stores, start the herder; returns once every connector is started."""
    from sparklink.worker.execution.spark import build_session, stop_session

    if config.rest_port == 0:
        config = config.with_overrides(rest_port=ports.free_port())
    rest = RestServer(config.rest_host, config.rest_port)
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
        queries = TaskQueries(
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
        worker = Worker(plugins, queries)
        herder_class = DistributedHerder if config.mode == "distributed" else StandaloneHerder
        herder = herder_class(config, stores, worker, plugins, cluster_id(config.bootstrap_servers))
        rest_app.attach(rest.app, herder)
        herder.start()
    except BaseException:
        # Nothing half-started stays behind: the REST server, and the Spark JVM if we launched it.
        rest.stop()
        if owns_spark and session is not None:
            stop_session(session)
        raise
    log.info("worker %s ready at %s", herder.worker_id, rest.url)
    return RunningWorker(config, session, stores, worker, herder, rest, owns_spark)
