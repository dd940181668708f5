"""`/connectors` routes: parse the request, make one herder call, render the herder's wire entity.

The four polled reads (the list, a connector, its status and its config) are also answered by
fast_reads.py without routing, with the same herder call and `responses.answer`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar
from urllib.parse import quote

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from sparklink.api.errors import BadRequestError, NotFoundError
from sparklink.api.states import TargetState
from sparklink.worker.herder.model import (
    ConnectorInfo,
    ConnectorOffset,
    ConnectorOffsets,
    ConnectorStateInfo,
    Message,
    TaskInfo,
    TaskState,
)
from sparklink.worker.request_signing import RequestSignature
from sparklink.worker.rest import openapi
from sparklink.worker.rest.body import as_config, json_body, parse_bool
from sparklink.worker.rest.deps import HerderDep
from sparklink.worker.rest.responses import answer

router = APIRouter(prefix="/connectors", tags=["connectors"], responses=openapi.ERRORS)

CREATE_FIELDS = {"name", "config", "initial_state"}
INITIAL_STATES = {"RUNNING": TargetState.STARTED, "PAUSED": TargetState.PAUSED, "STOPPED": TargetState.STOPPED}
T = TypeVar("T")


# Reads answer from the stores' in-memory views without blocking, so they run on the event loop
# rather than hopping to the thread pool (which competes with Spark's callbacks for the GIL).
@router.get("")
async def list_connectors(
    herder: HerderDep,
    expand: Annotated[
        list[str] | None, Query(description="status and/or info: add each connector's status and info")
    ] = None,
) -> Any:
    names = herder.connectors()
    if not expand:
        return names
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        entry: dict[str, Any] = {}
        try:
            if "status" in expand:
                entry["status"] = herder.connector_status(name).json_body()
            if "info" in expand:
                entry["info"] = herder.connector_info(name).json_body()
        except NotFoundError:
            continue  # deleted while we were listing
        out[name] = entry
    return out


@router.post(
    "", status_code=201, response_model=ConnectorInfo, openapi_extra=openapi.body(openapi.CreateConnectorRequest)
)
async def create_connector(herder: HerderDep, request: Request) -> JSONResponse:
    body = await json_body(request)
    if not isinstance(body, dict):
        raise BadRequestError("The request body must be a JSON object with 'name' and 'config'")
    unknown = sorted(set(body) - CREATE_FIELDS)
    if unknown:
        raise BadRequestError(f"Unrecognized field(s) {unknown}; a create request has only {sorted(CREATE_FIELDS)}")
    raw_name = body.get("name")
    if raw_name is not None and not isinstance(raw_name, str):
        raise BadRequestError(f"The connector name must be a JSON string, not {type(raw_name).__name__}")
    config = as_config(body.get("config") or {})
    # Connect trims the POSTed name (ConnectorsResource#createConnector).
    name = (raw_name if raw_name is not None else config.get("name") or "").strip()
    if not name:
        raise BadRequestError("Connector name cannot be empty: set 'name' in the request")
    initial = body.get("initial_state")
    target = None
    if initial is not None:
        target = INITIAL_STATES.get(str(initial).upper())
        if target is None:
            raise BadRequestError(f"initial_state must be one of {sorted(INITIAL_STATES)}, not {initial!r}")
    info = await _in_thread(herder.create_connector, name, config, target)
    return _created(request, info)


def _created(request: Request, info: ConnectorInfo) -> JSONResponse:
    # Absolute and percent-encoded, as Jersey's UriBuilder makes it: a header value must be plain ASCII.
    location = f"{str(request.base_url).rstrip('/')}/connectors/{quote(info.name, safe='')}"
    return answer(info, 201, {"Location": location})


# The herder's entity is rendered as it is: no response-model validation pass per request.
@router.get("/{name}", response_model=ConnectorInfo)
async def get_connector(herder: HerderDep, name: str) -> JSONResponse:
    return answer(herder.connector_info(name))


@router.get("/{name}/config", response_model=dict[str, str])
async def get_config(herder: HerderDep, name: str) -> JSONResponse:
    return answer(herder.connector_config(name))


@router.put(
    "/{name}/config",
    response_model=ConnectorInfo,
    responses={201: {"model": ConnectorInfo}},
    openapi_extra=openapi.body(openapi.CONFIG_MAP),
)
async def put_config(herder: HerderDep, name: str, request: Request) -> JSONResponse:
    config = as_config(await json_body(request))
    created, info = await _in_thread(herder.put_connector_config, name, config)
    if created:
        return _created(request, info)
    return answer(info)


@router.patch("/{name}/config", response_model=ConnectorInfo, openapi_extra=openapi.body(openapi.CONFIG_MAP))
async def patch_config(herder: HerderDep, name: str, request: Request) -> ConnectorInfo:
    patch = as_config(await json_body(request), "config patch")
    return await _in_thread(herder.patch_connector_config, name, patch)


@router.get("/{name}/status", response_model=ConnectorStateInfo)
async def get_status(herder: HerderDep, name: str) -> JSONResponse:
    return answer(herder.connector_status(name))


@router.get("/{name}/tasks", response_model=list[TaskInfo])
async def get_tasks(herder: HerderDep, name: str) -> list[TaskInfo]:
    return herder.task_configs(name)


@router.get("/{name}/tasks-config")
async def get_tasks_config(herder: HerderDep, name: str) -> dict[str, dict[str, str]]:
    return {f"{t.id.connector}-{t.id.task}": dict(t.config) for t in herder.task_configs(name)}


@router.get("/{name}/tasks/{task}/status", response_model=TaskState)
async def get_task_status(herder: HerderDep, name: str, task: str) -> JSONResponse:
    if not task.lstrip("-").isdigit():
        raise NotFoundError(f"No status found for task {name}-{task}")
    return answer(herder.task_status(name, int(task)))


@router.post("/{name}/tasks", status_code=204, include_in_schema=False)
async def put_task_configs(herder: HerderDep, name: str, request: Request) -> Response:
    """Internal (Connect's InternalConnectResource): a connector's owner hands its task configs to the leader,
    signed with the group's session key over the body's bytes as received (KIP-507; the herder verifies)."""
    body = await json_body(request)
    if not isinstance(body, list) or not all(isinstance(t, dict) for t in body):
        raise BadRequestError("Task configs must be a JSON array of objects")
    configs = [{str(k): str(v) for k, v in t.items()} for t in body]
    signature = RequestSignature.from_headers(await request.body(), request.headers)
    await _in_thread(herder.put_task_configs, name, configs, signature)
    return Response(status_code=204)


@router.delete("/{name}", status_code=204)
async def delete_connector(herder: HerderDep, name: str) -> Response:
    await _in_thread(herder.delete_connector, name)
    return Response(status_code=204)


async def _in_thread(fn: Callable[..., T], *args: object) -> T:
    # Herder calls block (Kafka writes, Spark query starts); keep the event loop free.
    return await run_in_threadpool(fn, *args)


# ---------------------------------------------------------------------- lifecycle
@router.put("/{name}/pause", status_code=202)
async def pause(herder: HerderDep, name: str) -> Response:
    await _in_thread(herder.pause_connector, name)
    return Response(status_code=202)


@router.put("/{name}/resume", status_code=202)
async def resume(herder: HerderDep, name: str) -> Response:
    await _in_thread(herder.resume_connector, name)
    return Response(status_code=202)


@router.put("/{name}/stop", status_code=204)
async def stop(herder: HerderDep, name: str) -> Response:
    await _in_thread(herder.stop_connector, name)
    return Response(status_code=204)


@router.post("/{name}/restart", status_code=204, responses={202: {"model": ConnectorStateInfo}})
async def restart(
    herder: HerderDep,
    name: str,
    include_tasks: Annotated[str | None, openapi.flag("includeTasks", "false")] = None,
    only_failed: Annotated[str | None, openapi.flag("onlyFailed", "false")] = None,
) -> Response:
    include = parse_bool("includeTasks", include_tasks)
    only = parse_bool("onlyFailed", only_failed)
    plan = await _in_thread(herder.restart_connector, name, include, only)
    if plan is None:
        return Response(status_code=204)
    return answer(plan, 202)


@router.post("/{name}/tasks/{task}/restart", status_code=204)
async def restart_task(herder: HerderDep, name: str, task: str) -> Response:
    if not task.isdigit():
        raise NotFoundError(f"Unknown task: {name}-{task}")
    await _in_thread(herder.restart_task, name, int(task))
    return Response(status_code=204)


# ---------------------------------------------------------------------- offsets (KIP-875)
@router.get("/{name}/offsets", response_model=ConnectorOffsets)
async def get_offsets(herder: HerderDep, name: str) -> ConnectorOffsets:
    return ConnectorOffsets(offsets=await _in_thread(herder.connector_offsets, name))


@router.patch("/{name}/offsets", response_model=Message, openapi_extra=openapi.body(openapi.ALTER_OFFSETS))
async def alter_offsets(herder: HerderDep, name: str, request: Request) -> Message:
    body = await json_body(request, required=False)
    if body is not None and not isinstance(body, dict):
        raise BadRequestError(
            'The request body must be a JSON object: {"offsets": [{"partition": ..., "offset": ...}]}'
        )
    unknown = sorted(set(body or {}) - {"offsets"})
    if unknown:
        raise BadRequestError(f"Unrecognized field(s) {unknown}; an alter offsets request has only 'offsets'")
    entries = (body or {}).get("offsets")
    if not entries:
        raise BadRequestError("Partitions / offsets need to be provided for an alter offsets request")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise BadRequestError('\'offsets\' must be a list of {"partition": {...}, "offset": {...}} objects')
    for entry in entries:
        extra = sorted(set(entry) - {"partition", "offset"})
        if extra:
            raise BadRequestError(f"Unrecognized field(s) {extra} in an offsets entry; allowed: 'partition', 'offset'")
    changes = [ConnectorOffset(partition=e.get("partition"), offset=e.get("offset")) for e in entries]
    return Message(message=await _in_thread(herder.alter_offsets, name, changes))


@router.delete("/{name}/offsets", response_model=Message)
async def reset_offsets(herder: HerderDep, name: str) -> Message:
    return Message(message=await _in_thread(herder.reset_offsets, name))


# ---------------------------------------------------------------------- active topics (KIP-558)
@router.get("/{name}/topics")
async def get_topics(herder: HerderDep, name: str) -> dict[str, dict[str, list[str]]]:
    return {name: {"topics": herder.active_topics(name)}}


@router.put("/{name}/topics/reset", status_code=202)
def reset_topics(herder: HerderDep, name: str) -> Response:
    herder.reset_active_topics(name)
    return Response(status_code=202)
