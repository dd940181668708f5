"""Forwarding a request to the worker of the group that can handle it (Connect's HerderRequestHandler).

A herder that is not the leader (or does not own a connector) raises `RequestTargetError` with the URL
of the worker that can; this module sends the same request there, with the hidden `forward` query
parameter counting hops: absent on the user's request, `true` on the first hop, `false` on the second.
A request that would need a third hop, or names no target, gets Connect's 409 texts. The request body
is kept by `KeepBody` because the route has already read it when the herder raises. As Connect's
RestClient does, the request goes to the target's advertised URL (https when it advertises https, with
this worker's client certificate and trust store: `PeerTls`) and carries the caller's `Authorization`.
Caller: the exception mapper (errors.py).
"""

from __future__ import annotations

import logging

import httpx
from fastapi import Request
from fastapi.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from sparklink.api.errors import RequestTargetError
from sparklink.worker.rest.body import replaying
from sparklink.worker.rest.responses import error_body
from sparklink.worker.rest.security.exceptions import RestSecurityError
from sparklink.worker.rest.security.settings import PeerTls

log = logging.getLogger(__name__)

NO_LEADER = "Cannot complete request momentarily due to no known leader URL, likely because a rebalance was underway."
CONFLICT = "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"
STALE = (
    "Cannot complete request momentarily due to stale configuration (typically caused by a concurrent config change)"
)
BODY_KEY = "sparklink.body"
TIMEOUT = 90.0  # Connect's rest request timeout


class KeepBody:
    """Reads a write request's body once and replays it, keeping a copy for a forward."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        await self.app({**scope, BODY_KEY: body}, replaying(body, receive), send)


async def forward(request: Request, exc: RequestTargetError) -> Response:
    hop = request.query_params.get("forward")
    if hop is not None and hop.lower() == "false":
        log.error("%s %s needs a third hop between workers; refusing", request.method, request.url.path)
        return error_body(409, CONFLICT)
    if not exc.forward_url:
        return error_body(409, NO_LEADER)
    kept_params = [(k, v) for k, v in request.query_params.multi_items() if k != "forward"]
    params = httpx.QueryParams([*kept_params, ("forward", "true" if hop is None else "false")])
    url = f"{exc.forward_url.rstrip('/')}{request.url.path}"
    body: bytes = request.scope.get(BODY_KEY, b"")
    # RestClient's headers: JSON both ways, and the caller's credentials (the only header of theirs it sends on).
    headers = {"Accept": "application/json"}
    if body:
        headers["Content-Type"] = request.headers.get("content-type", "application/json")
    authorization = request.headers.get("authorization")
    if authorization is not None:
        headers["Authorization"] = authorization
    log.debug("forwarding %s %s to %s", request.method, request.url.path, exc.forward_url)
    try:
        verify = peer_tls(request).context() if url.startswith("https://") else True
    except RestSecurityError as error:
        return error_body(500, f"Error trying to forward REST request: {error}")
    async with httpx.AsyncClient(timeout=TIMEOUT, verify=verify) as client:
        try:
            answer = await client.request(request.method, url, params=params, content=body, headers=headers)
        except httpx.HTTPError as error:
            return error_body(500, f"IO Error trying to forward REST request: {error}")
    kept = {k: v for k, v in answer.headers.items() if k.lower() in ("content-type", "location")}
    return Response(answer.content, status_code=answer.status_code, headers=kept)


def peer_tls(request: Request) -> PeerTls:
    """The app's client side of https between workers (a default one where the app has no security settings)."""
    found = getattr(request.app.state, "peer_tls", None)
    return found if isinstance(found, PeerTls) else PeerTls({})
