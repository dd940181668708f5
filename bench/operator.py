"""The operator's latency and throughput, on a real kube-apiserver + etcd, real Kafka and a real worker.

    .venv/bin/python -m bench.operator [--restarts 10] [--connectors 200]

Starts a local Kafka broker and Kubernetes control plane, installs the CRDs, runs `sparklink operator
run` as a subprocess and one KafkaConnect (one `sparklink worker` the operator starts). Then:

1. Annotation -> restart: `--restarts` times, annotate a running datagen KafkaConnector with
   `strimzi.io/restart: includeTasks` (t0) and measure
   - `issued_s`: until the annotation is gone (the operator removes it right after Connect accepted
     the restart; polled every 20 ms),
   - `running_s`: until the connector and its task are RUNNING again, read from the timestamps of the
     RESTARTING -> RUNNING records in the worker's status topic (no polling granularity).
2. Reconcile throughput: create `--connectors` KafkaConnectors at once (created `stopped`, through
   KIP-980's initial_state, so no task runs and the machine copes), time until every one is Ready with
   its generation observed; then touch them all (one annotation each) and time until the operator has
   reconciled each again (observed through its reconcile counter).

Prints a table and writes bench/results/operator-<timestamp>.json. Everything started is stopped at
the end. Numbers on a shared 2-core machine are noisy; the JSON records the load averages.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import Consumer, TopicPartition
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from rich.console import Console
from rich.table import Table

from sparklink.clients.settings import KafkaClientSettings
from sparklink.operator.kube.install import apply_crds
from sparklink.platform import ports, process
from sparklink.platform.kafka import KafkaCluster
from sparklink.platform.kube import KubeCluster

GROUP, VERSION = "kafka.strimzi.io", "v1"
console = Console()


def wait(condition: Any, timeout: float, what: str, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Bench:
    def __init__(self, state: Path, kafka: KafkaCluster, kube: KubeCluster) -> None:
        self.state = state
        self.kafka = kafka
        self.api = k8s_config.new_client_from_config(config_file=str(kube.kubeconfig))
        self.custom = k8s.CustomObjectsApi(self.api)
        self.ns = "bench"
        self.metrics_port = ports.free_port()
        apply_crds(self.api)
        k8s.CoreV1Api(self.api).create_namespace({"metadata": {"name": self.ns}})
        cmd = [
            sys.executable, "-m", "sparklink.cli.main", "operator", "run", "--kubeconfig", str(kube.kubeconfig),
            "-n", self.ns, "--metrics-port", str(self.metrics_port), "--state-dir", str(state / "workers"),
            "--log-level", "WARNING",
        ]  # fmt: skip
        self.operator = process.spawn(cmd, state / "operator.log")

    def get(self, kind_plural: str, name: str) -> dict[str, Any]:
        return dict(self.custom.get_namespaced_custom_object(GROUP, VERSION, self.ns, kind_plural, name))

    def create(self, plural: str, body: dict[str, Any]) -> None:
        self.custom.create_namespaced_custom_object(GROUP, VERSION, self.ns, plural, body)

    def connect(self) -> tuple[str, str]:
        self.create(
            "kafkaconnects",
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "KafkaConnect",
                "metadata": {"name": "bench", "annotations": {"strimzi.io/use-connector-resources": "true"}},
                "spec": {
                    "replicas": 1,
                    "bootstrapServers": self.kafka.bootstrap_servers,
                    "groupId": "bench",
                    "configStorageTopic": "bench-configs",
                    "offsetStorageTopic": "bench-offsets",
                    "statusStorageTopic": "bench-status",
                    "config": {
                        "offset.storage.partitions": 1,
                        "status.storage.partitions": 1,
                        "task.trigger.interval.ms": 500,
                    },
                },
            },
        )

        def ready() -> str | None:
            status = self.get("kafkaconnects", "bench").get("status") or {}
            return status.get("url") if any(c["type"] == "Ready" for c in status.get("conditions", [])) else None

        return wait(ready, 300, "the KafkaConnect to be Ready", 0.5), "bench-status"

    def connector(self, name: str, state: str | None = None) -> None:
        spec: dict[str, Any] = {
            "class": "datagen",
            "tasksMax": 1,
            "config": {"topic": f"{name}-out", "records.per.second": 1},
        }
        if state:
            spec["state"] = state
        self.create(
            "kafkaconnectors",
            {
                "kind": "KafkaConnector",
                "apiVersion": f"{GROUP}/{VERSION}",
                "metadata": {"name": name, "labels": {"strimzi.io/cluster": "bench"}},
                "spec": spec,
            },
        )

    def reconciliations(self) -> float:
        text = httpx.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10).text
        match = re.search(
            r'strimzi_reconciliations_total\{kind="KafkaConnector",namespace="bench",selector=""\} (\S+)', text
        )
        return float(match.group(1)) if match else 0.0

    # -- 1 -----------------------------------------------------------------------------------------
    def restarts(self, url: str, status_topic: str, count: int) -> list[dict[str, float]]:
        name = "latency"
        self.connector(name)
        wait(lambda: _running(url, name), 120, "the connector to run", 0.5)
        consumer = Consumer(
            KafkaClientSettings(self.kafka.bootstrap_servers).librdkafka(
                **{"group.id": "bench-probe", "enable.auto.commit": False}
            )
        )
        samples = []
        try:
            for _ in range(count):
                _low, high = consumer.get_watermark_offsets(TopicPartition(status_topic, 0), timeout=10)
                consumer.assign([TopicPartition(status_topic, 0, high)])
                t0 = time.time()
                self.custom.patch_namespaced_custom_object(
                    GROUP,
                    VERSION,
                    self.ns,
                    "kafkaconnectors",
                    name,
                    {"metadata": {"annotations": {"strimzi.io/restart": "includeTasks"}}},
                )
                wait(
                    lambda: (
                        "strimzi.io/restart"
                        not in (self.get("kafkaconnectors", name)["metadata"].get("annotations") or {})
                    ),
                    60,
                    "the annotation to go",
                    0.02,
                )
                issued = time.time() - t0
                running_at = _witness_running(consumer, name, 120)
                samples.append({"issued_s": issued, "running_s": running_at - t0})
                wait(lambda: _running(url, name), 60, "RUNNING", 0.2)
        finally:
            consumer.close()
        return samples

    # -- 2 -----------------------------------------------------------------------------------------
    def throughput(self, count: int) -> dict[str, float]:
        names = [f"many-{n:03d}" for n in range(count)]
        t0 = time.monotonic()
        for name in names:
            self.connector(name, state="stopped")
        created = time.monotonic() - t0

        def all_ready() -> bool:
            items = self.custom.list_namespaced_custom_object(
                GROUP, VERSION, self.ns, "kafkaconnectors", label_selector="strimzi.io/cluster=bench"
            )["items"]
            done = [
                i
                for i in items
                if i["metadata"]["name"].startswith("many-")
                and (i.get("status") or {}).get("observedGeneration") == i["metadata"]["generation"]
                and any(c["type"] == "Ready" for c in i["status"].get("conditions", []))
            ]
            return len(done) == count

        wait(all_ready, 900, f"{count} KafkaConnectors Ready", 0.5)
        first_pass = time.monotonic() - t0
        before = self.reconciliations()
        t1 = time.monotonic()
        for name in names:
            self.custom.patch_namespaced_custom_object(
                GROUP, VERSION, self.ns, "kafkaconnectors", name, {"metadata": {"annotations": {"bench/touch": "1"}}}
            )
        wait(lambda: self.reconciliations() >= before + count, 600, "a reconcile of each", 0.2)
        touched = time.monotonic() - t1
        return {
            "connectors": count,
            "create_calls_s": created,
            "all_ready_s": first_pass,
            "ready_per_s": count / first_pass,
            "touch_all_reconciled_s": touched,
            "reconciles_per_s": count / touched,
        }

    def close(self) -> None:
        process.stop(self.operator, timeout=90)
        self.api.close()


def _running(url: str, name: str) -> bool:
    try:
        status = httpx.get(f"{url}/connectors/{name}/status", timeout=5).json()
    except (httpx.HTTPError, ValueError):
        return False
    return status.get("connector", {}).get("state") == "RUNNING" and [t["state"] for t in status.get("tasks", [])] == [
        "RUNNING"
    ]


def _witness_running(consumer: Consumer, name: str, timeout: float) -> float:
    """Seconds since the epoch of the last RUNNING record that follows a RESTARTING one, for the
    connector and its task, in the status topic."""
    keys = {f"status-connector-{name}", f"status-task-{name}-0"}
    restarting: set[str] = set()
    running: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and set(running) != keys:
        msg = consumer.poll(0.2)
        if msg is None or msg.error() or msg.key() is None:
            continue
        key = msg.key().decode()
        if key not in keys or msg.value() is None:
            continue
        state = json.loads(msg.value()).get("state")
        if state == "RESTARTING":
            restarting.add(key)
        elif state == "RUNNING" and key in restarting:
            running[key] = msg.timestamp()[1] / 1000
    if set(running) != keys:
        raise TimeoutError(f"no RESTARTING -> RUNNING seen for {sorted(keys - set(running))}")
    return max(running.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--restarts", type=int, default=10)
    parser.add_argument("--connectors", type=int, default=200)
    args = parser.parse_args()
    state = Path(tempfile.mkdtemp(prefix="sparklink-bench-operator-"))
    kafka = KafkaCluster.create(state / "kafka", brokers=1)
    kube = KubeCluster.create(state / "kube")
    bench = None
    try:
        console.print("starting Kafka and the Kubernetes control plane ...")
        kafka.start()
        kube.start(timeout=300)
        bench = Bench(state, kafka, kube)
        url, status_topic = bench.connect()
        console.print(f"KafkaConnect ready at {url}; measuring {args.restarts} annotation restarts ...")
        samples = bench.restarts(url, status_topic, args.restarts)
        console.print(f"creating {args.connectors} KafkaConnectors (stopped) ...")
        throughput = bench.throughput(args.connectors)
    finally:
        if bench is not None:
            bench.close()
        kube.destroy()
        kafka.destroy()
    table = Table(title="sparklink operator")
    table.add_column("measure")
    table.add_column("p50", justify="right")
    table.add_column("p90", justify="right")
    table.add_column("max", justify="right")
    for key, label in (("issued_s", "annotation -> restart issued (s)"), ("running_s", "annotation -> RUNNING (s)")):
        values = [s[key] for s in samples]
        table.add_row(label, f"{statistics.median(values):.3f}", f"{percentile(values, 0.9):.3f}", f"{max(values):.3f}")
    console.print(table)
    t = throughput
    console.print(
        f"{t['connectors']} KafkaConnectors (stopped): all Ready {t['all_ready_s']:.1f} s after the first create "
        f"({t['ready_per_s']:.1f}/s); one touch each reconciled in {t['touch_all_reconciled_s']:.1f} s "
        f"({t['reconciles_per_s']:.1f} reconciles/s)"
    )
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    path = out / f"operator-{datetime.now():%Y%m%d-%H%M%S}.json"
    path.write_text(
        json.dumps(
            {"restarts": samples, "throughput": throughput, "loadavg": os.getloadavg(), "cpus": os.cpu_count()},
            indent=2,
        )
    )
    console.print(f"results in {path}")
    shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
