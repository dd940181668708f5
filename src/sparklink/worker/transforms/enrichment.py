"""What a connector config's transforms, predicates and converters add to the one declaration of the
connector-level keys (`sparklink.worker.connector_config`), and the checks Connect runs on them.

Per transform and predicate alias, the definition is enriched as Connect's ConnectorConfig#enrich does:
`<kind>.<alias>.type`, the plugin's own keys under `<kind>.<alias>.` and, for transforms, `predicate` and
`negate`. A converter's own keys are checked under `<which>.converter.`; a sink may not consume its own
dead letter queue. Callers: herder validation (`/config/validate`, create/update adds `check` to its
single pass) and the pipeline compiler (`validate`, `enriched`), so a config gets the same rules and
messages whether it is validated or run.

Java converters, transforms and predicates of plugin.path are known through a `JavaLookup` (their
ConfigDef, from the worker's registry): a Java connector may name them, and only Apache's of the
built-ins (sparklink's SQL transform works on Spark rows, which a Java connector's records never are).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from sparklink.api import config as cfg
from sparklink.api.task_config import TOPICS
from sparklink.worker import connector_config as keys
from sparklink.worker.transforms import catalog
from sparklink.worker.transforms.plugin import Plugin, PluginConfigError

PIPELINE_KEYS = (*keys.CONVERTERS, keys.TRANSFORMS, keys.PREDICATES)
"""With the Error Handling group, the connector-level keys a task's pipeline reads."""

PREDICATE_KEY = cfg.ConfigKey(
    "predicate",
    "STRING",
    "The alias of a predicate used to determine whether to apply this transformation.",
    default=None,
)
NEGATE_KEY = cfg.ConfigKey("negate", "BOOLEAN", "Whether the configured predicate should be negated.", default=False)

JavaLookup = Callable[[str, str | None], cfg.ConfigDef | None]
"""(plugin type, class name) -> the ConfigDef of a Java plugin of plugin.path with that name, or None."""
KINDS = {keys.TRANSFORMS: "transformation", keys.PREDICATES: "predicate"}


def base(connector_type: str) -> cfg.ConfigDef:
    """The pipeline's keys of the connector definition: converters, transforms, predicates, Error Handling."""
    definition = keys.definition(connector_type)
    return cfg.ConfigDef({n: k for n, k in definition.keys.items() if n in PIPELINE_KEYS or k.group == keys.ERRORS})


def aliases(config: Mapping[str, str], name: str) -> list[str]:
    return list(dict.fromkeys(a.strip() for a in (config.get(name) or "").split(",") if a.strip()))


def sub_config(config: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix) :]: v for k, v in config.items() if k.startswith(prefix) and v is not None}


def _prefixed(definition: cfg.ConfigDef, prefix: str, group: str) -> list[cfg.ConfigKey]:
    return [replace(k, name=prefix + k.name, group=group, order=i + 1) for i, k in enumerate(definition.keys.values())]


def enriched(config: Mapping[str, str], connector_type: str) -> cfg.ConfigDef:
    """The pipeline's connector-level keys (`base`) plus the per-alias keys (`alias_keys`)."""
    return base(connector_type).merged(alias_keys(config))


def alias_keys(config: Mapping[str, str], java: JavaLookup | None = None) -> cfg.ConfigDef:
    """Per transform and predicate alias, its `type` key and the keys of the plugin it names (prefixed),
    as Connect's ConnectorConfig.enrich adds them."""
    out = cfg.ConfigDef()
    for kind, finder in ((keys.TRANSFORMS, catalog.transformation), (keys.PREDICATES, catalog.predicate)):
        noun = "transformation" if kind == keys.TRANSFORMS else "predicate"
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
            extra = [PREDICATE_KEY, NEGATE_KEY] if kind == keys.TRANSFORMS else []
            found = cls.config_def() if cls is not None else _java(java, KINDS[kind], config.get(f"{prefix}type"))
            plugin_keys = list(found.keys.values()) if found is not None else []
            for key in _prefixed(cfg.ConfigDef({k.name: k for k in [*extra, *plugin_keys]}), prefix, group):
                out.define(key)
    return out


def validate(config: Mapping[str, str], connector_type: str) -> dict[str, list[str]]:
    """Errors per key of the pipeline's keys (every key of the enriched definition appears)."""
    errors = base(connector_type).validate(config)
    check(config, connector_type, errors)
    return errors


