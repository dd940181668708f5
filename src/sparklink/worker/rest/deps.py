"""Dependency aliases for routes: the herder of the running app (503 until the worker has one)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from sparklink.api.errors import ConnectError
from sparklink.worker.herder.model import Herder

STARTING = "Worker is still starting up; retry in a few seconds (GET /health)"


class StartingError(ConnectError):
    status = 503


def current_herder(request: Request) -> Herder | None:
    herder: Herder | None = request.app.state.herder
    return herder


async def get_herder(request: Request) -> Herder:
    # async although it awaits nothing: FastAPI runs a plain `def` dependency on its thread pool,
    # one thread hop per request (and a GIL hand-off with Spark's callbacks) for an attribute read.
    herder = current_herder(request)
    if herder is None:
        raise StartingError(STARTING)
    return herder


HerderDep = Annotated[Herder, Depends(get_herder)]
