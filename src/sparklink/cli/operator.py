"""`sparklink operator`: run the Strimzi-compatible operator, and install its CRDs and least-privilege RBAC."""

from __future__ import annotations

import faulthandler
import logging
import signal
from datetime import timedelta
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    help="Run Kafka clusters, Kafka Connect, connectors and MirrorMaker 2 from Strimzi resources "
    "(kafka.strimzi.io/v1).\n\n"
    "1. Install the CRDs and least-privilege RBAC: sparklink operator install --apply "
    "(or: sparklink operator install | kubectl apply -f -)\n\n"
    "2. Run the operator as its ServiceAccount: sparklink operator run --kubeconfig <its kubeconfig>\n\n"
    '3. Apply Strimzi manifests: a KafkaConnect with the annotation strimzi.io/use-connector-resources: "true", '
    "then KafkaConnectors labelled strimzi.io/cluster: <that KafkaConnect>. Restart, offsets and state work "
    "through Strimzi's annotations and fields. A Kafka with KafkaNodePools (Strimzi's KRaft examples) runs a "
    "local cluster (TLS and SCRAM listeners, its CAs in Strimzi's Secrets), rolled safely on a settings change, "
    "a CA renewal or strimzi.io/manual-rolling-update; KafkaUsers labelled strimzi.io/cluster: <that Kafka> get "
    "their credentials Secret and ACLs.",
    no_args_is_help=True,
)

Kubeconfig = Annotated[
    Path | None,
    typer.Option(help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the in-cluster account)."),
]


