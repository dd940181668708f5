"""Request bodies and query flags as real clients (and fuzzers) send them, checked before any work is done.

FastAPI's own parsing would answer malformed JSON with 422; Connect clients expect the Connect error
body, and a clear 400 is better than Connect's 500. Beyond well-formed JSON, a body must be at most
1 MiB (Kafka would refuse a larger config record), nest at most 64 levels, and hold no NaN, Infinity
or unpaired surrogates (they cannot be stored as JSON or UTF-8 and would poison later reads).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request

from sparklink.api.errors import BadRequestError, ConnectError

MAX_BODY_BYTES = 1024 * 1024
MAX_DEPTH = 64


class PayloadTooLargeError(ConnectError):
    status = 413


async def json_body(request: Request, required: bool = True) -> Any:
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise PayloadTooLargeError(
            f"Request body of {len(raw)} bytes is over the limit of {MAX_BODY_BYTES} bytes (1 MiB); "
            "connector configs and offsets are stored as Kafka records, which must stay small"
        )
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
