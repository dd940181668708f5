"""The connector config keys of Connect's ConnectorConfig/SinkConnectorConfig that this package owns:
converters, `transforms`, `predicates` and the Error Handling group, plus the per-alias keys that a
config "enriches" the definition with (`transforms.<alias>.type`, the transform's own keys under
`transforms.<alias>.`, `predicate`, `negate`; the same for predicates).

Caller: herder validation (`/config/validate`, create/update) and the pipeline compiler, so a config
is checked with the same rules and messages whether it is validated or run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparklink.api import config as cfg
from sparklink.worker.transforms import catalog
from sparklink.worker.transforms.plugin import Plugin, PluginConfigError

COMMON, TRANSFORMS, PREDICATES, ERRORS = "Common", "Transforms", "Predicates", "Error Handling"
CONVERTER_KEYS = ("key.converter", "value.converter", "header.converter")


def _unique(name: str, value: Any) -> str | None:
    if len(value) == len(set(value)):
        return None
    return cfg.Message(f"Invalid value {cfg.java_list(value)} for configuration {name}: Duplicate alias provided.")


KEY_DOCS = {
    "key.converter": "Converter between Connect data and the bytes of record keys (default: the worker's).",
    "value.converter": "Converter between Connect data and the bytes of record values (default: the worker's).",
    "header.converter": "Converter for header values (default: the worker's, else SimpleHeaderConverter).",
    "transforms": "Aliases of the transformations applied to each record, in order.",
    "predicates": "Aliases of the predicates that transformations refer to.",
    "errors.retry.timeout": "How long (ms) a retriable failure is retried; 0 never retries, -1 retries forever.",
    "errors.retry.delay.max.ms": "Longest wait (ms) between retries; beyond it the wait is randomised.",
    "errors.tolerance": "none: the first failing record fails the task; all: failing records are skipped.",
    "errors.log.enable": "Log each failed record with the stage and class that failed.",
    "errors.log.include.messages": "Also log where the failed record came from (topic, partition, offset, timestamp).",
    "errors.deadletterqueue.topic.name": "Topic that receives the records a sink could not convert or transform "
    "(empty: no dead letter queue).",
    "errors.deadletterqueue.topic.replication.factor": "Replication factor of the dead letter queue topic when "
    "sparklink creates it.",
    "errors.deadletterqueue.context.headers.enable": "Add __connect.errors.* headers saying why and where each "
    "dead-lettered record failed.",
}


def _define(
    out: cfg.ConfigDef, name: str, type_: cfg.ConfigType, default: Any, group: str, order: int, **kw: Any
) -> None:
    out.define(cfg.ConfigKey(name, type_, KEY_DOCS[name], default=default, group=group, order=order, **kw))


CONNECTOR_KEYS = cfg.ConfigDef()
_define(CONNECTOR_KEYS, "key.converter", "CLASS", None, COMMON, 5, importance="LOW")
_define(CONNECTOR_KEYS, "value.converter", "CLASS", None, COMMON, 6, importance="LOW")
_define(CONNECTOR_KEYS, "header.converter", "CLASS", None, COMMON, 7, importance="LOW")
_define(CONNECTOR_KEYS, "transforms", "LIST", [], TRANSFORMS, 8, importance="LOW", validator=_unique)
_define(CONNECTOR_KEYS, "predicates", "LIST", [], PREDICATES, 9, importance="LOW", validator=_unique)
_define(CONNECTOR_KEYS, "errors.retry.timeout", "LONG", 0, ERRORS, 1)
_define(CONNECTOR_KEYS, "errors.retry.delay.max.ms", "LONG", 60000, ERRORS, 2)
_define(CONNECTOR_KEYS, "errors.tolerance", "STRING", "none", ERRORS, 3, validator=cfg.one_of(["none", "all"]))
_define(CONNECTOR_KEYS, "errors.log.enable", "BOOLEAN", False, ERRORS, 4)
_define(CONNECTOR_KEYS, "errors.log.include.messages", "BOOLEAN", False, ERRORS, 5)

SINK_KEYS = CONNECTOR_KEYS.merged(cfg.ConfigDef())
_define(SINK_KEYS, "errors.deadletterqueue.topic.name", "STRING", "", ERRORS, 6)
_define(SINK_KEYS, "errors.deadletterqueue.topic.replication.factor", "SHORT", 3, ERRORS, 7)
_define(SINK_KEYS, "errors.deadletterqueue.context.headers.enable", "BOOLEAN", False, ERRORS, 8)

PREDICATE_KEY = cfg.ConfigKey(
    "predicate",
    "STRING",
    "The alias of a predicate used to determine whether to apply this transformation.",
    default=None,
)
NEGATE_KEY = cfg.ConfigKey("negate", "BOOLEAN", "Whether the configured predicate should be negated.", default=False)


def base(connector_type: str) -> cfg.ConfigDef:
    return SINK_KEYS if connector_type == "sink" else CONNECTOR_KEYS


def aliases(config: Mapping[str, str], name: str) -> list[str]:
    return list(dict.fromkeys(a.strip() for a in (config.get(name) or "").split(",") if a.strip()))


def sub_config(config: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix) :]: v for k, v in config.items() if k.startswith(prefix) and v is not None}


def _prefixed(definition: cfg.ConfigDef, prefix: str, group: str) -> list[cfg.ConfigKey]:
    from dataclasses import replace

    return [replace(k, name=prefix + k.name, group=group, order=i + 1) for i, k in enumerate(definition.keys.values())]


def enriched(config: Mapping[str, str], connector_type: str) -> cfg.ConfigDef:
    """The connector-level keys this package owns plus the per-alias keys (`alias_keys`)."""
    return base(connector_type).merged(alias_keys(config))


def alias_keys(config: Mapping[str, str]) -> cfg.ConfigDef:
    """Per transform and predicate alias, its `type` key and the keys of the plugin it names (prefixed),
    as Connect's ConnectorConfig.enrich adds them."""
    out = cfg.ConfigDef()
    for kind, finder in (("transforms", catalog.transformation), ("predicates", catalog.predicate)):
        noun = "transformation" if kind == "transforms" else "predicate"
        for alias in aliases(config, kind):
            prefix, group = f"{kind}.{alias}.", f"{kind.capitalize()}: {alias}"
            out.define(
                cfg.ConfigKey(
                    f"{prefix}type",
                    "CLASS",
                    f"Class for the '{alias}' {noun}.",
                    importance="HIGH",
                    group=group,
                    order=0,
                )
            )
            cls = finder(config.get(f"{prefix}type"))
            extra = [PREDICATE_KEY, NEGATE_KEY] if kind == "transforms" else []
            plugin_keys = list(cls.config_def().keys.values()) if cls is not None else []
            for key in _prefixed(cfg.ConfigDef({k.name: k for k in [*extra, *plugin_keys]}), prefix, group):
                out.define(key)
    return out


