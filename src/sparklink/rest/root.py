"""`GET /` (server info) and `GET /health` (KIP-1017)."""

from __future__ import annotations

import functools
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from sparklink import __version__
from sparklink.rest.deps import HerderDep

router = APIRouter(tags=["root"])


@router.get("/")
async def server_info(herder: HerderDep) -> dict[str, Any]:
    return {"version": __version__, "commit": _commit(), "kafka_cluster_id": herder.cluster_id}


@router.get("/health")
async def health(herder: HerderDep) -> JSONResponse:
    if herder.ready:
        body = {"status": "healthy", "message": "Worker has completed startup and is ready to handle requests."}
        return JSONResponse(body)
    return JSONResponse({"status": "starting", "message": "Worker is still starting up."}, status_code=503)


@functools.cache
def _commit() -> str:
    import subprocess
    from pathlib import Path

    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=5
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"
