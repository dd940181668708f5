"""Prometheus names for metric groups, exactly as Strimzi's JMX exporter rules name Connect's MBeans.

On a Strimzi pod, Kafka Connect's metrics reach Prometheus through the JMX exporter and the rules in
Strimzi's `kafka-connect-metrics.yaml` (MirrorMaker 2's `MirrorSourceConnector` and
`MirrorCheckpointConnector` groups through `kafka-mirror-maker-2-metrics.yaml`), and Strimzi's Grafana
dashboards and alert rules query the names those rules make. This module gives each `MetricGroup` the
name, labels and type those rules give its MBean, so the dashboards and alerts work against a
sparklink worker unchanged:

- the MBean is `<domain>:type=<group>,<tag>=<value>,...`, each tag value quoted as Kafka's JmxReporter
  quotes it (`Sanitizer.jmxSanitize`: a value with characters other than word characters, `-`, `%`,
  `.`, space or tab is quoted, so `a->b.MirrorSourceConnector` keeps its quotes in the label, as the
  MM2 dashboard's `connector=~"\\".*SourceConnector\\""` expects);
- the first rule that matches decides, in the rule file's order (`rule_for`);
- names and label names go through the exporter's `safeName` (anything but `[a-zA-Z0-9:_]` becomes
  one `_`) and are lower-cased (`lowercaseOutputName`, `lowercaseOutputLabelNames`).

A worker runs Connect and MirrorMaker connectors side by side, so it answers with Connect's rule set
plus MM2's rules for the mirror groups (which Connect's set drops). Where MM2's set names a Connect
group differently (it exports a task's status as `kafka_connect_connector_status` with a `task`
label), Connect's name wins: no Strimzi dashboard or alert queries MM2's variant, and Connect's alert
`ConnectFailedConnector` counts connectors, not tasks. tests/unit/test_metric_names.py applies the
real rule files to the same groups and compares. Caller: rest/metrics.py, at scrape time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from sparklink.api.metrics import CONNECT_DOMAIN, JVM_DOMAIN, MIRROR_DOMAIN, SPARKLINK_DOMAIN, MetricGroup

Kind = Literal["gauge", "counter", "untyped"]

CLIENT_DOMAINS = ("kafka.consumer", "kafka.producer", "kafka.admin.client")

_PLAIN = re.compile(r"[\w\-%. \t]*")
_UNSAFE = re.compile(r"[^a-zA-Z0-9:_]+|_+")
# The attribute part of Strimzi's Connect rules (kafka-connect-metrics.yaml), matched as the exporter
# matches it: against `<attribute>: <value>`, from its start, anything may follow. So the first
# alternative that fits wins, and a longer name can be cut short (`source-record-active-count-max` is
# exported as `..._source_record_active_count`, as on a Strimzi pod).
_TOTAL = re.compile(r"(.+-total)")
_TASK_GAUGE = re.compile(
    r"(.+-count|.+-ms|.+-ratio|.+-seq-no|.+-rate|.+-max|.+-avg|.+-failures|.+-requests|.+-timestamp|.+-logged"
    r"|.+-errors|.+-retries|.+-skipped)"
)
_CLIENT_GAUGE = re.compile(
    r"(.+-avg|.+-bytes|.+-count|.+-ratio|.+-age|.+-flight|.+-threads|.+-connectors|.+-tasks|.+-ago)"
)
_FETCH_GAUGE = re.compile(r"(compression-rate|.+-avg|.+-replica|.+-lag|.+-lead)")
_TOPIC_GAUGE = re.compile(r"(compression-rate|.+-avg|.+rate)")
_NODE_GAUGE = re.compile(r"(.+-avg|.+-rate)")
_WORD = re.compile(r"([a-z-]+)")
_WORD_TOTAL = re.compile(r"([a-z-]+-total)")
_MIRROR_VALUE = re.compile(r"([a-z-_]+)")
MIRROR_TAGS = {
    "MirrorSourceConnector": ("source", "target", "topic", "partition"),
    "MirrorCheckpointConnector": ("source", "target", "group", "topic", "partition"),
}


@dataclass(frozen=True)
class Sample:
    """One exported series: its name, labels (in order) and value, and its family's type. `exact` is
    False when a rule cut the attribute's name short: the series then yields to one named in full."""

    name: str
    labels: tuple[tuple[str, str], ...]
    value: float
    kind: Kind
    exact: bool = True


