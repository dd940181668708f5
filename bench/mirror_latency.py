"""Mirror latency: produce on A -> readable on B, p50/p99 at a steady rate, sparklink vs Apache MM2.

Run: .venv/bin/python -m bench.mirror --latency [--rate 5000] [--duration 30] [--warmup 15] [--trigger-ms 100]

For each system in turn (same source cluster, a fresh target cluster each): the mirror starts on an
empty topic; a warm-up record must come through (so start-up is not measured), then `--warmup` s of
unmeasured traffic at the rate (so neither JVM is measured cold); then a paced producer
sends `rate` records/s of 1 KiB for `duration` seconds to A, each stamped with its send time
(nanoseconds since the epoch, header `bench-sent`), while a consumer on B reads the remote topic and
records receive - send for every stamped record. Both mirrors keep headers. The clocks are the same
host's. Caller: bench.mirror's `--latency` mode, which writes the JSON.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, cast

from confluent_kafka import Consumer, Producer

from bench.harness import arrived
from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform.kafka import KafkaCluster

TOPIC = "bench-latency"  # each system gets its own: `<TOPIC>-<system>`
HEADER = "bench-sent"
TICK_S = 0.01  # the producer sends rate * TICK_S records every tick


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


class Receiver:
    """Reads the remote topic on B and keeps the latency of every stamped record it sees."""

    def __init__(self, clients: KafkaClientSettings, topic: str) -> None:
        self.latencies_ms: list[float] = []
        self.warm = threading.Event()
        self._stop = threading.Event()
        config = clients.librdkafka(
            **{
                "group.id": f"bench-latency-{time.time_ns()}",
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": 5,
                # The remote topic may not exist yet when the receiver subscribes: look again soon.
                "topic.metadata.refresh.interval.ms": 1000,
            },
        )
        self._consumer = Consumer(config)
        self._consumer.subscribe([topic])
        self._thread = threading.Thread(target=self._loop, name="latency-receiver", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            # At 5,000 records/s a consume(1000, 50 ms) batch waited out its 50 ms, adding ~25 ms to every figure.
            for message in arrived(self._consumer):
                now = time.time_ns()
                if message.error():
                    continue
                # A consumed message's headers are a list of pairs (a dict only for a produce() argument).
                headers = cast("list[tuple[str, bytes | None]]", message.headers() or [])
                for key, value in headers:
                    if key == HEADER and value:
                        if value == b"warm-up":
                            self.warm.set()
                        else:
                            self.latencies_ms.append((now - int(value)) / 1e6)
        self._consumer.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def _produce_paced(producer: Producer, topic: str, rate: int, duration: float, measured: bool = True) -> int:
    """Send `rate` records/s for `duration` s in ticks of TICK_S; returns how many were sent.

    Unmeasured records carry the warm-up stamp instead of their send time."""
    payload = b"x" * 1024
    per_tick = max(1, round(rate * TICK_S))
    sent = 0
    start = time.monotonic()
    tick = 0
    while time.monotonic() - start < duration:
        due = start + tick * TICK_S
        if due > time.monotonic():
            time.sleep(due - time.monotonic())
        for _ in range(per_tick):
            while True:
                try:
                    stamp = str(time.time_ns()).encode() if measured else b"warm-up"
                    producer.produce(topic, payload, headers=[(HEADER, stamp)])
                    break
                except BufferError:
                    producer.poll(0.01)
        sent += per_tick
        producer.poll(0)
        tick += 1
    producer.flush(60)
    return sent


def warm_source(source: KafkaCluster, topic: str, rate: int, seconds: float) -> None:
    """Produce to and read from `topic` on a mirror's source cluster at `rate` for `seconds`, before it starts.

    Without this a mirror runs against a broker whose JIT is still compiling (measured on a shared source
    cluster: each system's p50 was 0.3-0.6 ms worse when it went first)."""
    receiver = Receiver(source.access.client_settings(), topic)
    producer = Producer(source.access.client_settings().librdkafka(**{"linger.ms": 1, "acks": "all"}))
    try:
        _produce_paced(producer, topic, rate, seconds, measured=False)
    finally:
        receiver.stop()


def measure(
    source: KafkaCluster,
    target: KafkaCluster,
    topic: str,
    mirror: Callable[[], AbstractContextManager[Any]],
    rate: int,
    duration: float,
    warmup: float = 0.0,
) -> dict[str, Any]:
    """One system: start the mirror of `topic` (on A, empty and this system's alone: a mirror starts at the
    earliest offset), warm it up, produce at `rate`, and read the latencies on B.

    Warming up is one record through, then `warmup` s of traffic at `rate` whose records are not
    measured: a JVM that has just started (either system's) runs its first batches interpreted, and
    those seconds of backlog would otherwise dominate a short measurement of the steady state."""
    producer = Producer(source.access.client_settings().librdkafka(**{"linger.ms": 1, "acks": "all"}))
    with mirror():
        receiver = Receiver(target.access.client_settings(), f"S.{topic}")
        try:
            deadline = time.monotonic() + 300
            while not receiver.warm.is_set():
                producer.produce(topic, b"warm-up", headers=[(HEADER, b"warm-up")])
                producer.flush(30)
                if receiver.warm.wait(2.0):
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError("no warm-up record reached the target in 5 minutes")
            if warmup > 0:
                _produce_paced(producer, topic, rate, warmup, measured=False)
            sent = _produce_paced(producer, topic, rate, duration)
            deadline = time.monotonic() + 120
            while len(receiver.latencies_ms) < sent and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            receiver.stop()
    values = sorted(receiver.latencies_ms)
    return {
        "sent": sent,
        "received": len(values),
        "p10_ms": _percentile(values, 0.10),
        "p50_ms": _percentile(values, 0.50),
        "p90_ms": _percentile(values, 0.90),
        "p99_ms": _percentile(values, 0.99),
        "p999_ms": _percentile(values, 0.999),
        "max_ms": values[-1] if values else float("nan"),
    }


def print_latency(results: dict[str, Any]) -> None:
    columns = [("p10_ms", "p10"), ("p50_ms", "p50"), ("p90_ms", "p90"), ("p99_ms", "p99"), ("p999_ms", "p99.9")]
    columns.append(("max_ms", "max"))
    print(f"\nmirror latency (ms), {results['rate']} records/s x {results['duration_s']} s, 1 KiB")
    print(f"{'':28}{'sent':>9}{'received':>10}" + "".join(f"{title:>8}" for _, title in columns))
    for key, label in (("sparklink", "sparklink MirrorSource"), ("apache_mm2", "Apache MirrorMaker 2")):
        if key in results:
            r = results[key]
            cells = "".join(f"{r[k]:>8.2f}" if k in r else f"{'-':>8}" for k, _ in columns)
            print(f"{label:28}{r['sent']:>9}{r['received']:>10}{cells}")
    if "sparklink" in results and "apache_mm2" in results:
        s, a = results["sparklink"], results["apache_mm2"]
        ratios = "".join(f"{s[k] / a[k]:>7.2f}x" if k in s and k in a else f"{'-':>8}" for k, _ in columns)
        print(f"{'ratio sparklink / MM2':28}{'':19}{ratios}")
