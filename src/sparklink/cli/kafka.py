"""`sparklink kafka start|stop|status`: a local KRaft cluster from the Maven-fetched broker jars."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from sparklink.platform.kafka import KafkaCluster, KafkaStartError, default_state_dir

app = typer.Typer(help="Run a local Apache Kafka cluster (KRaft) for development and tests.", no_args_is_help=True)
console = Console()

StateDir = Annotated[
    Path | None,
    typer.Option("--state-dir", help="Where the cluster keeps configs, data and logs [default: .state/kafka]."),
]


@app.command()
def start(
    brokers: Annotated[int, typer.Option(help="Number of brokers.")] = 1,
    dedicated_controller: Annotated[
        bool | None,
        typer.Option(
            "--dedicated-controller/--combined",
            help="Run the KRaft controller in its own process [default: combined for 1 broker, dedicated for more].",
        ),
    ] = None,
    heap: Annotated[str, typer.Option(help="JVM heap per node, e.g. 512m or 1g.")] = "512m",
    state_dir: StateDir = None,
) -> None:
    """Start a cluster in the background and print its bootstrap servers.

    Runs again on an existing state directory restart the same cluster with its data.
    """
    path = state_dir or default_state_dir()
    try:
        if (path / "cluster.json").exists():
            cluster = KafkaCluster.load(path)
        else:
            cluster = KafkaCluster.create(path, brokers, dedicated_controller, heap)
        with console.status(f"starting Kafka ({len(cluster.brokers)} broker(s)) in {path} ..."):
            cluster.start()
    except KafkaStartError as exc:
        console.print(f"[red]Kafka did not start:[/red] {exc}")
        raise typer.Exit(1) from None
    console.print(f"[green]Kafka is up.[/green] bootstrap.servers={cluster.bootstrap_servers}")
    console.print(f"Stop it with: sparklink kafka stop --state-dir {path}")


@app.command()
def stop(
    state_dir: StateDir = None,
    delete: Annotated[bool, typer.Option("--delete", help="Also delete the cluster's data and logs.")] = False,
) -> None:
    """Stop every node of the cluster (brokers first, then the controller)."""
    path = state_dir or default_state_dir()
    try:
        cluster = KafkaCluster.load(path)
    except FileNotFoundError:
        console.print(f"No cluster in {path}; nothing to stop.")
        return
    cluster.destroy() if delete else cluster.stop()
    console.print("Kafka stopped." + (" Data deleted." if delete else ""))


@app.command()
def status(state_dir: StateDir = None) -> None:
    """Show each node, its listeners and whether it runs."""
    path = state_dir or default_state_dir()
    try:
        cluster = KafkaCluster.load(path)
    except FileNotFoundError:
        console.print(f"No cluster in {path}. Start one with: sparklink kafka start")
        raise typer.Exit(1) from None
    table = Table(title=f"Kafka cluster {cluster.cluster_id} ({path})")
    for col in ("node", "roles", "listener", "controller", "pid", "alive"):
        table.add_column(col)
    for row in cluster.status():
        table.add_row(*(str(row[c]) for c in ("node", "roles", "listener", "controller", "pid", "alive")))
    console.print(table)
    console.print(f"bootstrap.servers={cluster.bootstrap_servers}")
    if not cluster.is_running():
        raise typer.Exit(1)
