"""ASGI guards in front of the REST app: loopback Host names, JSON bodies only, /admin on its own listener.

- `LoopbackHosts`: while every listener is on loopback, a request naming another host is refused, so a
  web page on a DNS name that an attacker points at 127.0.0.1 (DNS rebinding) cannot drive the worker.
- `JsonOnly`: a request with a body must say `Content-Type: application/json`, and one without a body may
  name no other type, as Connect's Jersey resources (@Consumes(APPLICATION_JSON)) require; anything else
  is Jersey's 415 (Connect 4.3.1 answers a GET or an empty PUT with `Content-Type: text/plain` so too).
  This also stops a cross-site `text/plain` form or fetch, which a browser sends without asking first
  (no CORS preflight).
- `ListenerRoutes`: with `admin.listeners` set, `/admin` is served only there and nothing else is; set
  empty, `/admin` is served nowhere (Connect's RestServer).
Each answers with Connect's error body. Caller: app.create_app, outside every other layer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from sparklink.worker import listeners
from sparklink.worker.rest.responses import error_body

LISTENER_KEY = "sparklink.listener"  # the scope key naming the Listener a request arrived on
HOST = re.compile(r"^(\[[^\]]*\]|[^:\[\]]*)(?::\d*)?$")
UNSUPPORTED = "HTTP 415 Unsupported Media Type"  # what Jersey's NotSupportedException says, through Connect's mapper
NOT_FOUND = "HTTP 404 Not Found"


def has_body(headers: Headers) -> bool:
    length = headers.get("content-length")
    if length is not None:
        return length.strip() not in ("", "0")
    return "chunked" in headers.get("transfer-encoding", "").lower()


class LoopbackHosts:
    """Refuses a Host header that is not a loopback name or address (or one of `extra`), with 400 saying why."""

    def __init__(self, app: ASGIApp, extra: Iterable[str] = ()) -> None:
        self.app = app
        self.extra = frozenset(h.lower() for h in extra)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = Headers(scope=scope).get("host")
            if host is not None and not self.allowed(host):
                message = (
                    f"Host {host!r} is not a loopback name: this worker listens on loopback only and answers "
                    "requests for localhost, 127.0.0.1 or [::1], so that a web page cannot reach it through a "
                    "DNS name pointed at this machine (DNS rebinding). Use one of those names, or set listeners "
                    "to an address other machines reach"
                )
                await error_body(400, message)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def allowed(self, host: str) -> bool:
        match = HOST.match(host.strip().lower())
        if match is None:
            return False
        name = match.group(1)
        return listeners.is_loopback(name) or name in self.extra or name.strip("[]") in self.extra


class JsonOnly:
    """A Content-Type other than application/json, or a body without one, gets Jersey's 415."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            content_type = headers.get("content-type")
            if (content_type is not None or has_body(headers)) and not is_json(content_type):
                await error_body(415, UNSUPPORTED)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def is_json(content_type: str | None) -> bool:
    """`application/json`, with or without parameters (charset), in any case."""
    if not content_type:
        return False
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


class ListenerRoutes:
    """Serves `/admin` only where `admin.listeners` puts it; None keeps it on every listener."""

    def __init__(self, app: ASGIApp, admin_listeners: tuple[listeners.Listener, ...] | None) -> None:
        self.app = app
        self.admin_listeners = admin_listeners

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.admin_listeners is not None:
            path: str = scope["path"]
            is_admin_path = path == "/admin" or path.startswith("/admin/")
            listener = scope.get(LISTENER_KEY)
            on_admin = isinstance(listener, listeners.Listener) and listener.admin
            if is_admin_path != on_admin:
                await error_body(404, NOT_FOUND)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class OnListener:
    """Tags each request with the listener it arrived on (one per uvicorn server; the app is shared)."""

    def __init__(self, app: ASGIApp, listener: listeners.Listener) -> None:
        self.app = app
        self.listener = listener

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app({**scope, LISTENER_KEY: self.listener}, receive, send)
