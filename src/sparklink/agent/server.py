"""Runs the agent: one app on an external HTTPS port with mutual TLS and on a plain-HTTP loopback port.

Caller: `sparklink agent`. The external port speaks TLS 1.3 only and requires a client certificate that the
cluster CA signed (Strimzi's agent: `setNeedClientAuth(true)` on 8443); the loopback port is for probes on
the same host (Strimzi's `localhost:8080`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from sparklink.agent.app import create_app
from sparklink.agent.jolokia import JolokiaReader

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AgentSettings:
    node_name: str
    jolokia_port: int
    external_port: int
    probe_port: int
    cert: Path
    key: Path
    ca_cert: Path
    external_host: str = "0.0.0.0"  # the operator reaches agents from other hosts (mTLS only)
    probe_host: str = "127.0.0.1"


async def serve(settings: AgentSettings) -> None:
    reader = JolokiaReader(settings.jolokia_port)
    app = create_app(reader, settings.node_name)
    external = uvicorn.Config(
        app,
        host=settings.external_host,
        port=settings.external_port,
        ssl_certfile=str(settings.cert),
        ssl_keyfile=str(settings.key),
        ssl_ca_certs=str(settings.ca_cert),
        ssl_cert_reqs=ssl.CERT_REQUIRED,
        log_level="warning",
        access_log=False,
    )
    external.load()
    # uvicorn has no option for the lowest TLS version; its context is built by load(), so raise it here.
    assert external.ssl is not None
    external.ssl.minimum_version = ssl.TLSVersion.TLSv1_3
    probe = uvicorn.Config(
        app, host=settings.probe_host, port=settings.probe_port, log_level="warning", access_log=False
    )
    servers = [_Server(external), _Server(probe)]
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, _stop, servers)
    log.info(
        "agent for %s: mTLS on %s:%d, probes on %s:%d, broker metrics from Jolokia on 127.0.0.1:%d",
        settings.node_name,
        settings.external_host,
        settings.external_port,
        settings.probe_host,
        settings.probe_port,
        settings.jolokia_port,
    )
    try:
        await asyncio.gather(*(s.serve() for s in servers))
    finally:
        await reader.aclose()


class _Server(uvicorn.Server):
    # Two servers share one loop; serve() installs the signal handlers for both instead of each its own.
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _stop(servers: list[_Server]) -> None:
    for server in servers:
        server.should_exit = True
