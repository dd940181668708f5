"""Operator metrics for Prometheus under Strimzi's cluster operator's names and labels.

Strimzi's operators (MetricsHolder, ConnectOperatorMetricsHolder) publish, per resource kind and
namespace and the operator's label selector (`kind`, `namespace`, `selector`; the selector is empty
when the operator watches every resource, as this one does):
- `strimzi_reconciliations_total`, `..._successful_total`, `..._failed_total`, `..._locked_total`
  (never here: the work queue never runs two reconciliations of one resource at once) and
  `..._periodical_total` (full passes over a kind);
- `strimzi_reconciliations_duration_seconds` (Micrometer's timer: a histogram with Strimzi's buckets
  of 1, 5, 10, 30, 60, 120 and 300 s, and `_max`, the longest of the last two minutes);
- `strimzi_resources` and `strimzi_resources_paused` (`strimzi.io/pause-reconciliation: "true"`), as
  counted at each full pass;
- `strimzi_auto_restarts_total` (kind KafkaConnector, or KafkaMirrorMaker2).
So Strimzi's operators dashboard and alert rules read a sparklink operator unchanged. Each operator
owns its registry (tests run several in one process); `serve` exposes it on /metrics. Callers: the
work loop (kube/loop.py) and the connector reconciler (auto-restarts).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

LABELS = ("kind", "namespace", "selector")
BUCKETS = (1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)  # MicrometerMetricsProvider.timer's SLAs
MAX_WINDOW_S = 120.0  # Micrometer's TimeWindowMax: the longest of the last two minutes


class OperatorMetrics:
    def __init__(self, selector: str = "") -> None:
        self.registry = CollectorRegistry()
        self.selector = selector
        self.reconciliations = self._counter(
            "strimzi_reconciliations", "Number of reconciliations done by the operator for individual resources"
        )
        self.successful = self._counter(
            "strimzi_reconciliations_successful",
            "Number of reconciliations done by the operator for individual resources which were successful",
        )
        self.failures = self._counter(
            "strimzi_reconciliations_failed",
            "Number of reconciliations done by the operator for individual resources which failed",
        )
        self.locked = self._counter(
            "strimzi_reconciliations_locked",
            "Number of reconciliations skipped because another reconciliation for the same resource was still running",
        )
        self.periodical = self._counter(
            "strimzi_reconciliations_periodical", "Number of periodical reconciliations done by the operator"
        )
        self.auto_restarts = self._counter("strimzi_auto_restarts", "Number of auto restarts of the connector")
        self.duration = Histogram(
            "strimzi_reconciliations_duration_seconds",
            "The time the reconciliation takes to complete",
            LABELS,
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.resources = Gauge(
            "strimzi_resources", "Number of custom resources the operator sees", LABELS, registry=self.registry
        )
        self.paused = Gauge(
            "strimzi_resources_paused",
            "Number of custom resources the operator sees but does not reconcile due to paused reconciliations",
            LABELS,
            registry=self.registry,
        )
        self._longest = WindowMax()
        self.registry.register(self._longest)

    def _counter(self, name: str, help_text: str) -> Counter:
        return Counter(name, help_text, LABELS, registry=self.registry)

    def labels(self, kind: str, namespace: str) -> tuple[str, str, str]:
        return (kind, namespace, self.selector)

    def reconciled(self, kind: str, namespace: str, seconds: float, ok: bool) -> None:
        """One reconciliation ended (it was counted when it began)."""
        labels = self.labels(kind, namespace)
        # Each outcome's series exists from the first reconciliation on, at 0 until it happens (a locked
        # one never does: the work queue never runs two reconciliations of one resource at once).
        for counter in (self.successful, self.failures, self.locked):
            counter.labels(*labels)
        (self.successful if ok else self.failures).labels(*labels).inc()
        self.duration.labels(*labels).observe(seconds)
        self._longest.observe(labels, seconds)

    def counted(self, kind: str, namespace: str, resources: int, paused: int) -> None:
        """A full pass over a kind in a namespace found `resources`, `paused` of them paused."""
        labels = self.labels(kind, namespace)
        self.periodical.labels(*labels).inc()
        self.resources.labels(*labels).set(resources)
        self.paused.labels(*labels).set(paused)

    def serve(self, port: int, addr: str = "127.0.0.1") -> int:
        """Serve /metrics on `port` (0 picks a free one); returns the port."""
        server, _thread = start_http_server(port, addr=addr, registry=self.registry)
        self._server = server
        return int(server.server_address[1])

    def close(self) -> None:
        server = getattr(self, "_server", None)
        if server is not None:
            server.shutdown()
            server.server_close()


class WindowMax(Collector):
    """`strimzi_reconciliations_duration_seconds_max`: the longest reconciliation of the last two
    minutes per label set (0 once none is that recent), computed when scraped."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, ...], list[tuple[float, float]]] = {}

    def observe(self, labels: tuple[str, ...], seconds: float) -> None:
        now = time.monotonic()
        with self._lock:
            recent = [(t, v) for t, v in self._seen.get(labels, []) if now - t < MAX_WINDOW_S and v > seconds]
            self._seen[labels] = [*recent, (now, seconds)]

    def collect(self) -> Iterator[Any]:
        family = GaugeMetricFamily(
            "strimzi_reconciliations_duration_seconds_max",
            "The time the reconciliation takes to complete",
            labels=LABELS,
        )
        now = time.monotonic()
        with self._lock:
            for labels, seen in self._seen.items():
                family.add_metric(list(labels), max((v for t, v in seen if now - t < MAX_WINDOW_S), default=0.0))
        yield family
