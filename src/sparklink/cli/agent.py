"""`sparklink agent`: the broker-state agent beside one broker (the platform's KafkaCluster starts one per broker)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Annotated

import typer

from sparklink.agent.server import AgentSettings, serve


def run_agent(
    jolokia_port: Annotated[
        int, typer.Option(help="Port of the Jolokia JVM agent inside the broker, listening on 127.0.0.1.")
    ],
    external_port: Annotated[
        int, typer.Option(help="HTTPS port for the operator and roller (mutual TLS, TLS 1.3 only).")
    ] = 8443,
    probe_port: Annotated[int, typer.Option(help="Plain-HTTP port on 127.0.0.1 for local readiness probes.")] = 8080,
    cert: Annotated[Path, typer.Option(help="This node's server certificate (PEM), signed by the cluster CA.")] = Path(
        "node.crt"
    ),
    key: Annotated[Path, typer.Option(help="The private key of --cert (PEM).")] = Path("node.key"),
    ca_cert: Annotated[
        Path, typer.Option(help="The cluster CA certificate; clients must present a certificate it signed.")
    ] = Path("ca.crt"),
    node_name: Annotated[str, typer.Option(help="Name used in logs, e.g. node-1.")] = "broker",
    host: Annotated[str, typer.Option(help="Address of the HTTPS port.")] = "0.0.0.0",
) -> None:
    """Serve one broker's state to the roller (mTLS) and to local probes.

    GET /v1/broker-state answers over HTTPS with mutual TLS (TLS 1.3, a
    client certificate from the cluster CA); /v1/ready and the same state
    answer on a plain-HTTP port on 127.0.0.1. A broker in log recovery
    reports state 2: the roller never restarts it.

    The broker JVM must run the Jolokia agent on loopback:
    -javaagent:jolokia-agent-jvm-javaagent.jar=host=127.0.0.1,port=8778
    (`sparklink kafka start --agents` sets all of this up). By hand:

      sparklink agent --jolokia-port 8778 --cert tls/node-1.crt
      --key tls/node-1.key --ca-cert tls/ca.crt

    Check it: curl -i http://127.0.0.1:8080/v1/ready  (204 when running)
    """
    for path in (cert, key, ca_cert):
        if not path.is_file():
            typer.echo(f"{path} does not exist: pass --cert, --key and --ca-cert (PEM files).", err=True)
            raise typer.Exit(2)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = AgentSettings(node_name, jolokia_port, external_port, probe_port, cert, key, ca_cert, external_host=host)
    asyncio.run(serve(settings))
