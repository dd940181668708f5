"""Dependency aliases for routes: the herder of the running app."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from sparklink.herder.herder import Herder


def get_herder(request: Request) -> Herder:
    herder: Herder = request.app.state.herder
    return herder


HerderDep = Annotated[Herder, Depends(get_herder)]
