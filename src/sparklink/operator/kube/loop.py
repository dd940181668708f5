"""The running operator: kopf's watch on the event loop, reconcile workers on threads, a periodic pass.

Level-triggered: every event on a resource enqueues its key, and a worker reconciles the whole resource
from a fresh read, never from the event's copy. Every `full_reconcile_interval` the periodic pass lists
every kind and enqueues them all (Strimzi's full reconciliation, 120 s by default). Reconcilers ask
for delayed re-checks (auto-restart back-off, workers or Kafka nodes still starting, a failed roll), which
the queue holds. Stopping stops the watch, drains the workers and stops the Connect workers, then the
Kafka clusters, the runtimes started.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import kopf

from sparklink.operator.clock import Clock, SystemClock
from sparklink.operator.hosting import WorkerHost
from sparklink.operator.hosting.kafka import KafkaHost
from sparklink.operator.hosting.local import LocalWorkerHost
from sparklink.operator.hosting.plugin_build import LocalPluginBuilder
from sparklink.operator.hosting.rest_tls import CLIENT_DIR as REST_CLIENT_DIR
from sparklink.operator.hosting.rest_tls import OperatorIdentity
from sparklink.operator.kube import caches, watch
from sparklink.operator.kube.queue import WorkQueue
from sparklink.operator.kube.store import KubeStore, api_client
from sparklink.operator.metrics import OperatorMetrics
from sparklink.operator.model.autorestart import BackOff
from sparklink.operator.model.resources import (
    KAFKA,
    KAFKA_CONNECT,
    KAFKA_CONNECTOR,
    KAFKA_MIRROR_MAKER_2,
    KAFKA_NODE_POOL,
    KAFKA_USER,
    PLURALS,
    Key,
    Resource,
)
from sparklink.operator.reconcile import (
    kafka,
    kafka_connect,
    kafka_connector,
    kafka_node_pool,
    kafka_user,
    mirror_maker_2,
)
from sparklink.operator.reconcile.context import Deps, ReconcileResult
from sparklink.roller.model import RollerSettings

log = logging.getLogger("sparklink.operator")

RECONCILERS: dict[str, Callable[[Deps, Key], ReconcileResult]] = {
    KAFKA_CONNECT: kafka_connect.reconcile,
    KAFKA_CONNECTOR: kafka_connector.reconcile,
    KAFKA_MIRROR_MAKER_2: mirror_maker_2.reconcile,
    KAFKA: kafka.reconcile,
    KAFKA_NODE_POOL: kafka_node_pool.reconcile,
    KAFKA_USER: kafka_user.reconcile,
}
# A reconcile that raised (API server or Connect unreachable, ...) is retried after this long.
ERROR_RETRY_SECONDS = 5.0


@dataclass
class OperatorConfig:
    kubeconfig: Path | None = None
    namespaces: list[str] = field(default_factory=list)  # empty: all namespaces
    full_reconcile_interval: float = 120.0
    minute: timedelta = timedelta(minutes=1)
    metrics_port: int | None = 8080
    state_dir: Path = Path(".state/operator")
    # The local runtime's workers' plugin.path (Strimzi sets it in its image; spec.config may not).
    plugin_path: str = ""
    workers: int = 4
    worker_log_level: str = "INFO"
    runtime: str = "local"  # or "kubernetes": Deployments in the cluster instead of local processes
    image: str = "sparklink:latest"
    kafka_heap: str = "512m"  # -Xmx of Kafka nodes whose Kafka or pool sets no jvmOptions
    # The roller's operation timeout (Strimzi: 300 s) and first back-off delay (Strimzi: 250 ms).
    kafka_operation_timeout: float = 300.0
    kafka_roll_backoff: float = 0.25


class Operator:
    def __init__(
        self,
        config: OperatorConfig,
        clock: Clock | None = None,
        runtime: WorkerHost | None = None,
        kafka_runtime: KafkaHost | None = None,
    ) -> None:
        self.config = config
        self.api = api_client(config.kubeconfig)
        self.store = KubeStore(self.api)
        self.metrics = OperatorMetrics()
        # The client certificate the operator presents to its workers, which trust it (hosting.rest_tls).
        self.identity = OperatorIdentity(config.state_dir / REST_CLIENT_DIR)
        if runtime is None and config.runtime == "kubernetes":
            from sparklink.operator.hosting.kubernetes import KubernetesWorkerHost

            runtime = KubernetesWorkerHost(self.api, config.image, identity=self.identity)
        self.runtime = runtime or LocalWorkerHost(
            config.state_dir,
            log_level=config.worker_log_level,
            plugin_path=config.plugin_path,
            identity=self.identity,
        )
        self.kafka = kafka_runtime or self._kafka_runtime()
        self.deps = Deps(
            self.store,
            self.runtime,
            clock or SystemClock(),
            BackOff(config.minute),
            self.metrics,
            kafka=self.kafka,
            connect=getattr(self.runtime, "identity", self.identity).connect,
            resolve_bootstrap=config.runtime == "local",
            plugin_builder=self._plugin_builder(),
        )
        self.queue = WorkQueue()
        self.metrics_port: int | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def _plugin_builder(self) -> LocalPluginBuilder | None:
        """spec.build plugins are fetched beside the local workers' state; the Kubernetes runtime builds no image."""
        if isinstance(self.runtime, LocalWorkerHost):
            return LocalPluginBuilder(self.runtime.state_dir)
        return None

    def _kafka_runtime(self) -> KafkaHost:
        if self.config.runtime == "kubernetes":
            from sparklink.operator.hosting.kafka_kubernetes import KubernetesKafkaHost

            return KubernetesKafkaHost(self.api)
        from sparklink.operator.hosting.kafka_local import LocalKafkaHost

        settings = RollerSettings(
            operation_timeout=self.config.kafka_operation_timeout, backoff_initial=self.config.kafka_roll_backoff
        )
        return LocalKafkaHost(self.config.state_dir, self.config.kafka_heap, settings)

    # -- lifecycle -----------------------------------------------------------------------------------

    def run(self) -> None:
        """Run until `stop()` (or SIGINT/SIGTERM through the CLI); blocks the calling thread."""
        if self.config.metrics_port is not None:
            self.metrics_port = self.metrics.serve(self.config.metrics_port)
            log.info("operator metrics on http://127.0.0.1:%d/metrics", self.metrics_port)
        for n in range(self.config.workers):
            self._spawn(f"reconcile-{n}", self._work)
        self._spawn("full-reconcile", self._periodic)
        scope = ", ".join(self.config.namespaces) or "all namespaces"
        log.info(
            "operator watching %s in %s (full reconcile every %.0fs)",
            ", ".join(PLURALS),
            scope,
            self.config.full_reconcile_interval,
        )
        try:
            # kopf watches at once: against a fresh API server that would be refused (429) until the
            # server's watch caches are built, and kopf logs each retry at ERROR (see `caches`).
            caches.wait_for_watch_caches(self.api, self.config.namespaces, self._stop)
            if not self._stop.is_set():
                asyncio.run(self._watch())
        finally:
            self._shutdown()

    def stop(self) -> None:
        self._stop.set()

    async def _watch(self) -> None:
        settings = watch.settings(kopf.OperatorSettings())
        try:
            await kopf.operator(
                registry=watch.registry(self.queue.add, self.api.configuration),
                settings=settings,
                standalone=True,
                clusterwide=not self.config.namespaces,
                namespaces=self.config.namespaces,
                stop_flag=self._stop,
            )
        finally:
            # kopf waits for a threading.Event in an executor thread; when a signal (which kopf handles
            # itself) stopped it, that thread must be released or the event loop never closes.
            self._stop.set()

    def _shutdown(self) -> None:
        self._stop.set()
        self.queue.close()
        for thread in self._threads:
            thread.join(timeout=60)
        self.runtime.close()  # Connect workers first: they are Kafka's clients
        self.kafka.close()
        self.metrics.close()
        self.api.close()
        log.info("operator stopped")

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=f"operator-{name}", daemon=True)
        thread.start()
        self._threads.append(thread)

    # -- work ----------------------------------------------------------------------------------------

    def _work(self) -> None:
        while not self._stop.is_set():
            key = self.queue.get(timeout=0.5)
            if key is None:
                continue
            try:
                self.reconcile(key)
            finally:
                self.queue.done(key)

    def reconcile(self, key: Key) -> ReconcileResult | None:
        metrics = self.metrics
        metrics.reconciliations.labels(*metrics.labels(key.kind, key.namespace)).inc()
        started = time.monotonic()
        try:
            result = RECONCILERS[key.kind](self.deps, key)
        except Exception as exc:
            metrics.reconciled(key.kind, key.namespace, time.monotonic() - started, ok=False)
            log.warning(
                "%s: reconcile failed, retrying in %.0fs: %s",
                key,
                ERROR_RETRY_SECONDS,
                exc,
                exc_info=log.isEnabledFor(logging.DEBUG),
            )
            self.queue.add(key, ERROR_RETRY_SECONDS)
            return None
        # A reconcile that ends NotReady failed, as Strimzi counts it.
        metrics.reconciled(key.kind, key.namespace, time.monotonic() - started, ok=not result.failed)
        for other in result.also:
            self.queue.add(other)
        if result.requeue_after is not None:
            self.queue.add(key, result.requeue_after)
        return result

    def _periodic(self) -> None:
        while not self._stop.wait(self.config.full_reconcile_interval):
            try:
                keys = self.all_keys(count=True)
            except Exception as exc:
                log.warning("full reconcile could not list resources: %s", exc)
                continue
            log.info("full reconcile of %d resources", len(keys))
            for key in keys:
                self.queue.add(key)

    def all_keys(self, count: bool = False) -> list[Key]:
        """Every resource the operator watches; with `count`, each kind's resources (and paused ones) per
        namespace are counted for the metrics, as Strimzi's periodic reconciliation counts them."""
        scopes: list[str | None] = list(self.config.namespaces) or [None]
        keys = []
        for kind in PLURALS:
            for ns in scopes:
                found = self.store.list(kind, ns)
                keys += [r.key for r in found]
                if count:
                    self._count(kind, ns, found)
        return keys

    def _count(self, kind: str, scope: str | None, found: list[Resource]) -> None:
        by_namespace: dict[str, list[Resource]] = {ns: [] for ns in ([scope] if scope is not None else [])}
        for resource in found:
            by_namespace.setdefault(resource.namespace, []).append(resource)
        for namespace, resources in by_namespace.items():
            paused = sum(1 for r in resources if r.annotations.get(kafka_connector.PAUSE_RECONCILIATION) == "true")
            self.metrics.counted(kind, namespace, len(resources), paused)
