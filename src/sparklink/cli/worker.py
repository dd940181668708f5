"""`sparklink worker`: serve the Connect REST API and run connectors until interrupted."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from typing import Annotated

import typer

from sparklink.worker.config import WorkerConfig, WorkerConfigError


def run_worker(
    properties: Annotated[
        Path | None, typer.Argument(help="A Connect-style worker.properties file (optional).", exists=True)
    ] = None,
    bootstrap_servers: Annotated[
        str | None, typer.Option("--bootstrap-servers", "-b", help="Kafka bootstrap servers.")
    ] = None,
    port: Annotated[int | None, typer.Option(help="REST port [default: 8083].")] = None,
    host: Annotated[str | None, typer.Option(help="REST listen address [default: 127.0.0.1].")] = None,
    group_id: Annotated[
        str | None,
        typer.Option(
            "--group-id",
            help="Join this worker group (distributed mode): workers with the same group id and internal "
            "topics share connectors and tasks, and take over a dead worker's.",
        ),
    ] = None,
    spark_master: Annotated[
        str | None,
        typer.Option(
            "--spark-master",
            help="Where task queries run: local[N] (in this process, N task threads; the default N is twice the "
            "cores, at least 8), spark://host:7077, yarn "
            "or k8s://https://host:port. Each worker is its own Spark application.",
        ),
    ] = None,
    log_level: Annotated[str, typer.Option(help="Python log level.")] = "INFO",
) -> None:
    """Run a worker: connector configs, statuses and offsets live in Kafka compacted topics.

    Example: sparklink worker -b 127.0.0.1:9092   then   curl localhost:8083/connectors

    A group of three on one Spark cluster (one command per machine; any worker answers REST):
    sparklink worker -b kafka:9092 --group-id etl --spark-master spark://spark:7077 --port 8083
    """
    from sparklink.clients.errors import KafkaAccessError
    from sparklink.worker import log_context
    from sparklink.worker.assembly import start_worker

    log_context.install()  # every line a task causes carries its `[name|task-0] ` context
    logging.basicConfig(level=log_level.upper(), format=log_context.LOG_FORMAT)
    logging.getLogger("py4j").setLevel(logging.WARNING)
    overrides = {
        "bootstrap.servers": bootstrap_servers,
        "rest.port": None if port is None else str(port),
        "rest.host.name": host,
        "group.id": group_id,
        "sparklink.worker.mode": "distributed" if group_id else None,
        "spark.master": spark_master,
    }
    try:
        config = WorkerConfig.from_properties(properties, {k: v for k, v in overrides.items() if v is not None})
    except WorkerConfigError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        runtime = start_worker(config)
    except WorkerConfigError as exc:  # a setting it cannot serve or connect with (TLS stores, JAAS, listeners, Kafka)
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    except KafkaAccessError as exc:  # the brokers refused the worker's Kafka settings: the message says what to fix
        typer.echo(f"sparklink worker cannot start: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"sparklink worker {runtime.herder.worker_id} serving {runtime.url}")
    runtime.run_until(stop)