@app.command("run")
def run(
    kubeconfig: Kubeconfig = None,
    namespace: Annotated[
        list[str] | None,
        typer.Option("--namespace", "-n", help="Namespace to watch; repeat for several (default: all namespaces)."),
    ] = None,
    full_reconcile_interval: Annotated[
        float, typer.Option(help="Seconds between full passes over every resource (Strimzi: 120).")
    ] = 120.0,
    minute_seconds: Annotated[
        float,
        typer.Option(
            help="Length in seconds of the 'minute' the auto-restart back-off counts in (restarts after 0, 2, 6, "
            "12, ... minutes). Keep 60 in production; tests and demos use a few seconds."
        ),
    ] = 60.0,
    metrics_port: Annotated[
        int, typer.Option(help="Port of the Prometheus /metrics endpoint; 0 picks a free one.")
    ] = 8080,
    state_dir: Annotated[
        Path, typer.Option(help="Where local Connect workers keep their properties, logs and state.")
    ] = Path(".state/operator"),
    plugin_path: Annotated[
        str,
        typer.Option(
            help="plugin.path of the local Connect workers: where their connector plugins are (Connect's layout; "
            "Strimzi's images set it themselves, so spec.config may not)."
        ),
    ] = "",
    workers: Annotated[int, typer.Option(help="Resources reconciled in parallel.")] = 4,
    runtime: Annotated[
        str,
        typer.Option(
            help="Where Connect workers run: 'local' (sparklink worker processes on this machine) or "
            "'kubernetes' (a Deployment, Service and ConfigMap per cluster; the operator must reach the Services)."
        ),
    ] = "local",
    image: Annotated[
        str, typer.Option(help="Worker image for --runtime kubernetes (spec.image wins).")
    ] = "sparklink:latest",
    log_level: Annotated[str, typer.Option(help="Python log level of the operator.")] = "INFO",
    kafka_heap: Annotated[
        str, typer.Option(help="-Xmx of Kafka nodes whose Kafka or KafkaNodePool sets no jvmOptions.")
    ] = "512m",
    kafka_operation_timeout: Annotated[
        float,
        typer.Option(
            help="Seconds the roller waits for a Kafka node to become ready (Strimzi's operation timeout: 300). "
            "Shorter makes a roll give up sooner on a node in log recovery; a restart must fit in it."
        ),
    ] = 300.0,
    kafka_roll_backoff: Annotated[
        float,
        typer.Option(help="First retry delay in seconds of a node the roller cannot roll yet (doubles, 10 tries)."),
    ] = 0.25,
) -> None:
    """Watch Kafka, KafkaNodePool, KafkaUser, KafkaConnect, KafkaConnector and KafkaMirrorMaker2 resources and
    reconcile them.

    Connect workers run as local `sparklink worker` processes (their REST URL goes to status.url); Kafka
    clusters as local KRaft nodes with broker-state agents (their addresses go to status.listeners).
    Both keep running if the operator dies, and the next operator adopts them.
    Stop with Ctrl-C: the workers and Kafka nodes it runs are stopped too. `kill -USR1 <pid>` writes every
    thread's Python stack to stderr (what a reconcile that seems stuck is waiting on) and the operator goes on.
    """
    from sparklink.operator.kube.loop import Operator, OperatorConfig

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("kopf", "kubernetes", "urllib3", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    config = OperatorConfig(
        kubeconfig=kubeconfig,
        namespaces=list(namespace or []),
        full_reconcile_interval=full_reconcile_interval,
        minute=timedelta(seconds=minute_seconds),
        metrics_port=metrics_port,
        state_dir=state_dir,
        plugin_path=plugin_path,
        workers=workers,
        runtime=runtime,
        image=image,
        kafka_heap=kafka_heap,
        kafka_operation_timeout=kafka_operation_timeout,
        kafka_roll_backoff=kafka_roll_backoff,
    )
    if runtime not in ("local", "kubernetes"):
        raise typer.BadParameter(f"--runtime must be 'local' or 'kubernetes', not '{runtime}'")
    operator = Operator(config)

    def on_signal(_sig: int, _frame: object) -> None:
        operator.stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # faulthandler writes from the signal itself, so the dump comes even when every thread is blocked.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    operator.run()


@app.command("crds")
def crds_command(
    apply: Annotated[
        bool, typer.Option("--apply", help="Create or update them on the API server instead of printing.")
    ] = False,
    kubeconfig: Kubeconfig = None,
) -> None:
    """Print the CRDs as one YAML stream (pipe it to `kubectl apply -f -`), or --apply them directly."""
    from sparklink.operator import crds

    if not apply:
        typer.echo("\n---\n".join(crds.texts().values()))
        return
    from sparklink.operator.kube.install import apply_crds
    from sparklink.operator.kube.store import api_client

    with api_client(kubeconfig) as api:
        for name in apply_crds(api):
            typer.echo(f"customresourcedefinition {name} applied")


@app.command("install")
def install_command(
    apply: Annotated[
        bool,
        typer.Option(
            "--apply/--print",
            help="--print (the default) writes the CRDs and the RBAC objects as one YAML stream; --apply creates or "
            "updates them on the API server (and creates --namespace if it is missing).",
        ),
    ] = False,
    namespace: Annotated[
        str, typer.Option("--namespace", "-n", help="Namespace of the operator's ServiceAccount (where it runs).")
    ] = "sparklink",
    watch_namespace: Annotated[
        list[str] | None,
        typer.Option(
            "--watch-namespace",
            "-w",
            help="A namespace the operator may act in (repeat for several): bound there by a RoleBinding only. "
            "Without it, a ClusterRoleBinding lets it act in every namespace. Pass the same list to "
            "`operator run --namespace`.",
        ),
    ] = None,
    kubeconfig: Kubeconfig = None,
) -> None:
    """Install the operator with least privilege: its CRDs, the ServiceAccount `sparklink-operator`, and two
    ClusterRoles holding exactly the verbs and resources its API calls use.

    sparklink-operator-namespaced: in the watched namespaces, the Strimzi resources (get, list, watch, patch; their
    /status: patch), Secrets (get, create, update, delete: never list), ConfigMaps, and for the Kubernetes runtime
    the Deployments, Services, ServiceAccounts, NetworkPolicies and the Roles that let worker pods read their own
    Secrets. sparklink-operator-global: list and watch of CRDs and namespaces, nothing else.

    Examples:

      sparklink operator install | kubectl apply -f -

      sparklink operator install --apply -n kafka-operator -w team-a -w team-b

    Then run the operator as that account, e.g. in a pod with serviceAccountName: sparklink-operator, or with a
    kubeconfig holding its token (kubectl create token sparklink-operator -n <namespace>), and
    `sparklink operator run --namespace team-a --namespace team-b`.
    """
    from sparklink.operator import crds, rbac

    watched = list(watch_namespace or [])
    if not apply:
        typer.echo("\n---\n".join([*crds.texts().values(), rbac.text(namespace, watched)]).rstrip())
        return
    from sparklink.operator.kube.install import apply_crds, apply_rbac
    from sparklink.operator.kube.store import api_client

    with api_client(kubeconfig) as api:
        for name in apply_crds(api):
            typer.echo(f"customresourcedefinition {name} applied")
        for applied in apply_rbac(api, namespace, watched):
            typer.echo(f"{applied} applied")
