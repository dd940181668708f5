"""The Connect REST API served by uvicorn: one server per listener, all on one event loop in one thread.

Each listener of `listeners` and `admin.listeners` gets its own socket (bound here, so port 0 becomes a
free port before anyone advertises it) and its own uvicorn server, with the listener's TLS context for
https; every server shares the one app, which learns from `guards.OnListener` where a request came in.
One thread and one event loop serve them all: the REST server shares the GIL with Spark's callbacks,
so its own cost is what it can save. Caller: assembly.start_worker.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import threading
import time
from typing import Any

import uvicorn
from fastapi import FastAPI

from sparklink.worker.config import WorkerConfig, WorkerConfigError
from sparklink.worker.listeners import Listener
from sparklink.worker.rest import app as rest_app
from sparklink.worker.rest.security import guards
from sparklink.worker.rest.security.settings import RestSecurity

log = logging.getLogger(__name__)


IDLE_CLOSE_S = 0.5
"""How long a stopping server may close on its own before idle connections are cut (about 0.1 s when no
client holds one open)."""

STOP_WAIT_S = 15.0
"""The longest a stop waits for requests in flight."""


class ListenError(WorkerConfigError):
    """A listener's address cannot be bound (in use, not local, not permitted); the message names it."""


class RestServer:
    """Binds every listener at construction; `start()` serves them, `stop()` closes them."""

    def __init__(self, security: RestSecurity) -> None:
        self.security = security
        self.app: FastAPI = rest_app.create_app(security=security)
        self._sockets: list[socket.socket] = []
        try:
            for listener in security.all_listeners:
                self._sockets.append(_bind(listener))
        except BaseException:
            self.close()
            raise
        # The listeners as bound: port 0 replaced by the port the system chose.
        self.listeners = [
            listener.with_port(sock.getsockname()[1])
            for listener, sock in zip(security.all_listeners, self._sockets, strict=True)
        ]
        self._servers = [uvicorn.Server(self._config(listener)) for listener in self.listeners]
        self._thread = threading.Thread(target=self._run, name="rest", daemon=True)

    def _config(self, listener: Listener) -> uvicorn.Config:
        listener_tls = self.security.tls_for(listener)
        context = listener_tls.context if listener_tls is not None else None

        def tls_context(_config: uvicorn.Config, _default: Any) -> ssl.SSLContext:
            assert context is not None
            return context

        # uvloop and httptools (C) instead of asyncio's loop and h11 (pure Python). No proxy headers:
        # Connect trusts no X-Forwarded-* either.
        return uvicorn.Config(
            guards.OnListener(self.app, listener),
            loop="uvloop",
            http="httptools",
            log_level="warning",
            access_log=False,
            lifespan="off",
            proxy_headers=False,
            ssl_context_factory=tls_context if context is not None else None,
        )

    @property
    def urls(self) -> list[str]:
        return [listener.uri for listener in self.listeners]

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def bound(self, config: WorkerConfig) -> WorkerConfig:
        """`config` with the ports actually bound, so the worker id and advertised URL name them."""
        main = [listener for listener in self.listeners if not listener.admin]
        if config.listeners is None:
            return config.with_overrides(rest_port=main[0].port)
        updates = {"listeners": ",".join(listener.uri for listener in main)}
        admin = [listener for listener in self.listeners if listener.admin]
        if admin:
            updates["admin_listeners"] = ",".join(listener.uri for listener in admin)
        return config.with_overrides(**updates)

    def start(self, timeout: float) -> None:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not all(server.started for server in self._servers):
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise ListenError(f"The REST server did not start on {', '.join(self.urls)}; see the log")
            time.sleep(0.02)
        log.info("REST server listening on %s", ", ".join(self.urls))

    def stop(self) -> None:
        """Stop serving: requests in flight may finish (for up to `STOP_WAIT_S`); idle connections are cut."""
        for server in self._servers:
            server.should_exit = True
        if self._thread.is_alive():  # a thread never started cannot be joined
            self._thread.join(timeout=IDLE_CLOSE_S)
        deadline = time.monotonic() + STOP_WAIT_S
        while self._thread.is_alive() and time.monotonic() < deadline:
            # uvicorn waits for every connection to close. A client's idle keep-alive connection over TLS
            # closes when the client answers the close (uvloop waits 30 s for that), and an idle pooled client
            # does not read, so a worker the operator talks to would wait out the whole STOP_WAIT_S. Once no
            # request is in flight, nothing left is worth waiting for.
            if not any(server.server_state.tasks for server in self._servers):
                for server in self._servers:
                    server.force_exit = True
            self._thread.join(timeout=0.05)
        self.close()

    def close(self) -> None:
        for sock in self._sockets:
            sock.close()

    def _run(self) -> None:
        loop_factory = self._servers[0].config.get_loop_factory()
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(self._serve())

    async def _serve(self) -> None:
        await rest_app.resolve_routes(self.app)
        await asyncio.gather(
            *(server.serve(sockets=[sock]) for server, sock in zip(self._servers, self._sockets, strict=True))
        )


def _bind(listener: Listener) -> socket.socket:
    """A listening socket for the listener; an empty host binds every interface (IPv6 and IPv4 when possible)."""
    try:
        if not listener.host:
            if socket.has_dualstack_ipv6():
                return socket.create_server(
                    ("", listener.port), family=socket.AF_INET6, dualstack_ipv6=True, backlog=2048
                )
            return socket.create_server(("0.0.0.0", listener.port), backlog=2048)
        family = socket.getaddrinfo(listener.host, listener.port, type=socket.SOCK_STREAM)[0][0]
        return socket.create_server((listener.host, listener.port), family=family, backlog=2048)
    except OSError as exc:
        raise ListenError(
            f"Cannot listen on {listener.uri}: {exc.strerror or exc}; free the port or change "
            f"{'admin.listeners' if listener.admin else 'listeners'}"
        ) from None
