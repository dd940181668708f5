"""The operator's metrics carry Strimzi's cluster operator's names and labels, so Strimzi's operators
dashboard (tests/data/strimzi/metrics/strimzi-operators.json) reads them unchanged."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from sparklink.operator.metrics import OperatorMetrics
from tests.support import strimzi_metrics


def scrape(metrics: OperatorMetrics) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(generate_latest(metrics.registry).decode()):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def test_reconciliations_durations_resources_and_auto_restarts_are_named_as_strimzi_names_them() -> None:
    metrics = OperatorMetrics()
    for ok in (True, True, False):
        metrics.reconciliations.labels(*metrics.labels("KafkaConnector", "ns")).inc()
        metrics.reconciled("KafkaConnector", "ns", 2.5 if ok else 40.0, ok)
    metrics.counted("KafkaConnector", "ns", resources=3, paused=1)
    metrics.auto_restarts.labels(*metrics.labels("KafkaConnector", "ns")).inc()
    samples = scrape(metrics)
    labels = {"kind": "KafkaConnector", "namespace": "ns", "selector": ""}
    assert samples["strimzi_reconciliations_total"] == [(labels, 3.0)]
    assert samples["strimzi_reconciliations_successful_total"] == [(labels, 2.0)]
    assert samples["strimzi_reconciliations_failed_total"] == [(labels, 1.0)]
    assert samples["strimzi_reconciliations_locked_total"] == [(labels, 0.0)]
    assert samples["strimzi_reconciliations_periodical_total"] == [(labels, 1.0)]
    assert samples["strimzi_resources"] == [(labels, 3.0)]
    assert samples["strimzi_resources_paused"] == [(labels, 1.0)]
    assert samples["strimzi_auto_restarts_total"] == [(labels, 1.0)]
    assert samples["strimzi_reconciliations_duration_seconds_count"] == [(labels, 3.0)]
    assert samples["strimzi_reconciliations_duration_seconds_sum"] == [(labels, 45.0)]
    assert samples["strimzi_reconciliations_duration_seconds_max"] == [(labels, 40.0)]
    buckets = {s[0]["le"]: s[1] for s in samples["strimzi_reconciliations_duration_seconds_bucket"]}
    assert buckets == {"1.0": 0, "5.0": 2, "10.0": 2, "30.0": 2, "60.0": 3, "120.0": 3, "300.0": 3, "+Inf": 3}


def test_every_operator_metric_strimzis_operators_dashboard_queries_is_served() -> None:
    metrics = OperatorMetrics()
    metrics.reconciliations.labels(*metrics.labels("Kafka", "ns")).inc()
    metrics.reconciled("Kafka", "ns", 1.0, ok=True)
    metrics.counted("Kafka", "ns", resources=1, paused=0)
    queried = strimzi_metrics.queried_names([strimzi_metrics.OPERATORS_DASHBOARD])
    # Not the operator's: the JVM's own (Strimzi's operator is Java; this one is Python), and the expiry of
    # the certificates Strimzi's operator issues for its Kafka clusters' CAs.
    expected = {n for n in queried if not n.startswith("jvm_") and n != "strimzi_certificate_expiration_timestamp_ms"}
    assert expected - set(scrape(metrics)) == set()
    assert {"strimzi_reconciliations_total", "strimzi_resources"} <= expected