def jmx_sanitize(value: str) -> str:
    """Kafka's `Sanitizer.jmxSanitize`: the value as it stands in an MBean name (quoted if it must be)."""
    if _PLAIN.fullmatch(value):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("*", "\\*").replace("?", "\\?")
    return '"' + escaped.replace("\n", "\\n") + '"'


def safe_name(name: str) -> str:
    """The JMX exporter's `safeName`, lower-cased as Strimzi's rules ask."""
    out = _UNSAFE.sub("_", name)
    return ("_" + out if out[:1].isdigit() else out).lower()


def samples(groups: Iterable[MetricGroup]) -> Iterator[Sample]:
    """Every series the groups export, each under the name its rule gives it (unmatched values are
    dropped, as the exporter drops them)."""
    for group in groups:
        if group.domain == JVM_DOMAIN:
            for value in group.values.values():
                yield Sample(group.group, group.tags, value, "gauge")
            continue
        if group.domain == SPARKLINK_DOMAIN:
            yield from _sparklink(group)
            continue
        # An empty tag is left out of the MBean name, as Kafka's JmxReporter leaves it out.
        tags = {k: (v if group.domain in CLIENT_DOMAINS else jmx_sanitize(v)) for k, v in group.tags if v}
        for attribute, value in group.values.items():
            rule = rule_for(group.domain, group.group, tags, attribute, value)
            if rule is not None:
                name, labels, kind, exact = rule
                factor = 0.001 if name.endswith("_start_time_seconds") else 1.0
                yield Sample(name, labels, float(value) * factor, kind, exact)
        for attribute, text in group.texts.items():
            info = text_rule_for(group.domain, group.group, tags, attribute, text)
            if info is not None:
                name, labels, kind, _ = info
                yield Sample(name, labels, 1.0, kind)


Rule = tuple[str, tuple[tuple[str, str], ...], Kind, bool]


def rule_for(domain: str, group: str, tags: Mapping[str, str], attribute: str, value: float) -> Rule | None:
    """The name, labels and type Strimzi's rules give a numeric value (and whether the name holds the
    attribute in full), or None if no rule exports it."""
    keys = tuple(tags)
    text = f"{attribute}: {_java_double(value)}"
    if domain in CLIENT_DOMAINS:
        return _client_rule(domain, group, tags, text)
    if domain == MIRROR_DOMAIN:
        captured = _capture(_MIRROR_VALUE, text)
        if MIRROR_TAGS.get(group) != keys or captured is None:
            return None
        return _named(f"kafka_connect_mirror_{group}_{captured}", tags, "gauge", captured == attribute)
    if domain != CONNECT_DOMAIN or not group.endswith("-metrics"):
        return None
    kind = group.removesuffix("-metrics")
    if keys == ("connector", "task"):
        for pattern, typed in _pair(_TASK_GAUGE):
            captured = _capture(pattern, text)
            if captured is not None:
                return _named(f"kafka_connect_{kind}_{captured}", tags, typed, captured == attribute)
        return None
    if group == "connect-coordinator-metrics" and keys == ("client-id",):
        return _client_rule("kafka.connect", group, tags, text)
    if group == "connect-worker-metrics" and keys == ("connector",):
        captured = _capture(_WORD, text)
        return (
            None
            if captured is None
            else _named(f"kafka_connect_worker_{captured}", tags, "gauge", captured == attribute)
        )
    if group in ("connect-worker-metrics", "connect-worker-rebalance-metrics") and not keys:
        prefix = "kafka_connect_worker_" if group == "connect-worker-metrics" else "kafka_connect_worker_rebalance_"
        for pattern, typed in _pair(_WORD, _WORD_TOTAL):
            captured = _capture(pattern, text)
            if captured is not None:
                return _named(prefix + captured, {}, typed, captured == attribute)
    return None