def _java(java: JavaLookup | None, kind: str, name: str | None) -> cfg.ConfigDef | None:
    return java(kind, name) if java is not None and name else None


def check(
    config: Mapping[str, str],
    connector_type: str,
    errors: dict[str, list[str]],
    java: JavaLookup | None = None,
    java_connector: bool = False,
) -> None:
    """Add to `errors` (which holds the connector-level keys' errors) those of the per-alias keys and of
    Connect's checks: unknown classes, a transform's predicate, each plugin's own configure(), the
    converters' configs and, for sinks, the dead letter queue. `java` knows plugin.path's Java plugins;
    `java_connector` says the records are a Java connector's (converted and transformed in the JVM)."""
    for key, errs in alias_keys(config, java).validate(config).items():
        errors.setdefault(key, []).extend(errs)
    for kind, finder in ((keys.TRANSFORMS, catalog.transformation), (keys.PREDICATES, catalog.predicate)):
        for alias in aliases(config, kind):
            prefix = f"{kind}.{alias}."
            type_key = f"{prefix}type"
            name = config.get(type_key)
            cls = finder(name)
            if name is not None and cls is None:
                found = _java(java, KINDS[kind], name)
                reason = _runs_where(found is not None, java_connector, name)
                if reason:
                    errors[type_key].append(f"Invalid value {name} for configuration {type_key}: {reason}")
                elif kind == keys.TRANSFORMS:
                    _check_predicate(config, alias, errors)
                continue
            if cls is not None and java_connector and not cls.class_name.startswith(APACHE):
                errors[type_key].append(f"Invalid value {name} for configuration {type_key}: {SPARK_ONLY}")
                continue
            if kind == keys.TRANSFORMS:
                _check_predicate(config, alias, errors)
            if cls is not None and not any(errors.get(prefix + k) for k in cls.config_def().keys):
                _configure(cls, sub_config(config, prefix), errors[type_key])
    for name in keys.CONVERTERS:
        _check_converter(config, name, errors, java, java_connector)
    if connector_type == "sink":
        _check_dlq(config, errors)


def _check_dlq(config: Mapping[str, str], errors: dict[str, list[str]]) -> None:
    """SinkConnectorConfig's rule: a sink must not consume its own dead letter queue."""
    dlq = (config.get(keys.DLQ_TOPIC_NAME) or "").strip()
    topics = list(dict.fromkeys(t.strip() for t in (config.get(TOPICS) or "").split(",") if t.strip()))
    if dlq and dlq in topics:
        errors.setdefault(TOPICS, []).append(
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
    if predicate is not None and predicate.strip() not in aliases(config, keys.PREDICATES):
        errors.setdefault(prefix + "predicate", []).append(
            f"Invalid value {predicate} for configuration {prefix}predicate: no predicate with this alias is listed "
            "in 'predicates'"
        )


def _configure(cls: type[Plugin], props: dict[str, str], errors: list[str]) -> None:
    try:
        cls(props)
    except (PluginConfigError, ValueError) as exc:
        errors.append(str(exc))


APACHE = "org.apache.kafka."
SPARK_ONLY = "it is sparklink's own and works on Spark rows, which a Java connector's records are not"


def _runs_where(found: bool, java_connector: bool, name: str) -> str | None:
    """Why a class the built-ins do not have cannot be used here, if it cannot."""
    if not found:
        return f"Class {name} could not be found."
    if not java_connector:
        return "it is a Java plugin of plugin.path, which runs in the JVM with Java connectors only"
    return None


def _check_converter(
    config: Mapping[str, str],
    name: str,
    errors: dict[str, list[str]],
    java: JavaLookup | None = None,
    java_connector: bool = False,
) -> None:
    value = config.get(name)
    if value is None:
        return
    header = name == keys.HEADER_CONVERTER
    finder = catalog.header_converter if header else catalog.converter
    cls = finder(value)
    if cls is None:
        found = _java(java, "header_converter" if header else "converter", value)
        reason = _runs_where(found is not None, java_connector, value)
        if reason:
            errors.setdefault(name, []).append(f"Invalid value {value} for configuration {name}: {reason}")
        return
    props = {"converter.type": name.split(".")[0], **sub_config(config, f"{name}.")}
    for key, errs in cls.config_def().validate(props).items():
        if errs:
            errors.setdefault(f"{name}.{key}", []).extend(errs)
    if not any(errors.get(f"{name}.{k}") for k in cls.config_def().keys):
        _configure(cls, props, errors.setdefault(name, []))
