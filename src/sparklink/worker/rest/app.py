"""The FastAPI application: routers, the error mapper, and tolerance for what real clients send.

The app is served before the worker has loaded its stores, so `/health` can say "starting"; the
runtime hands it the herder with `attach` once the herder exists.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from sparklink import __version__
from sparklink.worker.herder.model import Herder
from sparklink.worker.rest import (
    connectors,
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


def create_app(herder: Herder | None = None) -> FastAPI:
    app = FastAPI(title="sparklink Connect REST API", version=__version__, redirect_slashes=False)
    app.state.herder = herder
    errors.install(app)
    openapi.install(app)
    app.include_router(root.router)
    app.include_router(connectors.router)
    app.include_router(plugins.router)
    app.include_router(loggers.router)
    app.include_router(metrics.router)
    app.add_middleware(RefuseWritesWhileStarting, herder=lambda: app.state.herder)
    app.add_middleware(forward.KeepBody)
    app.add_middleware(fast_reads.FastReads, herder=lambda: app.state.herder)
    app.add_middleware(StripTrailingSlash)
    return app


def attach(app: FastAPI, herder: Herder) -> None:
    """Serve this herder from now on (its `ready` still gates changes)."""
    app.state.herder = herder
