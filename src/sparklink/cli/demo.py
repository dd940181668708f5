"""`sparklink demo`: local Kafka + a worker + a datagen connector, with a live record count and rate.

Everything it starts lives under a fresh state directory and is stopped on exit (duration reached,
Ctrl-C or an error), so it leaves no process behind.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import httpx
import typer
from confluent_kafka import Consumer
from rich.console import Console
from rich.live import Live
from rich.table import Table

from sparklink.clients.settings import KafkaClientSettings
from sparklink.clients.watermarks import topic_size

console = Console()
TOPIC = "demo-records"


def run_demo(
    duration: Annotated[
        float | None,
        typer.Option(envvar="DURATION", help="Seconds to run; unbounded until Ctrl-C when not set."),
    ] = None,
    rate: Annotated[int, typer.Option(help="Records per second the datagen connector generates.")] = 1000,
    tasks: Annotated[int, typer.Option(help="tasks.max of the datagen connector.")] = 2,
    port: Annotated[int, typer.Option(help="REST port of the demo worker.")] = 8083,
) -> None:
    """Start a local Kafka and a worker, create a datagen connector over REST and watch records flow."""
    from sparklink.platform import ports
    from sparklink.platform.kafka import KafkaCluster
    from sparklink.worker.assembly import RunningWorker, start_worker
    from sparklink.worker.config import WorkerConfig

    logging.basicConfig(level=logging.WARNING)
    if duration is not None and duration <= 0:
        duration = None
    if ports.port_open(port):
        port = ports.free_port()
    state = Path(tempfile.mkdtemp(prefix="sparklink-demo-"))
    stop_requested = False

    def on_signal(_sig: int, _frame: object) -> None:
        nonlocal stop_requested
        stop_requested = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    cluster = KafkaCluster.create(state / "kafka", brokers=1)
    runtime: RunningWorker | None = None
    try:
        t0 = time.monotonic()
        with console.status("starting a local Kafka broker (KRaft) ..."):
            cluster.start()
        console.print(f"[green]✓[/green] Kafka at {cluster.bootstrap_servers} ({time.monotonic() - t0:.1f}s)")
        t0 = time.monotonic()
        config = WorkerConfig.model_validate(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "rest.port": port,
                "offset.storage.partitions": 1,
                "status.storage.partitions": 1,
                "sparklink.state.dir": str(state / "worker"),
                "spark.master": os.environ.get("SPARKLINK_SPARK_MASTER", "local[2]"),
            }
        )
        with console.status("starting the worker (Spark, stores, REST API) ..."):
            runtime = start_worker(config)
        console.print(f"[green]✓[/green] worker REST API at {runtime.url} ({time.monotonic() - t0:.1f}s)")
        body = {
            "name": "demo-datagen",
            "config": {
                "connector.class": "datagen",
                "topic": TOPIC,
                "records.per.second": str(rate),
                "tasks.max": str(tasks),
            },
        }
        console.print(f"POST {runtime.url}/connectors  {body}")
        response = httpx.post(f"{runtime.url}/connectors", json=body, timeout=120)
        response.raise_for_status()
        console.print(
            f"[green]✓[/green] {response.status_code} created; watching topic [bold]{TOPIC}[/bold]"
            + (f" for {duration:.0f}s" if duration else " (Ctrl-C to stop)")
        )
        # The demo's own cluster serves one PLAINTEXT listener: its clients need its bootstrap servers only.
        clients = KafkaClientSettings(cluster.bootstrap_servers)
        _watch(runtime.url, clients, duration, lambda: stop_requested)
        _show_sample(clients)
    finally:
        with console.status("stopping the worker and Kafka ..."):
            if runtime is not None:
                runtime.stop()
            cluster.destroy()
            shutil.rmtree(state, ignore_errors=True)
        console.print("[green]✓[/green] stopped; nothing left running")


def _watch(url: str, clients: KafkaClientSettings, duration: float | None, stopped: Callable[[], bool]) -> None:
    consumer = Consumer(clients.librdkafka(**{"group.id": "sparklink-demo-watch"}))
    start = time.monotonic()
    last_count, last_time = 0, start
    rate = 0.0
    try:
        with Live(console=console, refresh_per_second=4) as live:
            while not stopped() and (duration is None or time.monotonic() - start < duration):
                count = topic_size(consumer, TOPIC, timeout=5)
                now = time.monotonic()
                if now - last_time >= 1:
                    rate = (count - last_count) / (now - last_time)
                    last_count, last_time = count, now
                states = _states(url)
                table = Table(title=f"{TOPIC} after {now - start:.0f}s")
                table.add_column("records in topic", justify="right")
                table.add_column("records/s", justify="right")
                table.add_column("connector / tasks")
                table.add_row(f"{count:,}", f"{rate:,.0f}", states)
                live.update(table)
                time.sleep(0.5)
    finally:
        consumer.close()


def _states(url: str) -> str:
    try:
        status = httpx.get(f"{url}/connectors/demo-datagen/status", timeout=5).json()
    except (httpx.HTTPError, ValueError):
        return "?"
    tasks = " ".join(t["state"] for t in status.get("tasks", []))
    return f"{status['connector']['state']} / {tasks}"


def _show_sample(clients: KafkaClientSettings, n: int = 3) -> None:
    consumer = Consumer(clients.librdkafka(**{"group.id": "sparklink-demo-sample", "auto.offset.reset": "earliest"}))
    consumer.subscribe([TOPIC])
    console.print(f"\nfirst records of {TOPIC}:")
    shown = 0
    deadline = time.monotonic() + 10
    while shown < n and time.monotonic() < deadline:
        msg = consumer.poll(1)
        if msg is None or msg.error():
            continue
        console.print(f"  key={msg.key()!r} value={(msg.value() or b'')[:120]!r}")
        shown += 1
    consumer.close()
