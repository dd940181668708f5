"""What the served `/openapi.json` says beyond the routes' signatures: request bodies, query flags, errors.

Routes read their bodies themselves (so malformed JSON gets Connect's error body, not FastAPI's 422),
which hides the bodies from FastAPI's schema; each route names its body here instead. Every error
answer is Connect's `ErrorMessage`, and FastAPI's default 422 entries are removed because a bad
request is answered 400. Generated clients and fuzzers read this schema. Caller: rest/app.py.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import FastAPI, Query
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, ConfigDict, Field

from sparklink.worker.herder.model import ErrorMessage


class CreateConnectorRequest(BaseModel):
    """POST /connectors (Connect's CreateConnectorRequest)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="Connector name: no control characters, no '/', not '.' or '..'")
    config: dict[str, str | None] = Field(description="Connector config; `connector.class` is required")
    initial_state: Literal["RUNNING", "PAUSED", "STOPPED"] | None = None


class LoggerLevelRequest(BaseModel):
    level: str = Field(description="A log4j level: OFF, FATAL, ERROR, WARN, INFO, DEBUG, TRACE or ALL")


CONFIG_MAP: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {"type": ["string", "null"]},
    "description": "A flat map of config keys to string values",
}

# PATCH /connectors/{name}/offsets (KIP-875), written out so the body schema needs no references.
ALTER_OFFSETS: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["offsets"],
    "properties": {
        "offsets": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "partition": {
                        "type": ["object", "null"],
                        "description": "Source partition or sink topic/partition",
                    },
                    "offset": {"type": ["object", "null"], "description": "The offset; null removes the partition"},
                },
            },
        }
    },
}

ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorMessage, "description": text}
    for status, text in (
        (400, "Bad request: the message says what is wrong"),
        (404, "No such connector, task, plugin or logger"),
        (409, "The connector already exists"),
        (413, "The request body is over 1 MiB"),
        (500, "Unexpected failure"),
        (503, "The worker is still starting up"),
    )
}


def flag(alias: str, default: str) -> Any:
    """A boolean query parameter as Connect reads it: `true` or `false` in any case."""
    return Query(
        alias=alias,
        description=f"true or false, in any case (default {default})",
        json_schema_extra={"enum": ["true", "false"]},
    )


def body(schema: type[BaseModel] | dict[str, Any], required: bool = True) -> dict[str, Any]:
    """`openapi_extra` naming a route's JSON request body."""
    as_json = schema if isinstance(schema, dict) else schema.model_json_schema()
    return {"requestBody": {"required": required, "content": {"application/json": {"schema": as_json}}}}


def install(app: FastAPI) -> None:
    """Serve the schema without FastAPI's 422 answers (this API answers bad requests with 400)."""

    def schema() -> dict[str, Any]:
        if app.openapi_schema is None:
            generated = get_openapi(title=app.title, version=app.version, routes=app.routes)
            for path in generated.get("paths", {}).values():
                for operation in path.values():
                    operation.get("responses", {}).pop("422", None)
            components = generated.get("components", {}).get("schemas", {})
            components.pop("HTTPValidationError", None)
            components.pop("ValidationError", None)
            app.openapi_schema = generated
        return app.openapi_schema

    app.openapi = schema  # type: ignore[method-assign]
