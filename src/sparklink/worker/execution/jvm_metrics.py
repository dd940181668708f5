"""The Spark JVM's metrics as metric groups: its Kafka clients' MBeans and its memory, threads and GC.

The consumers, producers and admin clients that Spark runs for the tasks register their metrics as
MBeans, as they do in a Connect worker; `io.sparklink.metrics.JmxSnapshot` (jvm/interceptor/, in the
worker's Spark session) reads them, and the JVM's own, in one call each. Caller: the worker
(worker.py) when /metrics is scraped; without the jar (bootstrap not run) there is nothing to read.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from sparklink.api.metrics import JVM_DOMAIN, MetricGroup

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


def snapshot(spark: SparkSession) -> list[MetricGroup]:
    """The Kafka client groups and the JVM's metrics, or [] when the JVM cannot be read."""
    try:
        reader = spark._jvm.io.sparklink.metrics.JmxSnapshot  # type: ignore[union-attr]
        clients, jvm = str(reader.kafkaClients()), str(reader.jvm())
    except Exception:  # no jar, or a session whose JVM is not ours to read (Spark Connect)
        log.debug("reading the Spark JVM's metrics", exc_info=True)
        return []
    return client_groups(clients) + jvm_groups(jvm)


def client_groups(text: str) -> list[MetricGroup]:
    """One group per client MBean, from `JmxSnapshot.kafkaClients` lines (domain, key properties,
    attribute, value)."""
    beans: dict[tuple[str, str], dict[str, float]] = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) != 4:
            continue
        domain, properties, attribute, value = parts
        beans.setdefault((domain, properties), {})[attribute] = float(value)
    groups = []
    for (domain, properties), values in beans.items():
        keys = key_properties(properties)
        group = keys.pop("type", None)
        if group is not None:
            groups.append(MetricGroup(domain, group, tuple(keys.items()), values))
    return groups


def jvm_groups(text: str) -> list[MetricGroup]:
    """The JVM's metrics, already under the JMX exporter's names (name, one `label=value` or none, value)."""
    groups = []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) != 3:
            continue
        name, label, value = parts
        tags = (tuple(label.split("=", 1)),) if "=" in label else ()
        groups.append(MetricGroup(JVM_DOMAIN, name, tags, {"value": float(value)}))  # type: ignore[arg-type]
    return groups


def key_properties(text: str) -> dict[str, str]:
    """An MBean's key properties in their order (`ObjectName.getKeyPropertyListString`); quoted values,
    commas and all, are kept as the name holds them (the exporter's labels keep the quotes too)."""
    out: dict[str, str] = {}
    i = 0
    while i < len(text):
        eq = text.index("=", i)
        key = text[i:eq]
        j = eq + 1
        if j < len(text) and text[j] == '"':
            j += 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
        else:
            while j < len(text) and text[j] != ",":
                j += 1
        out[key] = text[eq + 1 : j]
        i = j + 1
    return out