def text_rule_for(domain: str, group: str, tags: Mapping[str, str], attribute: str, text: str) -> Rule | None:
    """The series Strimzi's rules make of a text value (value 1, the text in a label), or None."""
    keys = tuple(tags)
    if domain != CONNECT_DOMAIN or not text:
        return None
    connector_info = ("connector-class", "connector-type", "connector-version", "status")
    if group == "connector-metrics" and keys == ("connector",) and attribute in connector_info:
        return _named(f"kafka_connect_connector_{attribute}", {**tags, attribute: text}, "gauge")
    status = _capture(_WORD, text) if attribute == "status" else None
    if group == "connector-task-metrics" and keys == ("connector", "task") and status is not None:
        return _named("kafka_connect_connector_task_status", {**tags, "status": status}, "gauge")
    rebalance_info = attribute in ("leader-name", "connect-protocol")
    if group == "connect-worker-rebalance-metrics" and not keys and rebalance_info:
        return _named(f"kafka_connect_worker_rebalance_{attribute}", {attribute: text}, "untyped")
    return None


def _client_rule(domain: str, group: str, tags: Mapping[str, str], text: str) -> Rule | None:
    """Strimzi's rules for the Kafka clients' groups (and Connect's coordinator group, which has a
    client id). Their `client-id=(.*)` is greedy: tags after the client id end up in its label."""
    client = domain.removeprefix("kafka.")
    keys = tuple(tags)
    if not keys or keys[0] != "client-id":
        return None
    client_id = tags["client-id"]
    attribute = text.split(": ", 1)[0]
    if group == "app-info":
        if not text.startswith("start-time-ms") or keys != ("client-id",):
            return None
        return _named(f"kafka_{client}_start_time_seconds", {"clientId": client_id}, "gauge")
    if not group.endswith("-metrics"):
        return None
    kind = group.removesuffix("-metrics")
    candidates: list[tuple[re.Pattern[str], Kind, str, dict[str, str]]] = []
    if group == "consumer-fetch-manager-metrics" and keys == ("client-id", "topic", "partition"):
        labels = {"clientId": client_id, "topic": tags["topic"], "partition": tags["partition"]}
        candidates += [(p, t, "kafka_consumer_fetch_manager_", labels) for p, t in _pair(_FETCH_GAUGE)]
    if group == "producer-topic-metrics" and keys == ("client-id", "topic"):
        labels = {"clientId": client_id, "topic": tags["topic"]}
        candidates += [(p, t, "kafka_producer_topic_", labels) for p, t in _pair(_TOPIC_GAUGE)]
    if keys == ("client-id", "node-id"):
        labels = {"clientId": client_id, "nodeId": tags["node-id"]}
        candidates += [(p, t, f"kafka_{kind}_", labels) for p, t in _pair(_NODE_GAUGE)]
    # `client-id=(.*)` takes the rest of the MBean's key properties when there are more.
    rest = ", ".join(f"{k}={v}" for k, v in list(tags.items())[1:])
    greedy = {"clientId": client_id + (", " + rest if rest else "")}
    candidates += [(p, t, f"kafka_{kind}_", greedy) for p, t in _pair(_CLIENT_GAUGE)]
    for pattern, typed, prefix, labels in candidates:
        captured = _capture(pattern, text)
        if captured is not None:
            return _named(prefix + captured, labels, typed, captured == attribute)
    return None


def _pair(gauge: re.Pattern[str], total: re.Pattern[str] = _TOTAL) -> list[tuple[re.Pattern[str], Kind]]:
    """A rule pair of the files: its `-total` counters first, then its gauges."""
    return [(total, "counter"), (gauge, "gauge")]


def _capture(pattern: re.Pattern[str], text: str) -> str | None:
    match = pattern.match(text)
    return match.group(1) if match else None


def _java_double(value: float) -> str:
    """A number as Java prints a Double (the exporter matches its rules against it)."""
    number = float(value)
    if number != number:
        return "NaN"
    if number in (float("inf"), float("-inf")):
        return "Infinity" if number > 0 else "-Infinity"
    return repr(number)


def _named(name: str, labels: Mapping[str, str], kind: Kind, exact: bool = True) -> Rule:
    return safe_name(name), tuple((safe_name(k), v) for k, v in labels.items()), kind, exact


def _sparklink(group: MetricGroup) -> Iterator[Sample]:
    """sparklink's own groups: a gauge per value, and their texts as the labels of one `_info` series."""
    prefix = f"sparklink_{group.group}_"
    for attribute, value in group.values.items():
        yield Sample(safe_name(prefix + attribute), group.tags, value, "gauge")
    if group.texts:
        labels = (*group.tags, *((safe_name(k), v) for k, v in group.texts.items()))
        yield Sample(safe_name(prefix + "info"), labels, 1.0, "gauge")
