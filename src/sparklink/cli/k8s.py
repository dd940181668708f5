"""`sparklink k8s start|stop|status`: a local Kubernetes API server (etcd, kube-apiserver, controllers)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from sparklink.cli.local_cluster import stop_recorded
from sparklink.platform import kube_binaries
from sparklink.platform.artifacts import ArtifactsMissingError
from sparklink.platform.kube import KubeCluster, KubeStartError, default_state_dir

app = typer.Typer(
    help="Run a local Kubernetes API server for development and tests: etcd, kube-apiserver and "
    "kube-controller-manager on 127.0.0.1, built from Go by `make test` or by the first `start`.\n\n"
    "Custom resources, Deployments, ReplicaSets, ServiceAccounts, namespaces and garbage collection "
    "behave as in a real cluster. There is no scheduler and no kubelet, so Pods stay Pending: run "
    "workers with `sparklink worker` next to it.\n\n"
    "Point kubectl (not included; bring your own) or any client at the kubeconfig that `start` prints.",
    no_args_is_help=True,
)
console = Console()

StateDir = Annotated[
    Path | None,
    typer.Option(
        "--state-dir", help="Where the cluster keeps its PKI, kubeconfig, etcd data and logs \\[default: .state/kube]."
    ),
]


@app.command()
def start(
    state_dir: StateDir = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for all three components to be ready.")] = 180.0,
) -> None:
    """Start the control plane in the background and print how to reach it.

    A first start builds etcd, kube-apiserver and kube-controller-manager if they are missing (once, minutes),
    then creates a CA, certificates, an admin user (group system:masters) and a kubeconfig.
    A later start on the same state directory brings the same cluster back with its data.

    Then, with your own kubectl: export KUBECONFIG=<the printed path>; kubectl get namespaces
    """
    path = state_dir or default_state_dir()
    try:
        # Before the spinner, so that a first build's progress lines show as they come.
        kube_binaries.ensure(report=lambda line: console.print(line, markup=False, highlight=False))
        cluster = KubeCluster.load(path) if (path / "cluster.json").exists() else KubeCluster.create(path)
        with console.status(f"starting etcd, kube-apiserver and kube-controller-manager in {path} ..."):
            cluster.start(timeout)
    except (KubeStartError, ArtifactsMissingError) as exc:
        console.print(f"[red]Kubernetes did not start:[/red] {exc}")
        raise typer.Exit(1) from None
    console.print(f"[green]Kubernetes API server is up[/green] at {cluster.server}")
    console.print(f"kubeconfig: {cluster.kubeconfig}")
    console.print("Use it with kubectl or any Kubernetes client:")
    console.print(f"  export KUBECONFIG={cluster.kubeconfig}", soft_wrap=True)
    console.print(f"Stop it with: sparklink k8s stop --state-dir {path}", soft_wrap=True)


@app.command()
def stop(
    state_dir: StateDir = None,
    delete: Annotated[bool, typer.Option("--delete", help="Also delete its data, certificates and logs.")] = False,
) -> None:
    """Stop the controller manager, the API server and etcd (the data stays unless --delete)."""
    stop_recorded(
        console, KubeCluster.load, state_dir or default_state_dir(), delete, "Kubernetes cluster", "Kubernetes"
    )


@app.command()
def status(state_dir: StateDir = None) -> None:
    """Show each component, where it listens and whether it runs, and the kubeconfig (exit 1 unless all run)."""
    path = state_dir or default_state_dir()
    try:
        cluster = KubeCluster.load(path)
    except FileNotFoundError:
        console.print(f"No Kubernetes cluster in {path}. Start one with: sparklink k8s start")
        raise typer.Exit(1) from None
    columns = ("component", "url", "pid", "alive")
    table = Table(title=f"Local Kubernetes ({path})")
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in cluster.status():
        table.add_row(*(str(row[c]) for c in columns))
    console.print(table)
    console.print(f"logs: {cluster.state_dir / 'logs'}", soft_wrap=True)
    console.print(f"export KUBECONFIG={cluster.kubeconfig}", soft_wrap=True)
    if not cluster.is_running():
        raise typer.Exit(1)
