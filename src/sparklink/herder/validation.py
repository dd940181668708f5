"""Connector config validation shared by create/update and `/config/validate`.

The base keys every connector has (Connect's ConnectorConfig, plus SinkConnectorConfig's `topics`)
are declared once here; a plugin's own ConfigDef is merged over them.
"""

from __future__ import annotations

from sparklink.api import config as cfg
from sparklink.herder.plugins import PluginDesc, Plugins
from sparklink.transforms import connector_config

BASE = (
    cfg.ConfigDef()
    .define(
        cfg.ConfigKey(
            "name",
            "STRING",
            "Globally unique name to use for this connector.",
            importance="HIGH",
            validator=cfg.non_empty,
            group="Common",
            order=1,
        )
    )
    .define(
        cfg.ConfigKey(
            "connector.class",
            "STRING",
            "Name or alias of the class for this connector.",
            importance="HIGH",
            group="Common",
            order=2,
        )
    )
    .define(
        cfg.ConfigKey(
            "tasks.max",
            "INT",
            "Maximum number of tasks to use for this connector.",
            default=1,
            importance="HIGH",
            validator=cfg.at_least(1),
            group="Common",
            order=3,
        )
    )
)
SINK = BASE.merged(
    cfg.ConfigDef().define(
        cfg.ConfigKey(
            "topics",
            "LIST",
            "List of topics to consume, separated by commas.",
            default="",
            importance="HIGH",
            group="Common",
            order=4,
        )
    )
)


# Converters, transforms, predicates and error handling (sparklink.transforms owns their keys).
BASE = BASE.merged(connector_config.CONNECTOR_KEYS)
SINK = SINK.merged(connector_config.SINK_KEYS)


def base_def(connector_type: str) -> cfg.ConfigDef:
    return SINK if connector_type == "sink" else BASE


def definition(desc: PluginDesc, config: dict[str, str]) -> cfg.ConfigDef:
    """The plugin's keys, the base keys, and the keys the config's transforms and predicates add."""
    return desc.cls.config_def().merged(base_def(desc.type)).merged(connector_config.enriched(config, desc.type))


def validate(plugins: Plugins, config: dict[str, str]) -> dict[str, list[str]]:
    """Errors per key for a full connector config (an unknown class is reported on connector.class)."""
    desc = plugins.find(config.get("connector.class", ""))
    if desc is None:
        errors = BASE.validate(config)
        errors.setdefault("connector.class", []).append(
            f"Invalid value {config.get('connector.class')} for configuration connector.class: "
            "no connector plugin with this name or alias"
        )
        return errors
    errors = definition(desc, config).validate(config)
    for more in (desc.cls().validate(config), connector_config.validate(config, desc.type)):
        for key, errs in more.items():
            for e in errs:
                if e not in errors.setdefault(key, []):
                    errors[key].append(e)
    if desc.type == "sink" and not config.get("topics", "").strip():
        errors.setdefault("topics", []).append("Must configure one of topics or topics.regex")
    return errors
