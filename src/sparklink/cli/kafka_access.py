"""The security side of `sparklink kafka`: `--listener` and `--user` for `start`, the client properties files
it writes and prints (secrets hidden), and the client check behind `status --command-config`.
Caller: `cli.kafka`.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from sparklink.clients import preflight
from sparklink.clients.errors import ClientSettingsError, KafkaAccessError
from sparklink.clients.secrets import redact
from sparklink.clients.settings import KafkaClientSettings, read_properties
from sparklink.platform.kafka import KafkaCluster
from sparklink.platform.kafka_listeners import Authentication, Listener
from sparklink.platform.kafka_users import DEFAULT_USER

LISTENER_HELP = """A listener to serve instead of the single PLAINTEXT one; repeat for more. [NAME=]TYPE, TYPE one of:
plaintext (no TLS, no login);
ssl (TLS: clients trust the cluster CA);
mtls (mutual TLS: clients also present a certificate from the clients CA);
sasl-ssl:MECH[+MECH] (TLS and a SASL login);
sasl-plaintext:MECH[+MECH] (a SASL login without TLS; for test networks).
MECH: scram-sha-512, scram-sha-256, plain. Each listener gets a port on every broker; with any TLS or login the
brokers talk to each other over mutual TLS too. NAME (lower-case letters, digits) defaults to the type's.
Example: --listener ssl --listener mtls --listener sasl-ssl:scram-sha-512+plain"""

USER_HELP = """A user of the secured listeners, NAME or NAME=PASSWORD (repeat for more) \\[default: sparklink with a
random password]. Each gets SCRAM credentials, a PLAIN login and a client certificate from the clients CA."""

_DEFAULT_NAMES = {"plaintext": "plain", "ssl": "tls", "mtls": "mtls", "sasl-ssl": "saslssl", "sasl-plaintext": "sasl"}


def parse_listeners(specs: list[str]) -> list[Listener]:
    """`--listener` values as listeners, labelled with Strimzi-style ports 9092, 9093, ... in order."""
    out = []
    for index, spec in enumerate(specs):
        name, _, kind = spec.rpartition("=")
        kind, _, mechanisms = kind.lower().partition(":")
        if kind not in _DEFAULT_NAMES:
            raise typer.BadParameter(f"{spec!r}: the type must be one of {', '.join(_DEFAULT_NAMES)}")
        sasl = kind.startswith("sasl-")
        if sasl != bool(mechanisms):
            raise typer.BadParameter(
                f"{spec!r}: "
                + ("name the SASL mechanism(s), e.g. sasl-ssl:scram-sha-512" if sasl else "only sasl-* take :MECH")
            )
        names = ["tls"] if kind == "mtls" else mechanisms.split("+") if sasl else []
        try:
            auth = tuple(Authentication(m) for m in names)
            tls = kind in ("ssl", "mtls", "sasl-ssl")
            out.append(Listener(name or _DEFAULT_NAMES[kind], 9092 + index, tls, auth))
        except ValueError as exc:
            raise typer.BadParameter(f"{spec!r}: {exc}") from None
    return out


def parse_users(specs: list[str]) -> dict[str, str | None]:
    return {name: (password if sep else None) for name, sep, password in (s.partition("=") for s in specs)}


def print_client_files(console: Console, cluster: KafkaCluster) -> None:
    """Write each listener's client properties (0600) and show them, secrets as [hidden]."""
    if not cluster.secured:
        return
    users = cluster.access.users()
    user = DEFAULT_USER if DEFAULT_USER in users else next(iter(users))
    console.print(
        f"Client settings for user {escape(user)} (pass the file as a worker's properties or --command-config):"
    )
    for lst in cluster.listeners:
        path = cluster.access.write_client_properties(lst.name, user)
        console.print(f"  [bold]{lst.name}[/bold] ({lst.security_protocol}): {path}")
        for key, value in redact(read_properties(path)).items():
            console.print(f"    {key}={value}", markup=False, highlight=False)


def client_settings(
    command_config: Path | None, bootstrap: str | None, cluster: KafkaCluster | None
) -> KafkaClientSettings:
    """The client settings `--command-config` (and `--bootstrap-server`) describe; exit 2 when unusable."""
    try:
        props = read_properties(command_config) if command_config else {}
        default = cluster.bootstrap() if cluster is not None and not props.get("bootstrap.servers") else None
        return KafkaClientSettings.from_properties(props, bootstrap_servers=bootstrap or default)
    except OSError as exc:
        hint = "--command-config"
        raise typer.BadParameter(f"cannot read {command_config}: {exc.strerror or exc}", param_hint=hint) from None
    except ClientSettingsError as exc:
        raise typer.BadParameter(f"{command_config}: {exc}", param_hint="--command-config") from None


def check_client(console: Console, settings: KafkaClientSettings, timeout: float) -> bool:
    """One metadata request with `settings`; prints the brokers it sees or what to fix."""
    try:
        info = preflight.verify(settings, timeout)
    except KafkaAccessError as exc:
        console.print(f"[red]Client check failed:[/red] {escape(str(exc))}")
        return False
    except ClientSettingsError as exc:
        console.print(f"[red]Client settings cannot be used:[/red] {escape(str(exc))}")
        return False
    brokers = ", ".join(f"{node_id}={address}" for node_id, address in sorted(info.brokers.items()))
    console.print(
        f"[green]Client check passed[/green] ({escape(settings.describe())}): cluster {info.cluster_id}, "
        f"controller {info.controller_id}, brokers {brokers}"
    )
    return True
