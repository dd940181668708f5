"""Assembles a worker: Kafka-backed stores, the SparkSession, the task worker, the herder and REST server.

Callers: `sparklink worker` (runs until a signal) and the test fixtures (in-process, sharing one
SparkSession). `Runtime.start()` returns once the REST API answers.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import uvicorn
from confluent_kafka.admin import AdminClient

from sparklink.execution.worker import Worker
from sparklink.herder.herder import Herder
from sparklink.kafka_clients import client_config
from sparklink.platform import ports
from sparklink.rest.app import create_app
from sparklink.storage.backend import KafkaBackend
from sparklink.storage.config import ConfigStore
from sparklink.storage.kafka_log import KafkaLog
from sparklink.storage.offsets import OffsetStore
from sparklink.storage.status import StatusStore
from sparklink.worker_config import WorkerConfig

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


def build_herder(config: WorkerConfig) -> Herder:
    """A herder on Kafka-backed stores, without a worker yet (attach one before `start()`)."""
    bs = config.bootstrap_servers

    def backend(topic: str, partitions: int, rf: int) -> KafkaBackend:
        return KafkaBackend(KafkaLog(bs, topic, partitions, rf, client_id=config.group_id))

    return Herder(
        config,
        ConfigStore(backend(config.config_topic, 1, config.config_replication)),
        StatusStore(backend(config.status_topic, config.status_partitions, config.status_replication)),
        OffsetStore(backend(config.offset_topic, config.offset_partitions, config.offset_replication)),
        worker=None,
        cluster_id=cluster_id(bs),
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


@dataclass
class Runtime:
    config: WorkerConfig
    spark: SparkSession | None = None
    herder: Herder | None = None
    server: uvicorn.Server | None = None
    _thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://{self.config.rest_host}:{self.config.rest_port}"

    def start(self, timeout: float = 120.0) -> Runtime:
        from sparklink.execution.spark import build_session

        if self.config.rest_port == 0:
            self.config = self.config.with_overrides(rest_port=ports.free_port())
        herder = build_herder(self.config)
        self.herder = herder
        # The REST server comes up first so /health can say "starting" while Spark and the stores load.
        app = create_app(herder)
        self.server = uvicorn.Server(
            uvicorn.Config(
                app,
                host=self.config.rest_host,
                port=self.config.rest_port,
                log_level="warning",
                access_log=False,
                lifespan="off",
            )
        )
        self._thread = threading.Thread(target=self.server.run, name="rest", daemon=True)
        self._thread.start()
        ports.wait_until(
            lambda: ports.port_open(self.config.rest_port, self.config.rest_host),
            timeout,
            what=f"the REST server on port {self.config.rest_port}",
        )
        if self.spark is None:
            self.spark = build_session(self.config.spark_master)
        scratch = Path(self.config.state_dir) / "checkpoints" if self.config.state_dir else None
        herder.attach_worker(
            Worker(
                self.spark,
                self.config.bootstrap_servers,
                herder.offsets,
                herder,
                self.config.trigger_interval_ms,
                scratch,
                converter_defaults(self.config),
            )
        )
        herder.start()
        log.info("worker %s ready at %s", herder.worker_id, self.url)
        return self

    def stop(self) -> None:
        """Stop every task query, flush the stores and shut the REST server down. Idempotent."""
        if self.herder is not None:
            herder, self.herder = self.herder, None
            herder.stop()
        if self.server is not None:
            self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15)

    def run_forever(self) -> None:
        try:
            while self._thread is not None and self._thread.is_alive():
                time.sleep(0.5)
        finally:
            self.stop()
