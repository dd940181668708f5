"""`GET /metrics`: the worker's metrics for Prometheus, read through the herder at scrape time.

Two sets, side by side:
- Kafka Connect's metric groups (and MirrorMaker 2's, the Kafka clients' and the JVM's) under the names
  and labels Strimzi's JMX exporter rules give them (metric_names.py), so Strimzi's Grafana dashboards
  and Prometheus alert rules for Connect and MirrorMaker 2 work against a sparklink worker unchanged;
  Spark's side of each task beside them (`sparklink_task_query_*`);
- sparklink's own summary: `sparklink_connector_state`, `sparklink_task_state` (1 for the state each is
  in), `sparklink_task_records` and `sparklink_task_batches`.
Everything is computed now, from what the runs recorded: nothing runs between scrapes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from fastapi import APIRouter, Response
from prometheus_client.utils import floatToGoString

from sparklink.api.errors import NotFoundError
from sparklink.api.states import State
from sparklink.worker.herder.model import Herder
from sparklink.worker.rest.deps import HerderDep
from sparklink.worker.rest.metric_names import Sample, samples

router = APIRouter(tags=["metrics"])
STATES = tuple(s for s in State if s is not State.DESTROYED)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def summary(herder: Herder) -> Iterator[Sample]:
    """sparklink's own series: connector and task states, and each running task's records and batches."""
    for name in herder.connectors():
        try:
            status = herder.connector_status(name)
        except NotFoundError:  # no status yet, or deleted while we were listing
            continue
        for state in STATES:
            yield Sample(
                "sparklink_connector_state",
                (("connector", name), ("state", state)),
                _is(status.connector.state, state),
                "gauge",
            )
        for task in status.tasks:
            for state in STATES:
                labels = (("connector", name), ("task", str(task.id)), ("state", state))
                yield Sample("sparklink_task_state", labels, _is(task.state, state), "gauge")
    for row in herder.task_metrics():
        ids = (("connector", row.connector), ("task", str(row.task)))
        yield Sample("sparklink_task_records_total", ids, float(row.records), "counter")
        yield Sample("sparklink_task_batches_total", ids, float(row.batches), "counter")


def _is(actual: State, state: State) -> float:
    return 1.0 if actual is state else 0.0


def exposition(series: Iterable[Sample]) -> bytes:
    """Prometheus' text format: each name once with its type, its series below it. Where two values
    land on one series (a rule cut a longer attribute name short onto a shorter one's), the value
    named in full stands."""
    families: dict[str, list[Sample]] = {}
    for sample in series:
        families.setdefault(sample.name, []).append(sample)
    lines = []
    for name, members in families.items():
        lines.append(f"# TYPE {name} {members[0].kind}")
        seen = set()
        for sample in sorted(members, key=lambda s: not s.exact):  # stable: the order within each kind stays
            if sample.labels in seen:
                continue
            seen.add(sample.labels)
            labels = ",".join(f'{k}="{_escape(v)}"' for k, v in sample.labels)
            lines.append(
                f"{name}{{{labels}}} {floatToGoString(sample.value)}"
                if labels
                else f"{name} {floatToGoString(sample.value)}"
            )
    return ("\n".join(lines) + "\n").encode()


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


@router.get("/metrics")
def metrics(herder: HerderDep) -> Response:
    body = exposition([*summary(herder), *samples(herder.metric_groups())])
    return Response(body, media_type=CONTENT_TYPE)
