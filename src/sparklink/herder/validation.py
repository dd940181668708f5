"""Connector config validation shared by create/update and `/config/validate`.

The base keys every connector has (Connect's ConnectorConfig, plus SinkConnectorConfig's `topics`)
are declared once here; a plugin's own ConfigDef is merged over them. Caller: the herder.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparklink.api import config as cfg
from sparklink.api.errors import BadRequestError, ConfigValidationError, ForbiddenError
from sparklink.api.task_config import CONNECTOR_CLASS, TASKS_MAX, TOPICS
from sparklink.herder import connector_config
from sparklink.herder.model import ConfigInfo, ConfigInfos, ConfigValueInfo
from sparklink.plugins import PluginDesc, Plugins
from sparklink.worker_config import WorkerConfig


def base_def(connector_type: str) -> cfg.ConfigDef:
    return connector_config.SINK if connector_type == "sink" else connector_config.SOURCE


def tasks_max(config: Mapping[str, str]) -> int:
    """The connector's `tasks.max`, parsed by its one declaration."""
    return int(cfg.parse_value(connector_config.SOURCE.keys[TASKS_MAX], config.get(TASKS_MAX)))


def require_topic_tracking(config: WorkerConfig, reset: bool) -> None:
    """KIP-558's worker switches: 403 when tracking (or resetting it) is off."""
    if not config.topic_tracking_enable:
        raise ForbiddenError("Topic tracking is disabled.")
    if reset and not config.topic_tracking_allow_reset:
        raise ForbiddenError("Topic tracking reset is disabled.")


def definition(desc: PluginDesc) -> cfg.ConfigDef:
    """The plugin's own keys first, then the base keys it does not override (`/connector-plugins/{p}/config`)."""
    return desc.cls.config_def().merged(base_def(desc.type))


def validated_keys(desc: PluginDesc) -> dict[str, cfg.ConfigKey]:
    """Connect's validate order: the base keys, then the plugin's (a plugin's definition wins)."""
    return {**base_def(desc.type).keys, **desc.cls.config_def().keys}


def validate(plugins: Plugins, config: Mapping[str, str]) -> dict[str, list[str]]:
    """Errors per key for a full connector config (an unknown class is reported on connector.class)."""
    desc = plugins.find(config.get("connector.class", ""))
    if desc is None:
        errors = connector_config.SOURCE.validate(config)
        errors.setdefault("connector.class", []).append(
            f"Invalid value {config.get('connector.class')} for configuration connector.class: "
            "no connector plugin with this name or alias"
        )
        return errors
    errors = definition(desc).validate(config)
    instance_errors = desc.cls().validate(config)
    for key, errs in instance_errors.items():
        for e in errs:
            if e not in errors.setdefault(key, []):
                errors[key].append(e)
    if desc.type == "sink" and not config.get(TOPICS, "").strip():
        errors.setdefault(TOPICS, []).append("Must configure one of topics or topics.regex")
    return errors


def validated(plugins: Plugins, name: str, config: Mapping[str, str]) -> dict[str, str]:
    """The config a create or update stores, or a 400 listing every error as Connect does."""
    if config.get("name", name) != name:
        raise BadRequestError(
            f"Connector name configuration ({config['name']}) doesn't match connector name in the URL ({name})"
        )
    config = {**config, "name": name}
    if not config.get(CONNECTOR_CLASS):
        raise BadRequestError(f"Connector config {java_map(config)} contains no connector type")
    plugins.resolve(config[CONNECTOR_CLASS])
    errors = {k: v for k, v in validate(plugins, config).items() if v}
    if errors:
        lines = [e for errs in errors.values() for e in errs]
        raise ConfigValidationError(
            f"Connector configuration is invalid and contains the following {len(lines)} error(s):\n"
            + "\n".join(lines)
            + "\nYou can also find the above list of errors at the endpoint "
            "`/connector-plugins/{connectorType}/config/validate`",
            errors,
        )
    return config


def config_infos(plugins: Plugins, plugin: str, config: Mapping[str, str]) -> ConfigInfos:
    """The `/connector-plugins/{plugin}/config/validate` answer (Connect's ConfigInfos)."""
    connector_class = config.get(CONNECTOR_CLASS)
    if not connector_class:
        raise BadRequestError(f"Connector config {java_map(config)} contains no connector type")
    if not _same_type(connector_class, plugin):
        raise BadRequestError(f"Included connector type {connector_class} does not match request type {plugin}")
    keys = validated_keys(plugins.resolve(connector_class))
    errors = validate(plugins, config)
    configs = []
    for name in dict.fromkeys([*keys, *errors]):
        key = keys.get(name)
        value = ConfigValueInfo(
            name=name,
            value=config.get(name, key.default_string() if key else None),
            recommended_values=key.recommended if key else (),
            errors=tuple(errors.get(name, [])),
        )
        configs.append(ConfigInfo(key, value))
    return ConfigInfos(
        name=connector_class,
        error_count=sum(len(e) for e in errors.values()),
        groups=tuple(dict.fromkeys(k.group for k in keys.values() if k.group)),
        configs=tuple(configs),
    )


def _same_type(connector_class: str, plugin: str) -> bool:
    # Connect strips a trailing "Connector" from both names and compares with endsWith.
    a = connector_class.removesuffix("Connector")
    b = plugin.removesuffix("Connector")
    return a.endswith(b) or b.endswith(a)


def java_map(config: Mapping[str, str]) -> str:
    """A map as Java's toString writes it, which Connect's messages quote."""
    return "{" + ", ".join(f"{k}={v}" for k, v in config.items()) + "}"
