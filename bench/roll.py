"""Rolling 3 brokers: sparklink's roller against a plain one-by-one restart script (the baseline).

Run: .venv/bin/python -m bench.roll [--rate 200] [--heap 384m]

One cluster (1 controller, 3 brokers, agents on), a topic of 6 partitions with RF=3 and
min.insync.replicas=2, and an idempotent acks=all producer at a steady rate. Two rolls of the 3 brokers,
each starting from a fully replicated topic:
  baseline - for each broker: graceful stop, start, wait until its port accepts connections;
  roller   - `sparklink kafka roll --manual` on the brokers (availability check, wait for ready).
Measured per roll: wall time, the producer's acknowledgement latency (p50/p99/max) for records sent
during the roll, records not acknowledged, and the time any partition spent under min.insync.replicas
(sampled every 250 ms). Results: bench/results/roll-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from sparklink.clients.settings import client_config
from sparklink.platform import ports
from sparklink.platform.kafka import KafkaCluster
from sparklink.roller.local import local_roller
from sparklink.roller.model import RestartReason, RollerSettings

TOPIC = "bench-roll"
MIN_ISR = 2


class Load:
    """An acks=all producer at `rate` records/s recording each record's acknowledgement latency."""

    def __init__(self, bootstrap: str, rate: int) -> None:
        self.rate = rate
        self.latencies: list[tuple[float, float]] = []  # (sent at, latency)
        self.failed: list[float] = []
        self.stop = threading.Event()
        self.producer = Producer(
            client_config(
                bootstrap, **{"acks": "all", "enable.idempotence": True, "linger.ms": 5, "message.timeout.ms": 120000}
            )
        )
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        i = 0
        start = time.monotonic()
        while not self.stop.is_set():
            sent = time.monotonic()

            def done(err: object, msg: object, sent: float = sent) -> None:
                if err is None:
                    self.latencies.append((sent, time.monotonic() - sent))
                else:
                    self.failed.append(sent)

            self.producer.produce(TOPIC, key=str(i).encode(), value=b"x" * 100, on_delivery=done)
            i += 1
            # Pace to the target rate while serving delivery reports.
            self.producer.poll(max(0.0, start + i / self.rate - time.monotonic()))
        self.producer.flush(180)


class IsrMonitor:
    """Samples the topic's ISRs; adds up the time any partition had fewer than min.insync.replicas."""

    def __init__(self, bootstrap: str) -> None:
        self.admin = AdminClient(client_config(bootstrap))
        self.under_min_isr = 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last = time.monotonic()
        while not self.stop.wait(0.25):
            now = time.monotonic()
            try:
                meta = self.admin.list_topics(TOPIC, timeout=5).topics[TOPIC]
                if any(len(p.isrs) < MIN_ISR for p in meta.partitions.values()):
                    self.under_min_isr += now - last
            except Exception:  # a broker going away mid-request; the next sample tells
                pass
            last = now


def fully_replicated(cluster: KafkaCluster) -> bool:
    meta = AdminClient(client_config(cluster.bootstrap_servers)).list_topics(TOPIC, timeout=10).topics[TOPIC]
    return all(len(p.isrs) == 3 for p in meta.partitions.values())


def baseline(cluster: KafkaCluster) -> None:
    for broker in cluster.brokers:
        cluster.stop_node(broker.node_id)
        cluster.start_node(broker.node_id)
        ports.wait_until(lambda b=broker: ports.port_open(b.broker_port or 0), 300, what=f"{broker.name} port")


def with_roller(cluster: KafkaCluster) -> None:
    roller = local_roller(cluster, RollerSettings(polling_interval=0.5), only=[b.node_id for b in cluster.brokers])
    roller.roll(lambda n: [RestartReason.MANUAL_ROLLING_UPDATE])


def measure(cluster: KafkaCluster, load: Load, roll: Any) -> dict[str, float]:
    ports.wait_until(lambda: fully_replicated(cluster), 300, what="a fully replicated topic")
    monitor = IsrMonitor(cluster.bootstrap_servers)
    monitor.thread.start()
    start = time.monotonic()
    roll(cluster)
    end = time.monotonic()
    monitor.stop.set()
    monitor.thread.join()
    ports.wait_until(lambda: fully_replicated(cluster), 300, what="a fully replicated topic")
    time.sleep(5)  # let records sent at the end of the roll be acknowledged before reading the latencies
    during = sorted(lat for sent, lat in load.latencies if start <= sent <= end)
    q = statistics.quantiles(during, n=100) if len(during) > 1 else [0.0] * 99
    return {
        "roll_s": round(end - start, 1),
        "records_during_roll": len(during),
        "p50_ms": round(q[49] * 1000, 1),
        "p99_ms": round(q[98] * 1000, 1),
        "max_ms": round(max(during, default=0.0) * 1000, 1),
        "not_acknowledged": sum(1 for sent in load.failed if start <= sent <= end),
        "under_min_isr_s": round(monitor.under_min_isr, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=200, help="records per second")
    parser.add_argument("--heap", default="384m")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="sparklink-bench-roll-"))
    cluster = KafkaCluster.create(workdir / "kafka", brokers=3, heap=args.heap, agents=True)
    results: dict[str, Any] = {"rate": args.rate, "cluster": "1 controller + 3 brokers, RF=3, minISR=2"}
    try:
        cluster.start(timeout=240)
        admin = AdminClient(client_config(cluster.bootstrap_servers))  # held until the topic exists
        admin.create_topics([NewTopic(TOPIC, 6, 3, config={"min.insync.replicas": str(MIN_ISR)})])[TOPIC].result(60)
        load = Load(cluster.bootstrap_servers, args.rate)
        load.thread.start()
        for name, roll in (("baseline_one_by_one", baseline), ("sparklink_roller", with_roller)):
            results[name] = measure(cluster, load, roll)
            print(name, json.dumps(results[name]), flush=True)
        load.stop.set()
        load.thread.join()
    finally:
        cluster.destroy()
    out = Path("bench/results")
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"roll-{int(time.time())}.json"
    path.write_text(json.dumps(results, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
