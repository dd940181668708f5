"""The worker names its metric groups exactly as Strimzi's JMX exporter rules name Connect's MBeans.

Each group a worker reports is made by the code that reports it (the herder's worker-level groups,
a run's measures, the error counts, the start-ups, MirrorMaker's values, the JVM's client MBeans);
Strimzi's own rule files (tests/data/strimzi/metrics) are applied to the same MBeans as the exporter
applies them, and the two must agree on every name, label and type.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest

from sparklink.api.metrics import (
    CONNECT_DOMAIN,
    JVM_DOMAIN,
    MIRROR_DOMAIN,
    SPARKLINK_DOMAIN,
    MetricGroup,
    connect_group,
    task_tags,
)
from sparklink.api.states import State
from sparklink.connectors.mirror.interceptor import MIRROR_VALUES
from sparklink.worker.execution import jvm_metrics
from sparklink.worker.execution.task_metrics import RunMeasures, task_group
from sparklink.worker.execution.worker import Startups
from sparklink.worker.herder.herder import StandaloneHerder
from sparklink.worker.herder.metrics import Rebalances
from sparklink.worker.rest import metric_names
from sparklink.worker.transforms.errors import ErrorCounts
from tests.support import strimzi_metrics
from tests.unit.test_herder import datagen, herder  # noqa: F401 (the fixture)

CLIENTS = "\n".join(
    [
        "kafka.consumer\ttype=consumer-metrics,client-id=consumer-1\tconnection-count\t2.0",
        "kafka.consumer\ttype=consumer-metrics,client-id=consumer-1\tincoming-byte-total\t1234.0",
        "kafka.consumer\ttype=consumer-metrics,client-id=consumer-1\tincoming-byte-rate\t12.5",
        "kafka.consumer\ttype=app-info,client-id=consumer-1\tstart-time-ms\t1700000000000.0",
        "kafka.consumer\ttype=consumer-fetch-manager-metrics,client-id=consumer-1,topic=t,partition=0\trecords-lag\t7.0",
        "kafka.consumer\ttype=consumer-fetch-manager-metrics,client-id=consumer-1,topic=t,partition=0\trecords-lag-max\t9.0",
        "kafka.consumer\ttype=consumer-fetch-manager-metrics,client-id=consumer-1,topic=t\tbytes-consumed-total\t5.0",
        "kafka.consumer\ttype=consumer-fetch-manager-metrics,client-id=consumer-1,topic=t\tfetch-size-avg\t5.0",
        "kafka.consumer\ttype=consumer-node-metrics,client-id=consumer-1,node-id=node-1\trequest-total\t3.0",
        "kafka.consumer\ttype=consumer-node-metrics,client-id=consumer-1,node-id=node-1\trequest-latency-max\t3.0",
        'kafka.producer\ttype=producer-metrics,client-id="connector-producer-a->b.MirrorSourceConnector-0"\t'
        "buffer-available-bytes\t33554432.0",
        "kafka.producer\ttype=producer-metrics,client-id=producer-1\toutgoing-byte-total\t99.0",
        "kafka.producer\ttype=producer-metrics,client-id=producer-1\tconnection-count\t1.0",
        "kafka.producer\ttype=producer-topic-metrics,client-id=producer-1,topic=t\trecord-send-total\t4.0",
        "kafka.producer\ttype=producer-topic-metrics,client-id=producer-1,topic=t\trecord-send-rate\t0.5",
        "kafka.admin.client\ttype=admin-client-metrics,client-id=adminclient-1\tconnection-count\t1.0",
        "kafka.admin.client\ttype=app-info,client-id=adminclient-1\tstart-time-ms\t1700000000000.0",
    ]
)
JVM = "\n".join(
    [
        "jvm_memory_used_bytes\tarea=heap\t1.0e8",
        "jvm_threads_current\t\t42.0",
        "jvm_gc_collection_seconds_sum\tgc=PS Scavenge\t0.5",
    ]
)


def reported(herder: StandaloneHerder) -> list[MetricGroup]:  # noqa: F811
    """A worker's groups, each from the code that reports it."""
    herder.create_connector("gen", datagen(2))
    herder.create_connector("a->b.MirrorSourceConnector", datagen(1))
    herder.pause_connector("gen")
    herder._run.put_status("a->b.MirrorSourceConnector", 0, State.FAILED, "boom")
    measures = RunMeasures()
    measures.reading(3)
    measures.batch(10, 9, 5.0)
    measures.committed(2.0)
    errors = ErrorCounts()
    errors.failed(1, skipped=True, logged=1)
    errors.dead_letters(1, failed=False)
    rebalances = Rebalances(3, 4, True, "leader-1", "incremental-v1", 10.0, 20.0, 30.0)
    mirror_tags = (("source", "a"), ("target", "b"), ("topic", "a.t"), ("partition", "0"))
    checkpoint_tags = (("source", "a"), ("target", "b"), ("group", "g"), ("topic", "a.t"), ("partition", "0"))
    return [
        *herder.metric_groups(),
        connect_group("connect-worker-metrics", values=Startups().values()),
        rebalances.group(),
        task_group("connector-task-metrics", "gen", 0, measures.task_values()),
        task_group("source-task-metrics", "gen", 0, measures.source_values()),
        task_group("sink-task-metrics", "a->b.MirrorSourceConnector", 0, measures.sink_values(2)),
        task_group("sink-task-metrics", "a->b.MirrorSourceConnector", 0, {"sink-record-lag-max": 12.0}),
        task_group("task-error-metrics", "gen", 0, errors.values()),
        MetricGroup(MIRROR_DOMAIN, "MirrorSourceConnector", mirror_tags, dict.fromkeys(MIRROR_VALUES, 1.5)),
        MetricGroup(MIRROR_DOMAIN, "MirrorCheckpointConnector", checkpoint_tags, {"checkpoint-latency-ms": 8.0}),
        *jvm_metrics.client_groups(CLIENTS),
        *jvm_metrics.jvm_groups(JVM),
    ]


