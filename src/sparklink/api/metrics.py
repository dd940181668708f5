"""Metric groups: what a worker, a task or a plugin measures, in Kafka's metric model.

Kafka's metrics are groups of values with tags (`connector-task-metrics` of connector `c`, task `0`:
`status`, `offset-commit-avg-time-ms`, ...), which its JMX reporter publishes as one MBean per group
instance (`kafka.connect:type=connector-task-metrics,connector=c,task=0`). sparklink keeps that
model: the runtime and plugins describe what they measured as `MetricGroup`s, read when `/metrics`
is scraped, and the worker's REST layer names them for Prometheus as Strimzi's JMX exporter rules
name the MBeans (sparklink.worker.rest.metric_names). A task reports its own groups beside the
runtime's through `SourceTask.metrics` (MirrorMaker's `MirrorSourceConnector` group, for one).

No Spark or runtime types here: the SPI imports without them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

CONNECT_DOMAIN = "kafka.connect"
MIRROR_DOMAIN = "kafka.connect.mirror"
JVM_DOMAIN = "jvm"
"""The JVM's own metrics, already under the JMX exporter's names: the group is the name, tags the labels."""
SPARKLINK_DOMAIN = "sparklink"
"""sparklink's own groups (Spark's side of each task), exported as `sparklink_<group>_<value>`."""


@dataclass(frozen=True)
class MetricGroup:
    """One instance of a metric group: its JMX domain, group name (the MBean's `type`), tags in the
    order Kafka declares them, numeric values and text values (a status, a class name) by name."""

    domain: str
    group: str
    tags: tuple[tuple[str, str], ...] = ()
    values: Mapping[str, float] = field(default_factory=dict)
    texts: Mapping[str, str] = field(default_factory=dict)


def connect_group(
    group: str,
    tags: tuple[tuple[str, str], ...] = (),
    values: Mapping[str, float] | None = None,
    texts: Mapping[str, str] | None = None,
) -> MetricGroup:
    """A group of Connect's own (`kafka.connect` domain)."""
    return MetricGroup(CONNECT_DOMAIN, group, tags, values or {}, texts or {})


def task_tags(connector: str, task: int) -> tuple[tuple[str, str], ...]:
    """Connect's tags of a task-level group, in its order."""
    return (("connector", connector), ("task", str(task)))


class Window:
    """Min, max and average of a measure over a sliding time window, and its last value: Kafka's
    `Value`, `Min`, `Max` and `Avg` stats of one sensor (two samples of 30 s by default, so a value
    counts for 30 to 60 s). Recording costs a few comparisons under a lock; reading happens on scrape."""

    def __init__(self, sample_s: float = 30.0, samples: int = 2) -> None:
        self.sample_s = sample_s
        self.samples = samples
        self.last: float | None = None
        self._stats: list[list[float]] = []  # [start, count, total, min, max] per sample, oldest first
        self._lock = threading.Lock()

    def record(self, value: float, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            self.last = value
            if not self._stats or now - self._stats[-1][0] >= self.sample_s:
                self._stats.append([now, 0.0, 0.0, value, value])
                del self._stats[: -self.samples]
            sample = self._stats[-1]
            sample[1] += 1
            sample[2] += value
            sample[3] = min(sample[3], value)
            sample[4] = max(sample[4], value)

    def read(self, now: float | None = None) -> tuple[float, float, float] | None:
        """(min, max, avg) over the samples still in the window, or None when nothing was recorded in it."""
        now = time.monotonic() if now is None else now
        with self._lock:
            live = [s for s in self._stats if now - s[0] < self.sample_s * self.samples]
        count = sum(s[1] for s in live)
        if not count:
            return None
        return min(s[3] for s in live), max(s[4] for s in live), sum(s[2] for s in live) / count


class Rate:
    """A running total and its rate per second over a sliding window: Kafka's `Meter` (a cumulative
    count beside a `Rate` over two samples of 30 s, measured over at least one sample's length)."""

    def __init__(self, sample_s: float = 30.0, samples: int = 2) -> None:
        self.sample_s = sample_s
        self.samples = samples
        self.total = 0.0
        self._stats: list[list[float]] = []  # [start, amount] per sample, oldest first
        self._lock = threading.Lock()
        self._born = time.monotonic()

    def record(self, amount: float = 1.0, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            self.total += amount
            if not self._stats or now - self._stats[-1][0] >= self.sample_s:
                self._stats.append([now, 0.0])
                del self._stats[: -self.samples]
            self._stats[-1][1] += amount

    def per_second(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        window = self.sample_s * self.samples
        with self._lock:
            live = [s for s in self._stats if now - s[0] < window]
        amount = sum(s[1] for s in live)
        # Kafka's Rate divides by the time its samples cover, never less than all but one sample's length
        # (a young sensor's first record is not a burst), nor by more than the time since it was made.
        elapsed = now - live[0][0] if live else window
        elapsed = max(elapsed, min(self.sample_s * (self.samples - 1), now - self._born), 1e-3)
        return amount / elapsed
