"""Worker configuration: Connect's worker property names, typed, with sparklink's own additions.

Built from a `worker.properties` file and/or CLI flags; unknown keys are kept for forward compatibility.
Placeholders of the config providers the properties declare (`config.providers`, KIP-297/KIP-421) are
resolved once, here, before any setting is read, so every part of the worker (its Kafka clients, REST
TLS, Spark) sees resolved values. Secrets among them (`sparklink.clients.secrets` decides which) are
masked in the model's repr and in error messages, so a log line or a traceback that shows the config
does not show them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from sparklink.api import files
from sparklink.api.config import read_properties
from sparklink.clients.secrets import HIDDEN, is_secret
from sparklink.worker import listeners as listener_urls
from sparklink.worker import request_signing
from sparklink.worker.providers.registry import ConfigProviders, ProviderConfigError, UnresolvedError, is_provider_key

__all__ = ["WorkerConfig", "read_properties"]

log = logging.getLogger(__name__)

PROVIDER_ERROR = "config_providers"  # the pydantic error type of a placeholder or provider problem

LOCAL_REALTIME_BATCH_MS = 300_000
CLUSTER_REALTIME_BATCH_MS = 60_000


class WorkerConfig(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow", frozen=True)

    bootstrap_servers: str = Field("127.0.0.1:9092", alias="bootstrap.servers")
    group_id: str = Field("sparklink-cluster", alias="group.id")
    config_topic: str = Field("connect-configs", alias="config.storage.topic")
    offset_topic: str = Field("connect-offsets", alias="offset.storage.topic")
    status_topic: str = Field("connect-status", alias="status.storage.topic")
    config_replication: int = Field(1, alias="config.storage.replication.factor")
    offset_replication: int = Field(1, alias="offset.storage.replication.factor")
    status_replication: int = Field(1, alias="status.storage.replication.factor")
    offset_partitions: int = Field(25, alias="offset.storage.partitions")
    status_partitions: int = Field(5, alias="status.storage.partitions")
    # Connect 4.4: false makes the worker use the three topics above as they are, and refuse to start
    # without them, for clusters where only an administrator creates topics.
    internal_topics_creation: bool = Field(True, alias="internal.topics.automatic.creation.enable")
    rest_host: str = Field("127.0.0.1", alias="rest.host.name")
    rest_port: int = Field(8083, alias="rest.port")
    advertised_host: str | None = Field(None, alias="rest.advertised.host.name")
    advertised_port: int | None = Field(None, alias="rest.advertised.port")
    # Connect's REST security settings (worker/rest/security); the TLS stores are read from the `ssl.*`,
    # `listeners.https.ssl.*` and `admin.listeners.https.ssl.*` keys kept as extras.
    listeners: str | None = Field(None, alias="listeners")
    admin_listeners: str | None = Field(None, alias="admin.listeners")
    advertised_listener: Literal["http", "https"] | None = Field(None, alias="rest.advertised.listener")
    access_control_allow_origin: str = Field("", alias="access.control.allow.origin")
    access_control_allow_methods: str = Field("", alias="access.control.allow.methods")
    rest_extension_classes: str = Field("", alias="rest.extension.classes")
    # The JAAS file of basic authentication; else `-Djava.security.auth.login.config=` in KAFKA_OPTS.
    jaas_login_config: str | None = Field(None, alias="java.security.auth.login.config")
    # KIP-507: the session key that signs requests between the workers of a group (distributed mode only).
    inter_worker_key_generation_algorithm: str = Field(
        request_signing.DEFAULT_ALGORITHM, alias="inter.worker.key.generation.algorithm"
    )
    inter_worker_key_size: int | None = Field(None, alias="inter.worker.key.size")
    inter_worker_key_ttl_ms: int = Field(request_signing.DEFAULT_TTL_MS, alias="inter.worker.key.ttl.ms")
    inter_worker_signature_algorithm: str = Field(
        request_signing.DEFAULT_ALGORITHM, alias="inter.worker.signature.algorithm"
    )
    inter_worker_verification_algorithms: str = Field(
        request_signing.DEFAULT_ALGORITHM, alias="inter.worker.verification.algorithms"
    )
    topic_tracking_enable: bool = Field(True, alias="topic.tracking.enable")
    topic_tracking_allow_reset: bool = Field(True, alias="topic.tracking.allow.reset")
    # standalone: this worker alone owns the group's topics; distributed: it joins the Kafka group
    # `group.id` with the other workers on the same topics (Connect's connect-distributed).
    mode: Literal["standalone", "distributed"] = Field("standalone", alias="sparklink.worker.mode")
    session_timeout_ms: int = Field(10000, alias="session.timeout.ms", ge=1000)
    heartbeat_interval_ms: int = Field(3000, alias="heartbeat.interval.ms", ge=100)
    rebalance_timeout_ms: int = Field(60000, alias="rebalance.timeout.ms", ge=1000)
    scheduled_rebalance_max_delay_ms: int = Field(300000, alias="scheduled.rebalance.max.delay.ms", ge=0)
    # local[N] runs Spark in the worker's JVM; spark://host:7077, yarn or k8s://... run the task queries
    # on that cluster's executors, one Spark application per worker.
    spark_master: str = Field(default_factory=lambda: default_local_master(), alias="spark.master")
    trigger_interval_ms: int = Field(1000, alias="task.trigger.interval.ms")
    # A real-time task (execution/direct.py) checkpoints once per batch of this length, and each batch
    # end stalls its records for a moment (0.2-0.4 s on 2 cores), so batches are long. Unset, it is
    # 5 minutes in local mode, where a task's offsets, record count and topics come from its producer's
    # acknowledgements between batch ends; and Connect's default offset flush interval (60 s) on a
    # Spark cluster, where they come from batch ends only. Spark refuses less than 5 s
    # (spark.sql.streaming.realTimeMode.minBatchDuration).
    task_realtime_batch_interval_ms: int | None = Field(None, alias="task.realtime.batch.interval.ms", ge=5000)
    # How often a real-time task's offsets are stored between batch ends, from what its producer has
    # had acknowledged (local mode). Connect's name; its 60 s default would leave a crash repeating
    # a minute of records, and storing an unchanged offset costs nothing.
    offset_flush_interval_ms: int = Field(5000, alias="offset.flush.interval.ms", ge=100)
    # How long a stopping task's batch in hand may run on before its query is stopped (and its jobs
    # cancelled): Connect's setting of the same name and default.
    task_shutdown_graceful_timeout_ms: int = Field(5000, alias="task.shutdown.graceful.timeout.ms", ge=0)
    # Connect's plugin locations (comma-separated directories or jars): Java plugins run in the Spark JVMs'
    # Connect host, Python distributions (a *.dist-info with sparklink entry points) are imported from there.
    plugin_path: str = Field("", alias="plugin.path")
    # KIP-898: how Java plugins are found (service manifests, reflection or both), as in Connect.
    plugin_discovery: Literal["only_scan", "hybrid_warn", "hybrid_fail", "service_load"] = Field(
        "hybrid_warn", alias="plugin.discovery"
    )
    state_dir: str | None = Field(None, alias="sparklink.state.dir")
    # Every task is a Spark streaming query in this process: bound what one request can ask for.
    tasks_max_limit: int = Field(256, alias="sparklink.tasks.max.limit", ge=1)
    # The directories connectors may read and write files in (api/files.py; Kafka's KIP-993
    # `allowed.paths` semantics): absolute, existing, comma-separated. Unset: anywhere but the worker's
    # own installation, Python path and state directory.
    file_allowed_paths: str | None = Field(None, alias="sparklink.file.allowed.paths")
    # Before it takes connectors, a worker runs Spark's write path and Kafka reader once (execution/warm_up.py):
    # its first tasks then start as fast as later ones, for ~3.5 s more at start on 2 cores.
    warm_up_enable: bool = Field(True, alias="sparklink.warm.up.enable")

    @property
    def realtime_batch_ms(self) -> int:
        """`task.realtime.batch.interval.ms`, or its default for the Spark master."""
        if self.task_realtime_batch_interval_ms is not None:
            return self.task_realtime_batch_interval_ms
        return LOCAL_REALTIME_BATCH_MS if self.spark_master.startswith("local") else CLUSTER_REALTIME_BATCH_MS

    @model_validator(mode="before")
    @classmethod
    def _resolve_placeholders(cls, data: Any) -> Any:
        """Connect's AbstractConfig: the declared providers resolve every other setting's placeholders."""
        if not isinstance(data, dict) or not data.get("config.providers"):
            return data
        try:
            providers = ConfigProviders.from_properties(data)
        except ProviderConfigError as exc:
            raise PydanticCustomError(PROVIDER_ERROR, "{problem}", {"problem": str(exc)}) from None
        try:
            texts = {k: v for k, v in data.items() if isinstance(v, str) and not is_provider_key(k)}
            resolved = providers.resolve(texts)
        except UnresolvedError as exc:
            raise PydanticCustomError(PROVIDER_ERROR, "{problem}", {"problem": str(exc)}) from None
        finally:
            providers.close()
        return {**data, **resolved}

    def file_access(self, *protected: str | Path) -> files.FileAccess:
        """The rules plugins read and write files by: the allow-list, and no writes into this process's
        installation, the state directory, plugin.path or `protected` (what else the worker keeps: Spark's jars)."""
        own = [self.state_dir] if self.state_dir else []
        # plugin.path holds code the worker loads (jars, Python distributions): never a file connector's target.
        plugins = [entry.strip() for entry in self.plugin_path.split(",") if entry.strip()]
        return files.FileAccess.of(self.file_allowed_paths, [*own, *plugins, *protected])

    @field_validator("file_allowed_paths")
    @classmethod
    def _file_allowed_paths(cls, value: str | None) -> str | None:
        files.parse_allowed(value)  # ValueError: "Path x is not absolute" / "does not exist", as Kafka says
        return value

    @property
    def kafka_client_properties(self) -> dict[str, str]:
        """What the worker's Kafka clients are built from (sparklink.clients.connect), in Connect's names: the
        bootstrap servers, the top-level security and client settings, the `producer.`/`consumer.`/`admin.`
        prefixes and `connector.client.config.override.policy`."""
        extra = {k: str(v) for k, v in (self.model_extra or {}).items() if v is not None}
        return {**extra, "bootstrap.servers": self.bootstrap_servers}

    @field_validator("plugin_discovery", mode="before")
    @classmethod
    def _plugin_discovery(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("listeners")
    @classmethod
    def _listeners(cls, value: str | None) -> str | None:
        if value is not None:
            listener_urls.parse(value)
        return value

    @field_validator("admin_listeners")
    @classmethod
    def _admin_listeners(cls, value: str | None) -> str | None:
        listener_urls.parse_admin(value)
        return value

    @field_validator("advertised_listener", mode="before")
    @classmethod
    def _advertised_listener(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _advertised_listener_exists(self) -> WorkerConfig:
        _ = self.advertised_url  # raises ListenerError when the advertised protocol has no listener
        if self.listeners is not None and self.model_fields_set & {"rest_host", "rest_port"}:
            log.warning("listeners is set, so rest.host.name and rest.port are ignored (as in Connect)")
        return self

    @model_validator(mode="after")
    def _signing_settings(self) -> WorkerConfig:
        # As DistributedConfig: only a distributed worker reads them (a standalone one has no internal requests).
        if self.mode == "distributed":
            self.signing.check()
        return self

    @property
    def signing(self) -> request_signing.Settings:
        """The `inter.worker.*` settings (KIP-507)."""
        listed = self.inter_worker_verification_algorithms.split(",")
        return request_signing.Settings(
            key_algorithm=self.inter_worker_key_generation_algorithm.strip(),
            key_size=self.inter_worker_key_size,
            ttl_ms=self.inter_worker_key_ttl_ms,
            signature_algorithm=self.inter_worker_signature_algorithm.strip(),
            verification_algorithms=tuple(a.strip() for a in listed if a.strip()),
        )

    @property
    def rest_listeners(self) -> list[listener_urls.Listener]:
        """`listeners`, or `http://{rest.host.name}:{rest.port}` when it is unset."""
        if self.listeners is not None:
            return listener_urls.parse(self.listeners)
        return [listener_urls.Listener(listener_urls.HTTP, self.rest_host, self.rest_port)]

    @property
    def admin_rest_listeners(self) -> list[listener_urls.Listener] | None:
        """`admin.listeners`: None serves /admin on the regular listeners, [] nowhere."""
        return listener_urls.parse_admin(self.admin_listeners)

    @property
    def advertised_url(self) -> str:
        """The URL other workers reach this one at (Connect's RestServer.advertisedUrl)."""
        return listener_urls.advertised_url(
            self.rest_listeners, self.advertised_listener, self.advertised_host, self.advertised_port
        )

    @property
    def worker_id(self) -> str:
        """`host:port` of the advertised URL, as Connect's statuses name a worker."""
        return urlsplit(self.advertised_url).netloc

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for key, value in super().__repr_args__():
            yield key, HIDDEN if key is not None and is_secret(key) else value

    @classmethod
    def from_properties(cls, path: Path | None, overrides: dict[str, str] | None = None) -> WorkerConfig:
        props: dict[str, str] = {}
        if path is not None:
            props.update(read_properties(path))
        props.update({k: v for k, v in (overrides or {}).items() if v is not None})
        try:
            return cls.model_validate(props)
        except ValidationError as exc:
            raise WorkerConfigError(_describe(exc, path)) from None

    def with_overrides(self, **values: object) -> WorkerConfig:
        return self.model_copy(update=values)


class WorkerConfigError(ValueError):
    """A worker setting with a value the worker cannot run with; the message names each one."""


def _describe(error: ValidationError, path: Path | None) -> str:
    source = f" in {path}" if path is not None else ""
    lines = [f"Invalid worker configuration{source}:"]
    for problem in error.errors():
        if problem["type"] == PROVIDER_ERROR:
            lines.append(f"  {problem['msg']}")
            continue
        key = ".".join(str(part) for part in problem["loc"]) or "(the file)"
        value = problem.get("input")
        shown = f" = {value!r}" if isinstance(value, str | int | float) else ""
        if is_secret(key):
            shown = f" = {HIDDEN}"
        lines.append(f"  {key}{shown}: {problem['msg']}")
    lines.append("Correct these settings and start the worker again.")
    return "\n".join(lines)


def default_local_master() -> str:
    """`local[N]` with N = twice the cores, at least 8: Spark task threads in the worker's JVM.

    Tasks wait on Kafka far more than they compute, and a MirrorSource task in real-time mode holds a
    thread per partition it reads for as long as it runs (execution/direct.py); `local[*]` (one thread
    per core) would leave a 2-core machine a single thread for real-time tasks."""
    return f"local[{max(8, 2 * (os.cpu_count() or 1))}]"
