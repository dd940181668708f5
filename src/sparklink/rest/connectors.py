"""`/connectors` routes: parse the request, make one herder call, shape Connect's JSON."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from sparklink.api.errors import BadRequestError, NotFoundError
from sparklink.rest.body import as_config, json_body
from sparklink.rest.deps import HerderDep

router = APIRouter(prefix="/connectors", tags=["connectors"])

CREATE_FIELDS = {"name", "config", "initial_state"}
INITIAL_STATES = {"RUNNING", "PAUSED", "STOPPED"}


@router.get("")
def list_connectors(herder: HerderDep, request: Request) -> Any:
    expand = request.query_params.getlist("expand")
    names = herder.connectors()
    if not expand:
        return names
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        entry: dict[str, Any] = {}
        try:
            if "status" in expand:
                entry["status"] = herder.connector_status(name)
            if "info" in expand:
                entry["info"] = herder.connector_info(name)
        except NotFoundError:
            continue  # deleted while we were listing
        out[name] = entry
    return out


@router.post("", status_code=201)
async def create_connector(herder: HerderDep, request: Request) -> JSONResponse:
    body = await json_body(request)
    if not isinstance(body, dict):
        raise BadRequestError("The request body must be a JSON object with 'name' and 'config'")
    unknown = sorted(set(body) - CREATE_FIELDS)
    if unknown:
        raise BadRequestError(f"Unrecognized field(s) {unknown}; a create request has only {sorted(CREATE_FIELDS)}")
    config = {k: v for k, v in as_config(body.get("config") or {}).items() if v is not None}
    name = str(body.get("name") if body.get("name") is not None else config.get("name", "")).strip()
    if not name:
        raise BadRequestError("Connector name cannot be empty: set 'name' in the request")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise BadRequestError(f"Connector name {name!r} must not contain control characters")
    if "name" in config and config["name"] != name:
        raise BadRequestError(
            f"Connector name configuration ({config['name']}) doesn't match connector name in the URL ({name})"
        )
    initial = body.get("initial_state")
    if initial is not None:
        initial = str(initial).upper()
        if initial not in INITIAL_STATES:
            raise BadRequestError(
                f"initial_state must be one of {sorted(INITIAL_STATES)}, not {body['initial_state']!r}"
            )
    info = await _in_thread(herder.create_connector, name, config, initial)
    return JSONResponse(info, status_code=201, headers={"Location": f"/connectors/{name}"})


@router.get("/{name}")
def get_connector(herder: HerderDep, name: str) -> dict[str, Any]:
    return herder.connector_info(name)


@router.get("/{name}/config")
def get_config(herder: HerderDep, name: str) -> dict[str, str]:
    return herder.connector_config(name)


@router.put("/{name}/config")
async def put_config(herder: HerderDep, name: str, request: Request) -> JSONResponse:
    config = {k: v for k, v in as_config(await json_body(request)).items() if v is not None}
    created, info = await _in_thread(herder.put_connector_config, name, config)
    if created:
        return JSONResponse(info, status_code=201, headers={"Location": f"/connectors/{name}"})
    return JSONResponse(info, status_code=200)


@router.patch("/{name}/config")
async def patch_config(herder: HerderDep, name: str, request: Request) -> dict[str, Any]:
    patch = as_config(await json_body(request), "config patch")
    info: dict[str, Any] = await _in_thread(herder.patch_connector_config, name, patch)
    return info


@router.get("/{name}/status")
def get_status(herder: HerderDep, name: str) -> dict[str, Any]:
    return herder.connector_status(name)


@router.get("/{name}/tasks")
def get_tasks(herder: HerderDep, name: str) -> list[dict[str, Any]]:
    return [
        {"id": {"connector": name, "task": i}, "config": config} for i, config in enumerate(herder.task_configs(name))
    ]


@router.get("/{name}/tasks-config")
def get_tasks_config(herder: HerderDep, name: str) -> dict[str, dict[str, str]]:
    return {f"{name}-{i}": config for i, config in enumerate(herder.task_configs(name))}


@router.get("/{name}/tasks/{task}/status")
def get_task_status(herder: HerderDep, name: str, task: str) -> dict[str, Any]:
    if not task.lstrip("-").isdigit():
        raise NotFoundError(f"No status found for task {name}-{task}")
    return herder.task_status(name, int(task))


@router.delete("/{name}", status_code=204)
async def delete_connector(herder: HerderDep, name: str) -> Response:
    await _in_thread(herder.delete_connector, name)
    return Response(status_code=204)


async def _in_thread(fn: Any, *args: Any) -> Any:
    # Herder calls block (Kafka writes, Spark query starts); keep the event loop free.
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(fn, *args)
