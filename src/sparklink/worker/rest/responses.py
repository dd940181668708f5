"""The JSON answers REST sends by hand: a wire entity (or plain JSON) rendered, and Connect's error body.

The fast reads and the routes they shadow render through `answer`, so a read leaves as the same bytes
whichever path served it; it is Starlette's JSONResponse over the dumped model, with no response-model
validation pass, which keeps the polled reads cheap. The exception mapper, the forwarder and the
start-up gate answer through `error_body`. This module imports neither of its callers, so the mapper
and the forwarder (which call each other's parts) share it without an import circle.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import JSONResponse

from sparklink.worker.herder.model import Entity

Content = Entity | list[str] | dict[str, str]
"""What a route renders: a wire entity, or a list of names or a config map as the herder returns them."""


def answer(content: Content, status: int = 200, headers: Mapping[str, str] | None = None) -> JSONResponse:
    body = content.json_body() if isinstance(content, Entity) else content
    return JSONResponse(body, status_code=status, headers=headers)


def error_body(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """Connect's ErrorMessage: {"error_code": status, "message": message}."""
    return JSONResponse(status_code=status, content={"error_code": status, "message": message}, headers=headers)
