"""`/connector-plugins`: the installed connector plugins, their config definitions and validation."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request

from sparklink.worker.herder.model import ConfigInfos, ConfigKeyInfo, PluginInfo
from sparklink.worker.rest import openapi
from sparklink.worker.rest.body import as_config, json_body, parse_bool
from sparklink.worker.rest.deps import HerderDep

router = APIRouter(prefix="/connector-plugins", tags=["connector-plugins"], responses=openapi.ERRORS)


@router.get("", response_model=list[PluginInfo])
def list_plugins(
    herder: HerderDep, connectors_only: Annotated[str | None, openapi.flag("connectorsOnly", "true")] = None
) -> list[PluginInfo]:
    only = parse_bool("connectorsOnly", connectors_only, default=True)
    return herder.plugins(connectors_only=only)


@router.get("/{plugin}/config", response_model=list[ConfigKeyInfo])
def plugin_config(herder: HerderDep, plugin: str) -> list[ConfigKeyInfo]:
    return herder.plugin_config(plugin)


@router.put("/{plugin}/config/validate", response_model=ConfigInfos, openapi_extra=openapi.body(openapi.CONFIG_MAP))
async def validate(herder: HerderDep, plugin: str, request: Request) -> ConfigInfos:
    return herder.validate(plugin, as_config(await json_body(request)))
