"""`GET /metrics`: Prometheus metrics of the worker, read from the herder and the task worker at scrape time.

Names follow Prometheus conventions; every series carries the connector (and task) it describes.
"""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import APIRouter, Response
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from sparklink.herder.herder import Herder
from sparklink.rest.deps import HerderDep
from sparklink.storage import status as st

router = APIRouter(tags=["metrics"])
STATES = (st.UNASSIGNED, st.RUNNING, st.PAUSED, st.FAILED, st.RESTARTING, st.STOPPED)


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
            status = self.herder.statuses.connector(name)
            for state in STATES:
                connectors.add_metric([name, state], 1.0 if status and status.state == state else 0.0)
            for task_id, task_status in self.herder.statuses.tasks(name).items():
                for state in STATES:
                    tasks.add_metric([name, str(task_id), state], 1.0 if task_status.state == state else 0.0)
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
        worker = self.herder.worker
        for row in worker.metrics() if worker is not None else []:
            labels = [str(row["connector"]), str(row["task"])]
            records.add_metric(labels, float(row["records"]))
            batches.add_metric(labels, float(row["batches"]))
        yield records
        yield batches


@router.get("/metrics")
def metrics(herder: HerderDep) -> Response:
    registry = CollectorRegistry()
    registry.register(HerderCollector(herder))
    return Response(generate_latest(registry), media_type="text/plain; version=0.0.4; charset=utf-8")
