"""The FastAPI application: routers, the error mapper, and tolerance for what real clients send.

The app is served before the worker has loaded its stores, so `/health` can say "starting"; the
runtime hands it the herder with `attach` once the herder exists.

Layers, outermost first (each answers or passes on): the Host check (loopback listeners only), CORS,
basic authentication, /admin on its own listener, JSON only, the body limit; then the trailing
slash, the fast reads, the kept body and the start-up gate. The security layers sit outside the fast
reads, so no answer, however short its path, skips them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sparklink import __version__
from sparklink.worker.herder.model import Herder
from sparklink.worker.rest import (
    connectors,
    console,
    deps,
    errors,
    fast_reads,
    forward,
    loggers,
    metrics,
    openapi,
    plugins,
    responses,
    root,
)
from sparklink.worker.rest.body import BodyLimit
from sparklink.worker.rest.security import basic_auth, guards, settings

log = logging.getLogger(__name__)


class StripTrailingSlash:
    """`/connectors/x/` routes like `/connectors/x`, as Jersey does, without a redirect."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            if len(path) > 1 and path.endswith("/"):
                scope = {**scope, "path": path.rstrip("/") or "/"}
        await self.app(scope, receive, send)


class RefuseWritesWhileStarting:
    """Until the stores are loaded, changes get 503 with Connect's error body (reads and /health pass)."""

    def __init__(self, app: ASGIApp, herder: Callable[[], Herder | None]) -> None:
        self.app = app
        self.herder = herder

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in ("GET", "HEAD"):
            herder = self.herder()
            if herder is None or not herder.ready:
                await responses.error_body(503, deps.STARTING)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(herder: Herder | None = None, security: settings.RestSecurity | None = None) -> FastAPI:
    """The app; `security` (None: no listeners known, as in unit tests) adds the guards it configures."""
    app = FastAPI(title="sparklink Connect REST API", version=__version__, redirect_slashes=False)
    app.state.herder = herder
    app.state.peer_tls = security.peer_tls if security is not None else settings.PeerTls({})
    errors.install(app)
    openapi.install(app)
    app.include_router(root.router)
    app.include_router(connectors.router)
    app.include_router(plugins.router)
    app.include_router(loggers.router)
    app.include_router(metrics.router)
    app.include_router(console.router)
    app.add_middleware(RefuseWritesWhileStarting, herder=lambda: app.state.herder)
    app.add_middleware(forward.KeepBody)
    app.add_middleware(fast_reads.FastReads, herder=lambda: app.state.herder)
    app.add_middleware(StripTrailingSlash)
    # Added last, so outermost.
    app.add_middleware(BodyLimit)
    app.add_middleware(guards.JsonOnly)
    if security is not None:
        app.add_middleware(guards.ListenerRoutes, admin_listeners=security.admin_listeners)
        if security.authenticator is not None:
            # The console's pages ask a browser for credentials (the API answers as Connect does, without).
            app.add_middleware(
                basic_auth.RequireBasicAuth, authenticator=security.authenticator, challenge=console.is_console
            )
        if security.cors is not None:
            # Before authentication: a browser's preflight carries no credentials.
            app.add_middleware(
                CORSMiddleware,
                allow_origins=security.cors.origins,
                allow_origin_regex=security.cors.origin_regex,
                allow_methods=security.cors.methods,
                allow_headers=settings.CORS_HEADERS,
                allow_credentials=True,
                max_age=settings.CORS_MAX_AGE,
            )
        if security.loopback_hosts is not None:
            app.add_middleware(guards.LoopbackHosts, extra=security.loopback_hosts)
    return app


RESOLVE_PATH = "/.sparklink-resolve-routes"
"""A path no route has: the request `resolve_routes` makes visits every router and matches none."""


async def resolve_routes(app: FastAPI) -> None:
    """Have FastAPI resolve its included routers now rather than on the first request that reaches them:
    that request (a worker's first POST /connectors, say) paid 34 ms for it, later ones 0.1 ms
    (/work/dbg/route_probe.py). The request goes to the router itself, past the middlewares (no metrics,
    no log line), and ends in the router's 404. Best effort: whatever else it raises is logged and the
    server starts as it would have."""

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(_message: Message) -> None:
        return None

    scope: Scope = {
        "type": "http",
        "method": "GET",
        "path": RESOLVE_PATH,
        "root_path": "",
        "query_string": b"",
        "headers": [],
    }
    try:
        await app.router(scope, receive, send)
    except HTTPException:
        pass  # the 404 it was meant to end in
    except Exception as exc:  # an optimisation only: never keep the server from serving over it
        log.info("FastAPI's routes are resolved on the first request instead (%s)", exc)


def attach(app: FastAPI, herder: Herder) -> None:
    """Serve this herder from now on (its `ready` still gates changes)."""
    app.state.herder = herder
