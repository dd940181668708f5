"""Request bodies as real clients send them: possibly empty, possibly without a Content-Type.

FastAPI's own parsing would answer malformed JSON with 422; Connect clients expect the Connect error
body, and a clear 400 is better than Connect's 500.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request

from sparklink.api.errors import BadRequestError


async def json_body(request: Request, required: bool = True) -> Any:
    raw = await request.body()
    if not raw.strip():
        if required:
            raise BadRequestError("Request body is empty; send a JSON document")
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise BadRequestError(f"Malformed JSON in request body: {exc}") from None


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


def parse_bool(value: str | None, default: bool = False) -> bool:
    """Java's Boolean.valueOf: only a case-insensitive 'true' is true."""
    return default if value is None else value.strip().lower() == "true"
