"""`GET /` (server info) and `GET /health` (KIP-1017)."""

from __future__ import annotations

import functools

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from sparklink import __version__
from sparklink.worker.herder.model import ServerInfo, WorkerStatus
from sparklink.worker.rest.deps import HerderDep, current_herder
from sparklink.worker.rest.responses import answer

router = APIRouter(tags=["root"])


@router.get("/", response_model=ServerInfo)
async def server_info(herder: HerderDep) -> ServerInfo:
    return ServerInfo(version=__version__, commit=_commit(), kafka_cluster_id=herder.cluster_id)


@router.get("/health", response_model=WorkerStatus, responses={503: {"model": WorkerStatus}})
async def health(request: Request) -> JSONResponse:
    herder = current_herder(request)
    if herder is not None and herder.ready:
        body = WorkerStatus(status="healthy", message="Worker has completed startup and is ready to handle requests.")
        return answer(body)
    starting = WorkerStatus(status="starting", message="Worker is still starting up.")
    return answer(starting, 503)


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
