"""Operator metrics for Prometheus: reconciliations, failures and automatic restarts per resource kind.

Each operator owns its registry (tests run several in one process); `serve` exposes it on /metrics.
Strimzi's equivalents are `strimzi_reconciliations_total`, `strimzi_reconciliations_failed_total` and
`strimzi_auto_restarts_total`; ours carry the `sparklink_operator_` prefix and the same labels.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server


class OperatorMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        labels = ("kind", "namespace")
        self.reconciliations = Counter(
            "sparklink_operator_reconciliations",
            "Reconciliations run, per resource kind and namespace.",
            labels,
            registry=self.registry,
        )
        self.failures = Counter(
            "sparklink_operator_reconciliations_failed",
            "Reconciliations that ended NotReady or raised, per resource kind and namespace.",
            labels,
            registry=self.registry,
        )
        self.auto_restarts = Counter(
            "sparklink_operator_auto_restarts",
            "Automatic restarts of FAILED connectors and tasks, per resource kind and namespace.",
            labels,
            registry=self.registry,
        )
        self.duration = Histogram(
            "sparklink_operator_reconcile_duration_seconds",
            "Time one reconcile took, per resource kind.",
            ("kind",),
            registry=self.registry,
        )

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