def attributes(group: MetricGroup) -> Iterator[MetricGroup]:
    """One group per value or text, so each can be named alone."""
    for name, value in group.values.items():
        yield MetricGroup(group.domain, group.group, group.tags, {name: value})
    for name, text in group.texts.items():
        yield MetricGroup(group.domain, group.group, group.tags, texts={name: text})


@functools.cache
def rule_files() -> tuple[strimzi_metrics.ExporterRules, strimzi_metrics.ExporterRules]:
    return (
        strimzi_metrics.ExporterRules(strimzi_metrics.CONNECT_RULES),
        strimzi_metrics.ExporterRules(strimzi_metrics.MM2_RULES),
    )


def exporter_names(group: MetricGroup) -> set[tuple[str, tuple[tuple[str, str], ...], str, float]]:
    """What the exporter with Strimzi's rules makes of a one-attribute group (Connect's rules, then
    MM2's for the mirror groups, which Connect's drop)."""
    connect, mm2 = rule_files()
    quoted = group.domain in (CONNECT_DOMAIN, MIRROR_DOMAIN)
    properties = [("type", group.group)] + [
        (k, metric_names.jmx_sanitize(v) if quoted else v) for k, v in group.tags if v
    ]
    attribute, value = next(iter({**group.values, **group.texts}.items()))
    found = connect.apply(group.domain, properties, attribute, value)
    if found is None and group.domain == MIRROR_DOMAIN:
        found = mm2.apply(group.domain, properties, attribute, value)
    return set() if found is None else {found}


def _nan(value: float) -> float | str:
    return value if value == value else "NaN"  # NaN equals nothing, not even itself


def test_every_group_a_worker_reports_is_named_as_strimzis_rules_name_its_mbean(herder: StandaloneHerder) -> None:  # noqa: F811
    groups = reported(herder)
    compared = 0
    for group in groups:
        if group.domain in (JVM_DOMAIN, SPARKLINK_DOMAIN):
            continue  # not MBeans: the JVM's metrics are the exporter's own, sparklink's are ours
        for one in attributes(group):
            ours = {(s.name, s.labels, s.kind, _nan(s.value)) for s in metric_names.samples([one])}
            assert ours == {(*found[:3], _nan(found[3])) for found in exporter_names(one)}, one
            compared += 1
    assert compared > 100


def test_every_name_strimzis_connect_and_mm2_dashboards_and_alerts_query_is_reported(
    herder: StandaloneHerder,  # noqa: F811
) -> None:
    queried = strimzi_metrics.queried_names(
        [
            strimzi_metrics.CONNECT_DASHBOARD,
            strimzi_metrics.CONNECT_ALERTS,
            strimzi_metrics.MM2_DASHBOARD,
            strimzi_metrics.MM2_ALERTS,
        ]
    )
    # cAdvisor's (the kubelet's) series about the container, not the worker's.
    expected = {n for n in queried if not n.startswith("container_")}
    names = {s.name for s in metric_names.samples(reported(herder))}
    assert expected - names == set()
    assert len(expected) > 30


def test_a_name_that_needs_it_is_quoted_as_kafkas_jmx_reporter_quotes_it() -> None:
    assert metric_names.jmx_sanitize("my-sink_0.x") == "my-sink_0.x"
    assert metric_names.jmx_sanitize("a->b.MirrorSourceConnector") == '"a->b.MirrorSourceConnector"'
    assert metric_names.jmx_sanitize('say "hi"?') == '"say \\"hi\\"\\?"'
    (sample,) = metric_names.samples(
        [
            connect_group(
                "connector-task-metrics", task_tags("a->b.MirrorSourceConnector", 0), texts={"status": "failed"}
            )
        ]
    )
    assert sample.name == "kafka_connect_connector_task_status"
    assert dict(sample.labels) == {"connector": '"a->b.MirrorSourceConnector"', "task": "0", "status": "failed"}


@pytest.mark.parametrize(
    ("connector", "states", "counts"),
    [("gen", ["paused", "paused"], {"connector-paused-task-count": 2.0, "connector-total-task-count": 2.0})],
)
def test_the_worker_counts_its_tasks_by_state(
    herder: StandaloneHerder,  # noqa: F811
    connector: str,
    states: list[str],
    counts: dict[str, float],
) -> None:
    groups = reported(herder)
    statuses = [
        g.texts["status"]
        for g in groups
        if g.group == "connector-task-metrics" and dict(g.tags).get("connector") == connector and g.texts
    ]
    assert statuses == states
    (worker,) = [g for g in groups if g.group == "connect-worker-metrics" and g.tags == (("connector", connector),)]
    assert {k: v for k, v in worker.values.items() if v} == counts
    (total,) = [g for g in groups if g.group == "connect-worker-metrics" and "connector-count" in g.values]
    assert total.values == {"connector-count": 2.0, "task-count": 3.0}
    failed = [
        g
        for g in groups
        if g.tags == (("connector", "a->b.MirrorSourceConnector"),) and "connector-failed-task-count" in g.values
    ]
    assert failed[0].values["connector-failed-task-count"] == 1.0
