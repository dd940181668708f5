"""`sparklink mirror-maker mm2.properties`: MirrorMaker 2's dedicated mode, on sparklink workers.

Reads Apache MirrorMaker 2's properties file (connectors/mirror/maker.py) and, for every flow it
enables (and every pair that only emits heartbeats, as MirrorMaker does), starts an in-process worker
against the target cluster, then creates or updates the flow's three connectors through that
worker's herder, the way MirrorHerder configures them when it becomes leader. All workers share one
SparkContext, each in its own SparkSession; each also serves the Connect REST API (on a free port,
printed at start).
"""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from sparklink.worker.assembly import RunningWorker

log = logging.getLogger(__name__)


def run_mirror_maker(
    properties: Annotated[Path, typer.Argument(help="An Apache MirrorMaker 2 mm2.properties file.", exists=True)],
    clusters: Annotated[
        list[str] | None, typer.Option("--clusters", help="Target cluster aliases to serve (default: all).")
    ] = None,
    log_level: Annotated[str, typer.Option(help="Python log level.")] = "INFO",
) -> None:
    """Run MirrorMaker 2 flows (`A->B.enabled = true`) from an Apache mm2.properties file.

    Example: sparklink mirror-maker config/connect-mirror-maker.properties
    """
    from sparklink.api.errors import ConnectError
    from sparklink.connectors.mirror.maker import CONNECTORS, MirrorMakerConfig
    from sparklink.worker import log_context
    from sparklink.worker.assembly import start_worker
    from sparklink.worker.config import WorkerConfig

    log_context.install()  # every line a task causes carries its `[name|task-0] ` context
    logging.basicConfig(level=log_level.upper(), format=log_context.LOG_FORMAT)
    logging.getLogger("py4j").setLevel(logging.WARNING)
    config = MirrorMakerConfig.load(properties)
    flows = [f for f in config.flows() if not clusters or f.target in clusters]
    if not flows:
        raise typer.BadParameter("No source->target replication flows.")

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    runtimes: list[RunningWorker] = []
    try:
        root: SparkSession | None = None
        for flow in flows:
            worker = WorkerConfig.model_validate({"rest.port": "0", **config.worker_config(flow)})
            # One SparkContext, one session per flow: every flow has connectors with the same names,
            # and Spark wants query names unique per session.
            runtime = start_worker(worker, spark=None if root is None else root.newSession())
            runtimes.append(runtime)
            root = root or runtime.spark
            herder = runtime.herder
            for connector_class in CONNECTORS:
                desired = config.connector_config(flow, connector_class)
                name = desired["name"]
                if name in herder.connectors() and herder.connector_config(name) == desired:
                    log.info("configuration for %s is already up to date for %s", name, flow)
                    continue
                try:
                    herder.put_connector_config(name, desired)
                    log.info("%s connector configured for %s", name, flow)
                except ConnectError as exc:
                    log.error("Failed to configure %s connector for %s: %s", name, flow, exc.message)
            typer.echo(f"sparklink mirror-maker: {flow} on {worker.bootstrap_servers}, REST {runtime.url}")
        stop.wait()
    finally:
        for runtime in reversed(runtimes):
            runtime.stop()
