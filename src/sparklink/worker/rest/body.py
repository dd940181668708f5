"""Request bodies and query flags as real clients (and fuzzers) send them, checked before any work is done.

FastAPI's own parsing would answer malformed JSON with 422; Connect clients expect the Connect error
body, and a clear 400 is better than Connect's 500. Beyond well-formed JSON, a body must be at most
1 MiB (Kafka would refuse a larger config record), nest at most 64 levels, and hold no NaN, Infinity
or unpaired surrogates (they cannot be stored as JSON or UTF-8 and would poison later reads).

The size limit is `BodyLimit`'s, in front of the app: it refuses a declared Content-Length over the
limit before reading a byte, and counts a streamed body as it arrives, so no request holds more than
the limit in memory however much it sends.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sparklink.api.errors import BadRequestError
from sparklink.worker.rest.responses import error_body

MAX_BODY_BYTES = 1024 * 1024
MAX_DEPTH = 64


def too_large(size: int | None) -> str:
    amount = f"of {size} bytes" if size is not None else f"of more than {MAX_BODY_BYTES} bytes"
    return (
        f"Request body {amount} is over the limit of {MAX_BODY_BYTES} bytes (1 MiB); "
        "connector configs and offsets are stored as Kafka records, which must stay small"
    )


def replaying(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the app `body`, already read, as one message, then passes on to `receive`
    (for a disconnect). For the middlewares that read a body before the app does: BodyLimit, KeepBody."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class BodyLimit:
    """Reads a request body up to the limit and replays it to the app; past the limit, 413 and a closed connection.

    The body is read before the app sees the request, so the app never meets a partial one; the
    connection is closed after a 413 rather than drained, so the server stops reading at the limit.
    """

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        declared = headers.get("content-length")
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        if declared is None and not chunked:  # no body (GET, DELETE, ...): nothing to count
            await self.app(scope, receive, send)
            return
        if declared is not None and declared.strip().isdigit() and int(declared) > self.limit:
            await self._refuse(int(declared), scope, receive, send)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away: nobody to answer
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._refuse(None if chunked else size, scope, receive, send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        await self.app(scope, replaying(b"".join(chunks), receive), send)

    @staticmethod
    async def _refuse(size: int | None, scope: Scope, receive: Receive, send: Send) -> None:
        # `Connection: close` makes uvicorn close the connection after the answer instead of reading the
        # rest of the body to keep it alive.
        await error_body(413, too_large(size), {"Connection": "close"})(scope, receive, send)


async def json_body(request: Request, required: bool = True) -> Any:
    raw = await request.body()  # at most MAX_BODY_BYTES: BodyLimit stands in front of every route
    if not raw.strip():
        if required:
            raise BadRequestError("Request body is empty; send a JSON document")
        return None
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise BadRequestError(f"JSON in request body is nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise BadRequestError(f"Malformed JSON in request body: {exc}") from None
    check_json(value)
    return value


def _no_constant(name: str) -> object:
    raise BadRequestError(f"Malformed JSON in request body: {name} is not a JSON number")


def check_json(value: object) -> None:
    """Depth and text checks over a parsed document, without recursion."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise BadRequestError(f"JSON in request body is nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, str):
            check_text(item, "request body")
        elif isinstance(item, dict):
            for key, child in item.items():
                check_text(key, "request body")
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)


def check_text(text: str, where: str) -> None:
    """Refuse unpaired surrogates (e.g. a JSON "\\ud800"): they are not valid UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequestError(
            f"The {where} contains an unpaired UTF-16 surrogate ({text.encode('utf-8', 'backslashreplace')!r}); "
            "send valid Unicode text"
        ) from None


def as_config(value: Any, what: str = "connector configuration") -> dict[str, str | None]:
    """A flat JSON object of string values (numbers and booleans are stringified as Connect does)."""
    if not isinstance(value, dict):
        raise BadRequestError(f"The {what} must be a JSON object of string keys and values")
    out: dict[str, str | None] = {}
    for key, item in value.items():
        if item is None:
            out[key] = None
        elif isinstance(item, bool):
            out[key] = str(item).lower()
        elif isinstance(item, str | int | float):
            out[key] = str(item)
        else:
            raise BadRequestError(f"The value of '{key}' in the {what} must be a string, not {type(item).__name__}")
    return out


def parse_bool(name: str, value: str | None, default: bool = False) -> bool:
    """A boolean query parameter: `true` or `false` in any case; anything else is a 400 naming it."""
    if value is None:
        return default
    if value.lower() not in ("true", "false"):
        raise BadRequestError(f"Query parameter {name} must be true or false, not {value!r}")
    return value.lower() == "true"
