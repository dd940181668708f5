"""The one exception -> HTTP mapper: every error leaves as Connect's {"error_code", "message"} body.

A request another worker of the group must handle is sent there (forward.py). Caller: rest/app.py.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from sparklink.api.errors import ConnectError, RebalanceNeededError, RequestTargetError
from sparklink.worker.rest import forward
from sparklink.worker.rest.responses import error_body

log = logging.getLogger(__name__)

REASONS = {404: "Not Found", 405: "Method Not Allowed", 415: "Unsupported Media Type"}


def install(app: FastAPI) -> None:
    @app.exception_handler(RequestTargetError)
    async def other_worker(request: Request, exc: RequestTargetError) -> Response:
        return await forward.forward(request, exc)

    @app.exception_handler(RebalanceNeededError)
    async def rebalance_needed(_request: Request, exc: RebalanceNeededError) -> JSONResponse:
        return error_body(409, forward.STALE)

    @app.exception_handler(ConnectError)
    async def connect_error(_request: Request, exc: ConnectError) -> JSONResponse:
        return error_body(exc.status, exc.message)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ())[1:]) or 'body'}: {e.get('msg')}" for e in exc.errors()
        )
        return error_body(400, f"Invalid request: {problems}")

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, exc: HTTPException) -> JSONResponse:
        reason = REASONS.get(exc.status_code, str(exc.detail))
        # Starlette puts the allowed methods of a 405 into `Allow`, as HTTP requires; keep them.
        return error_body(exc.status_code, f"HTTP {exc.status_code} {reason}", exc.headers)

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("request failed")
        return error_body(500, str(exc) or type(exc).__name__)
