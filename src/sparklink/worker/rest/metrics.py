"""`GET /metrics`: Prometheus metrics of the worker, read through the herder at scrape time.

Names follow Prometheus conventions; every series carries the connector (and task) it describes.
"""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import APIRouter, Response
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from sparklink.api.errors import NotFoundError
from sparklink.api.states import State
from sparklink.worker.herder.model import Herder
from sparklink.worker.rest.deps import HerderDep

router = APIRouter(tags=["metrics"])
STATES = tuple(s for s in State if s is not State.DESTROYED)


class HerderCollector(Collector):
    def __init__(self, herder: Herder) -> None:
        self.herder = herder

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        connectors = GaugeMetricFamily(
            "sparklink_connector_state", "1 for the state the connector is in", labels=["connector", "state"]
        )
        tasks = GaugeMetricFamily(
            "sparklink_task_state", "1 for the state each task is in", labels=["connector", "task", "state"]
        )
        for name in self.herder.connectors():
            try:
                status = self.herder.connector_status(name)
            except NotFoundError:  # no status yet, or deleted while we were listing
                continue
            for state in STATES:
                connectors.add_metric([name, state], 1.0 if status.connector.state is state else 0.0)
            for task in status.tasks:
                for state in STATES:
                    tasks.add_metric([name, str(task.id), state], 1.0 if task.state is state else 0.0)
        yield connectors
        yield tasks
        records = CounterMetricFamily(
            "sparklink_task_records", "Records a task has moved since it started", labels=["connector", "task"]
        )
        batches = CounterMetricFamily(
            "sparklink_task_batches",
            "Micro-batches a task has committed since it started",
            labels=["connector", "task"],
        )
        for row in self.herder.task_metrics():
            labels = [row.connector, str(row.task)]
            records.add_metric(labels, float(row.records))
            batches.add_metric(labels, float(row.batches))
        yield records
        yield batches


@router.get("/metrics")
def metrics(herder: HerderDep) -> Response:
    registry = CollectorRegistry()
    registry.register(HerderCollector(herder))
    return Response(generate_latest(registry), media_type="text/plain; version=0.0.4; charset=utf-8")
