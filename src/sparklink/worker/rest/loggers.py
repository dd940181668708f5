"""`/admin/loggers`: read and change log levels of the worker's Python loggers at run time.

Levels use log4j's names, as Connect clients send them; TRACE maps to DEBUG and FATAL to CRITICAL.
"""

from __future__ import annotations

import logging
import time
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse

from sparklink.api.errors import BadRequestError, NotFoundError
from sparklink.worker.rest import openapi
from sparklink.worker.rest.body import json_body

router = APIRouter(prefix="/admin/loggers", tags=["loggers"], responses=openapi.ERRORS)

TO_PYTHON = {
    "OFF": logging.CRITICAL + 10,
    "FATAL": logging.CRITICAL,
    "ERROR": logging.ERROR,
    "WARN": logging.WARNING,
    "INFO": logging.INFO,
    "DEBUG": logging.DEBUG,
    "TRACE": logging.DEBUG,
    "ALL": logging.NOTSET,
}
_modified: dict[str, int] = {}
SCOPES = {"enum": ["worker", "cluster"]}


def _level_name(level: int) -> str:
    for name, value in TO_PYTHON.items():
        if value == level and name not in ("TRACE", "ALL"):
            return name
    return logging.getLevelName(level)


def _entry(name: str) -> dict[str, Any]:
    logger = logging.getLogger(None if name == "root" else name)
    return {"level": _level_name(logger.getEffectiveLevel()), "last_modified": _modified.get(name)}


@router.get("")
def all_loggers() -> dict[str, dict[str, Any]]:
    names = [
        "root",
        *sorted(
            n
            for n, lg in logging.root.manager.loggerDict.items()
            if isinstance(lg, logging.Logger) and lg.level != logging.NOTSET
        ),
    ]
    return {n: _entry(n) for n in names}


@router.get("/{name}")
def get_logger(name: str) -> dict[str, Any]:
    if name != "root" and name not in logging.root.manager.loggerDict:
        raise NotFoundError(f"Logger {name} not found.")
    return _entry(name)


@router.put("/{name}", response_model=list[str], openapi_extra=openapi.body(openapi.LoggerLevelRequest))
async def set_level(
    name: str,
    request: Request,
    scope: Annotated[
        str | None, Query(description="worker (default) or cluster", json_schema_extra={"enum": ["worker", "cluster"]})
    ] = None,
) -> Response:
    body = await json_body(request, required=False)
    level = body.get("level") if isinstance(body, dict) else None
    if not level:
        raise BadRequestError("Desired 'level' parameter was not specified in request.")
    python_level = TO_PYTHON.get(str(level).upper())
    if python_level is None:
        raise NotFoundError(f"invalid log level '{level}'.")
    scope = (scope or "worker").lower()
    prefix = "" if name == "root" else name
    namespace = [name, *sorted(n for n in logging.root.manager.loggerDict if prefix and n.startswith(prefix + "."))]
    before = {n: _entry(n)["level"] for n in namespace}
    for logger_name in namespace:
        logging.getLogger(None if logger_name == "root" else logger_name).setLevel(python_level)
    # Connect (Loggers#setLevel) answers with the loggers whose level changed, sorted; only they
    # get a new last_modified.
    now = int(time.time() * 1000)
    changed = sorted(n for n in namespace if _entry(n)["level"] != before[n])
    for logger_name in changed:
        _modified[logger_name] = now
    if scope == "cluster":
        return Response(status_code=204)
    return JSONResponse(changed)
