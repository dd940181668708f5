"""`sparklink kafka start|stop|status|roll`: a local KRaft cluster from the Maven-fetched broker jars, plain or
secured (`--listener`, see `kafka_access`); `status --command-config` checks any cluster as a client would, and
`roll --command-config` makes the roller's Admin API requests as that client."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from sparklink.cli import kafka_access
from sparklink.cli.local_cluster import stop_recorded
from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform.kafka import KafkaCluster, KafkaStartError, default_state_dir

app = typer.Typer(help="Run a local Apache Kafka cluster (KRaft) for development and tests.", no_args_is_help=True)
console = Console()

StateDir = Annotated[
    Path | None,
    typer.Option("--state-dir", help="Where the cluster keeps configs, data and logs \\[default: .state/kafka]."),
]


@app.command()
def start(
    brokers: Annotated[int, typer.Option(help="Number of brokers.")] = 1,
    dedicated_controller: Annotated[
        bool | None,
        typer.Option(
            "--dedicated-controller/--combined",
            help="Run the KRaft controller in its own process \\[default: combined for 1 broker, dedicated for more].",
        ),
    ] = None,
    heap: Annotated[str, typer.Option(help="JVM heap per node, e.g. 512m or 1g.")] = "512m",
    state_dir: StateDir = None,
    controllers: Annotated[int, typer.Option(help="KRaft controller quorum size (voters).")] = 1,
    agents: Annotated[
        bool,
        typer.Option(
            "--agents/--no-agents",
            help="Run a broker-state agent (mTLS) beside each broker, for `sparklink kafka roll`.",
        ),
    ] = False,
    listener: Annotated[list[str] | None, typer.Option("--listener", "-l", help=kafka_access.LISTENER_HELP)] = None,
    user: Annotated[list[str] | None, typer.Option("--user", help=kafka_access.USER_HELP)] = None,
) -> None:
    """Start a cluster in the background and print its bootstrap servers.

    Runs again on an existing state directory restart the same cluster with its data (and its listeners).
    A secured cluster's client settings go to <state>/clients/<listener>.properties (readable by you only);
    the command prints them with secrets hidden.

    Examples:

      sparklink kafka start  (one PLAINTEXT listener)

      sparklink kafka start -l ssl -l mtls -l sasl-ssl:scram-sha-512+plain -l sasl-plaintext:plain

      sparklink kafka start -l external=sasl-ssl:scram-sha-512 --user alice --user bob
    """
    path = state_dir or default_state_dir()
    listeners = kafka_access.parse_listeners(listener or [])
    users = kafka_access.parse_users(user or [])
    try:
        if (path / "cluster.json").exists():
            cluster = KafkaCluster.load(path)
            if listeners or users:
                console.print(f"A cluster already lives in {path}: it keeps its listeners and users.")
        else:
            if users and not any(lst.secured for lst in listeners):
                raise typer.BadParameter(
                    "users log in on secured listeners: add --listener mtls or sasl-*", param_hint="--user"
                )
            cluster = KafkaCluster.create(
                path,
                brokers,
                dedicated_controller,
                heap,
                controllers=controllers,
                agents=agents,
                listeners=listeners,
                users=users,
            )
        with console.status(f"starting Kafka ({len(cluster.brokers)} broker(s)) in {path} ..."):
            cluster.start()
    except KafkaStartError as exc:
        console.print(f"[red]Kafka did not start:[/red] {exc}")
        raise typer.Exit(1) from None
    console.print(f"[green]Kafka is up.[/green] bootstrap.servers={cluster.bootstrap_servers}")
    kafka_access.print_client_files(console, cluster)
    console.print(f"Stop it with: sparklink kafka stop --state-dir {path}")


@app.command()
def stop(
    state_dir: StateDir = None,
    delete: Annotated[bool, typer.Option("--delete", help="Also delete the cluster's data and logs.")] = False,
) -> None:
    """Stop every node of the cluster (brokers first, then the controller)."""
    stop_recorded(console, KafkaCluster.load, state_dir or default_state_dir(), delete, "cluster", "Kafka")


@app.command()
def status(
    state_dir: StateDir = None,
    command_config: Annotated[
        Path | None,
        typer.Option(
            "--command-config",
            help="Client properties (Java names, as Kafka's own tools take them: security.protocol, ssl.*, "
            "sasl.*) to check the cluster with: one metadata request as that client, which reports the brokers "
            "it sees or what to fix. bootstrap.servers defaults to the local cluster's first listener.",
        ),
    ] = None,
    bootstrap_server: Annotated[
        str | None,
        typer.Option(
            "--bootstrap-server",
            help="Check an external cluster at HOST:PORT[,...] instead of a local one (with --command-config "
            "for a secured cluster).",
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds the client check may take.")] = 15.0,
) -> None:
    """Show each node, its listeners and whether it runs; with --command-config, check it as a client.

    Examples:

      sparklink kafka status

      sparklink kafka status --command-config .state/kafka/clients/saslssl.properties

      sparklink kafka status --bootstrap-server kafka:9093 --command-config client.properties
    """
    if bootstrap_server:  # an external cluster: only the client check
        settings = kafka_access.client_settings(command_config, bootstrap_server, None)
        if not kafka_access.check_client(console, settings, timeout):
            raise typer.Exit(1)
        return
    path = state_dir or default_state_dir()
    cluster = _started_cluster(path)
    checked = kafka_access.client_settings(command_config, None, cluster) if command_config else None
    table = Table(title=f"Kafka cluster {cluster.cluster_id} ({path})")
    columns = ("node", "roles", "listener", "controller", "pid", "alive", "state", "active_controller", "agent")
    for col in columns:
        table.add_column(col)
    for row in cluster.status():
        table.add_row(*(str(row[c]) for c in columns))
    console.print(table)
    console.print(f"bootstrap.servers={cluster.bootstrap_servers}")
    healthy = cluster.is_running()
    if checked is not None:
        healthy = kafka_access.check_client(console, checked, timeout) and healthy
    if not healthy:
        raise typer.Exit(1)


@app.command()
def roll(
    state_dir: StateDir = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print what would happen, node by node; change nothing.")
    ] = False,
    config: Annotated[
        list[str] | None,
        typer.Option(
            "--config",
            "-c",
            help="A broker setting to change, key=value (repeat for more). Dynamic settings are applied with "
            "incrementalAlterConfigs and no restart; read-only ones restart each node once, safely.",
        ),
    ] = None,
    node: Annotated[
        list[int] | None,
        typer.Option(
            "--node",
            "-n",
            help="Only these node ids (repeat for more) \\[default: every node; with --config: brokers].",
        ),
    ] = None,
    manual: Annotated[
        bool, typer.Option("--manual", help="Restart the nodes even without a change (MANUAL_ROLLING_UPDATE).")
    ] = False,
    operation_timeout: Annotated[
        float, typer.Option(help="Seconds to wait for a node to become ready before asking its agent why.")
    ] = 300.0,
    command_config: Annotated[
        Path | None,
        typer.Option(
            "--command-config",
            help="Client properties (Java names: security.protocol, ssl.*, sasl.*) the roller's Admin API "
            "requests use, as Kafka's own tools take them; the client needs describe and alter rights on the "
            "cluster. bootstrap.servers defaults to the cluster's first listener \\[default: the cluster's own "
            "client identity; on a secured cluster its mutual-TLS replication listener].",
        ),
    ] = None,
) -> None:
    """Roll the cluster one node at a time, never making it less available.

    Strimzi's KafkaRoller rules: controllers first, then brokers; unready
    nodes first; the active controller last. A broker restarts only when no
    partition would drop under min.insync.replicas, a controller only when
    the quorum keeps a caught-up majority.

    A node that is not ready is asked, through its agent over mTLS, whether
    it is recovering its logs. Then it is never restarted: the roller retries
    with back-off and fails with a message naming the logs and segments left.

    Examples:

      sparklink kafka roll --dry-run -c log.cleaner.threads=2  (show the plan)

      sparklink kafka roll -c log.cleaner.threads=2  (dynamic: no restart)

      sparklink kafka roll -c queued.max.requests=600  (read-only: each broker once)

      sparklink kafka roll --manual --node 2  (restart broker 2 safely)

      sparklink kafka roll --manual --command-config admin.properties
    """
    import logging

    from sparklink.roller.executor import RollEvent
    from sparklink.roller.local import local_roller
    from sparklink.roller.model import RestartReason, RollerSettings, RollFailedError

    path = state_dir or default_state_dir()
    cluster = _started_cluster(path)
    client = kafka_access.client_settings(command_config, None, cluster) if command_config else None
    known = {n.node_id for n in cluster.nodes}
    unknown = set(node or ()) - known
    if unknown:
        console.print(f"[red]No node {sorted(unknown)} in this cluster[/red] (nodes: {sorted(known)}).")
        raise typer.Exit(2)
    updates: dict[str, str] = {}
    for item in config or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            console.print(f"[red]--config {item!r} is not key=value[/red], e.g. --config log.cleaner.threads=2")
            raise typer.Exit(2)
        updates[key.strip()] = value.strip()
    targets = set(node) if node else ({n.node_id for n in cluster.brokers} if updates else known)
    if updates:
        _check_settings_known(cluster, updates, client)
    for node_id in sorted(targets) if updates else ():
        # A dry run changes the desired settings in memory only; a roll records them first, as the resource would.
        cluster.node_config.setdefault(str(node_id), {}).update(updates)
    if updates and not dry_run:
        cluster.save()

    def needs(ref: object) -> list[RestartReason]:
        return [RestartReason.MANUAL_ROLLING_UPDATE] if manual and getattr(ref, "node_id", None) in targets else []

    def show(event: RollEvent) -> None:
        colour = {"restart": "yellow", "reconfigure": "cyan", "ready": "green", "fail": "red"}.get(event.kind, "dim")
        console.print(f"[{colour}]{event.node}[/{colour}] {event.message}")

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    settings = RollerSettings(operation_timeout=operation_timeout)
    roller = local_roller(cluster, settings, progress=show, only=node, client=client)
    if dry_run:
        console.print(f"Plan for {path} (nothing is changed):")
        for step in roller.dry_run(needs):
            console.print(f"  {step.describe()}")
        return
    try:
        with console.status("rolling ..."):
            result = roller.roll(needs)
    except RollFailedError as exc:
        console.print(f"[red]Roll failed at {exc.node}:[/red] {exc}")
        console.print("Nothing was forced; run the same command again once the cause is gone.")
        raise typer.Exit(1) from None
    restarted = ", ".join(str(n) for n, _, _ in result.restarted) or "none"
    reconfigured = ", ".join(str(n) for n, _ in result.reconfigured) or "none"
    console.print(
        f"[green]Roll complete.[/green] Restarted: {restarted}. Reconfigured without restart: {reconfigured}."
    )


def _why(exc: Exception, client: KafkaClientSettings | None) -> str:
    """What a failed admin request means. The Admin API's own error is often a bare transport failure (the broker
    closed the connection after refusing the login); the preflight check reads librdkafka's reports and names the
    setting to fix - a wrong password, an untrusted certificate, a listener of another protocol."""
    if client is None:
        return str(exc)
    from sparklink.clients.errors import KafkaAccessError
    from sparklink.clients.preflight import verify

    try:
        verify(client, 30)
    except KafkaAccessError as access:
        return str(access)
    return str(exc)


def _check_settings_known(cluster: KafkaCluster, updates: dict[str, str], client: KafkaClientSettings | None) -> None:
    """Refuse a setting no broker knows (a typo would otherwise restart every broker for nothing)."""
    from sparklink.roller.admin import AdminError
    from sparklink.roller.local import cluster_admin

    running = [b for b in cluster.brokers if cluster.node_alive(b.node_id)]
    if not running:
        return  # nothing to ask; the roll itself reports the brokers that are down
    admin = cluster_admin(cluster, 30, client)
    try:
        known = admin.broker_config(running[0].node_id)
    except AdminError as exc:
        console.print(f"[red]Cannot read the brokers' settings to check --config:[/red] {_why(exc, client)}")
        raise typer.Exit(1) from None
    unknown = sorted(set(updates) - set(known))
    if unknown:
        console.print(
            f"[red]Unknown broker setting(s): {', '.join(unknown)}.[/red] Nothing was changed. "
            "See https://kafka.apache.org/documentation/#brokerconfigs for the names."
        )
        raise typer.Exit(2)


def _started_cluster(path: Path) -> KafkaCluster:
    """The cluster `sparklink kafka start` left in `path`, or exit 1 saying how to start one."""
    try:
        return KafkaCluster.load(path)
    except FileNotFoundError:
        console.print(f"No cluster in {path}. Start one with: sparklink kafka start")
        raise typer.Exit(1) from None