def validate(config: Mapping[str, str], connector_type: str) -> dict[str, list[str]]:
    """Errors per key for the keys this package owns (every key of the enriched definition appears)."""
    definition = enriched(config, connector_type)
    errors = definition.validate(config)
    for kind, finder in (("transforms", catalog.transformation), ("predicates", catalog.predicate)):
        for alias in aliases(config, kind):
            prefix = f"{kind}.{alias}."
            type_key = f"{prefix}type"
            name = config.get(type_key)
            cls = finder(name)
            if name is not None and cls is None:
                errors[type_key].append(
                    f"Invalid value {name} for configuration {type_key}: Class {name} could not be found."
                )
                continue
            if kind == "transforms":
                _check_predicate(config, alias, errors)
            if cls is not None and not any(errors.get(prefix + k) for k in cls.config_def().keys):
                _configure(cls, sub_config(config, prefix), errors[type_key])
    for name in CONVERTER_KEYS:
        _check_converter(config, name, errors)
    if connector_type == "sink":
        _check_dlq(config, errors)
    return errors


def _check_dlq(config: Mapping[str, str], errors: dict[str, list[str]]) -> None:
    """SinkConnectorConfig's rule: a sink must not consume its own dead letter queue."""
    dlq = (config.get("errors.deadletterqueue.topic.name") or "").strip()
    topics = list(dict.fromkeys(t.strip() for t in (config.get("topics") or "").split(",") if t.strip()))
    if dlq and dlq in topics:
        errors.setdefault("topics", []).append(
            f"The DLQ topic '{dlq}' may not be included in the list of topics ('topics={cfg.java_list(topics)}') "
            "consumed by the connector"
        )


def _check_predicate(config: Mapping[str, str], alias: str, errors: dict[str, list[str]]) -> None:
    prefix = f"transforms.{alias}."
    predicate = config.get(prefix + "predicate")
    if prefix + "negate" in config and predicate is None:
        errors[prefix + "type"].append(
            f"Config '{prefix}negate' was provided but there is no config '{prefix}predicate' defining a predicate to "
            "be negated."
        )
    if predicate is not None and predicate.strip() not in aliases(config, "predicates"):
        errors.setdefault(prefix + "predicate", []).append(
            f"Invalid value {predicate} for configuration {prefix}predicate: no predicate with this alias is listed "
            "in 'predicates'"
        )


def _configure(cls: type[Plugin], props: dict[str, str], errors: list[str]) -> None:
    try:
        cls(props)
    except (PluginConfigError, ValueError) as exc:
        errors.append(str(exc))


def _check_converter(config: Mapping[str, str], name: str, errors: dict[str, list[str]]) -> None:
    value = config.get(name)
    if value is None:
        return
    finder = catalog.header_converter if name == "header.converter" else catalog.converter
    cls = finder(value)
    if cls is None:
        errors.setdefault(name, []).append(
            f"Invalid value {value} for configuration {name}: Class {value} could not be found."
        )
        return
    props = {"converter.type": name.split(".")[0], **sub_config(config, f"{name}.")}
    for key, errs in cls.config_def().validate(props).items():
        if errs:
            errors.setdefault(f"{name}.{key}", []).extend(errs)
    if not any(errors.get(f"{name}.{k}") for k in cls.config_def().keys):
        _configure(cls, props, errors.setdefault(name, []))
