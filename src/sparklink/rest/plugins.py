"""`/connector-plugins`: the installed connector plugins, their config definitions and validation."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from sparklink.api import config as cfg
from sparklink.api.errors import BadRequestError, NotFoundError
from sparklink.herder import validation
from sparklink.herder.plugins import PluginDesc
from sparklink.rest.body import as_config, json_body, parse_bool
from sparklink.rest.deps import HerderDep
from sparklink.transforms import catalog

router = APIRouter(prefix="/connector-plugins", tags=["connector-plugins"])
PLUGIN_TYPES = "sink, source, converter, header_converter, transformation, predicate"


@router.get("")
def list_plugins(herder: HerderDep, request: Request) -> list[dict[str, str]]:
    connectors = [_plugin_info(d) for d in herder.plugins.all()]
    if parse_bool(request.query_params.get("connectorsOnly"), default=True):
        return connectors
    others = [{"class": cls.class_name, "type": kind, "version": cls.version()} for cls, kind in catalog.listing()]
    return connectors + others


@router.get("/{plugin}/config")
def plugin_config(herder: HerderDep, plugin: str) -> list[dict[str, Any]]:
    desc = herder.plugins.find(plugin)
    if desc is None:
        other = catalog.find_any(plugin)
        if other is None:
            raise NotFoundError(f"Unknown plugin {plugin}.")
        return [_key_info(k) for k in other.config_def().keys.values()]
    definition = desc.cls.config_def().merged(validation.base_def(desc.type))
    return [_key_info(k) for k in definition.keys.values()]


@router.put("/{plugin}/config/validate")
async def validate(herder: HerderDep, plugin: str, request: Request) -> dict[str, Any]:
    config = {k: v for k, v in as_config(await json_body(request)).items() if v is not None}
    connector_class = config.get("connector.class")
    if not connector_class:
        raise BadRequestError(
            "Connector config {" + ", ".join(f"{k}={v}" for k, v in config.items()) + "} contains no connector type"
        )
    if not _same_type(connector_class, plugin):
        raise BadRequestError(f"Included connector type {connector_class} does not match request type {plugin}")
    desc = herder.plugins.resolve(connector_class)
    definition = validation.definition(desc, config)
    errors = herder.validate(config)
    configs = []
    for name in dict.fromkeys([*definition.keys, *errors]):
        key = definition.keys.get(name)
        configs.append(
            {
                "definition": _key_info(key) if key else None,
                "value": {
                    "name": name,
                    "value": config.get(name, key.default_string() if key else None),
                    "recommended_values": list(key.recommended) if key else [],
                    "errors": errors.get(name, []),
                    "visible": True,
                },
            }
        )
    groups = list(dict.fromkeys(k.group for k in definition.keys.values() if k.group))
    return {
        "name": connector_class,
        "error_count": sum(len(e) for e in errors.values()),
        "groups": groups,
        "configs": configs,
    }


def _same_type(connector_class: str, plugin: str) -> bool:
    # Connect strips a trailing "Connector" from both names and compares with endsWith.
    a = connector_class.removesuffix("Connector")
    b = plugin.removesuffix("Connector")
    return a.endswith(b) or b.endswith(a)


def _plugin_info(desc: PluginDesc) -> dict[str, str]:
    return {"class": desc.class_name, "type": desc.type, "version": desc.cls().version()}


def _key_info(key: cfg.ConfigKey) -> dict[str, Any]:
    return {
        "name": key.name,
        "type": key.type,
        "required": key.required,
        "default_value": key.default_string(),
        "importance": key.importance,
        "documentation": key.documentation,
        "group": key.group,
        "order": key.order,
        "width": key.width,
        "display_name": key.display_name or key.name,
        "dependents": [],
    }
