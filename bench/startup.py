"""Start-up figures: broker start, SparkSession start, worker start, first record after POST.

Run: .venv/bin/python -m bench.startup [--runs N] [--spark-master MASTER]
Each run starts a fresh 1-broker cluster, a fresh worker process-local SparkSession (in a child
process, so the JVM start is counted) and a datagen connector, then tears everything down. The session and
the worker run on the worker's own spark.master default unless --spark-master names another.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from confluent_kafka import Consumer

from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform.kafka import KafkaCluster

SPARK_PROBE = """
import sys, time
t = time.monotonic()
from sparklink.worker.execution.spark import build_session
s = build_session(sys.argv[1], "bench-startup")
s.range(1).count()
print(time.monotonic() - t)
s.stop()
"""


def one_run(workdir: Path, master: str) -> dict[str, float]:
    out: dict[str, float] = {}
    cluster = KafkaCluster.create(workdir / "kafka", brokers=1)
    t = time.monotonic()
    cluster.start()
    out["broker_start_s"] = time.monotonic() - t
    try:
        probe = subprocess.run([sys.executable, "-c", SPARK_PROBE, master], capture_output=True, text=True, check=True)
        out["spark_session_start_s"] = float(probe.stdout.strip().splitlines()[-1])

        from sparklink.worker.assembly import start_worker
        from sparklink.worker.config import WorkerConfig

        config = WorkerConfig.model_validate(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "rest.port": 0,
                "offset.storage.partitions": 1,
                "status.storage.partitions": 1,
                "task.trigger.interval.ms": 200,
                "spark.master": master,
            }
        )
        t = time.monotonic()
        runtime = start_worker(config)
        out["worker_start_s"] = time.monotonic() - t
        try:
            consumer = Consumer(
                KafkaClientSettings(cluster.bootstrap_servers).librdkafka(
                    **{"group.id": "bench", "auto.offset.reset": "earliest"}
                )
            )
            consumer.subscribe(["bench-first"])
            body = {
                "name": "first",
                "config": {"connector.class": "datagen", "topic": "bench-first", "records.per.second": "100"},
            }
            t = time.monotonic()
            httpx.post(f"{runtime.url}/connectors", json=body, timeout=60).raise_for_status()
            out["post_response_s"] = time.monotonic() - t
            while True:
                msg = consumer.poll(0.1)
                if msg is not None and not msg.error():
                    break
            out["first_record_after_post_s"] = time.monotonic() - t
            consumer.close()
        finally:
            runtime.stop()
    finally:
        cluster.destroy()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--spark-master", default=None, help="spark.master of the session and the worker (default: the worker's own)"
    )
    args = parser.parse_args()
    from sparklink.worker.config import default_local_master

    master = args.spark_master or default_local_master()
    runs = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="sparklink-bench-") as tmp:
            runs.append(one_run(Path(tmp), master))
            print(f"run {i + 1}: {json.dumps({k: round(v, 2) for k, v in runs[-1].items()})}", flush=True)
    print(f"{'measure':32} {'median':>8} {'min':>8} {'max':>8}")
    for key in runs[0]:
        values = [r[key] for r in runs]
        print(f"{key:32} {statistics.median(values):8.2f} {min(values):8.2f} {max(values):8.2f}")
    results = Path("bench/results")
    results.mkdir(parents=True, exist_ok=True)
    (results / f"startup-{int(time.time())}.json").write_text(json.dumps(runs, indent=2))


if __name__ == "__main__":
    main()
