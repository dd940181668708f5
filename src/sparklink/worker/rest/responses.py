"""Connect's error body, as the exception mapper, the forwarder and the start-up gate send it.

This module imports neither of its callers, so the mapper and the forwarder (which call each other's
parts) share it without an import circle.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import JSONResponse


def error_body(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """Connect's ErrorMessage: {"error_code": status, "message": message}."""
    return JSONResponse(status_code=status, content={"error_code": status, "message": message}, headers=headers)
