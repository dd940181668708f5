"""Connector config validation shared by create/update and `/config/validate`. Caller: the herder.

The connector-level keys are declared once in `sparklink.worker.connector_config`; the transforms package
enriches them with the keys a config's transforms and predicates bring. As Connect's
AbstractHerder#validateConnectorConfig does, a config is validated in one pass: that definition once, the
plugin's own `validate` once (its ConfigDef and its multi-key checks), then the checks of transforms,
predicates, converters and the dead letter queue, and (AbstractHerder#validateClientOverrides) the
`producer.override.*`, `consumer.override.*` and `admin.override.*` keys of the clients the connector uses,
against the worker's `connector.client.config.override.policy`.

Placeholders of the worker's config providers are resolved first (Connect validates resolved values) but
never shown: as in Connect 4.4 (AbstractHerder#redactResolvedValues), a key whose value a provider supplied
is answered with its placeholder and, if the resolved value failed, one generic error instead of errors
that would quote it; a placeholder that cannot be resolved stays as written, so a create is not refused for
it (its connector then fails at start, saying why). Secret keys (the plugin's PASSWORD keys, client secrets
under any prefix: `sparklink.clients.secrets`) are `[hidden]` in answers, and no error text quotes a secret.
The worker's `config.providers*` keys in a connector config are ignored (Connect 4.4 strips them).

The plugin validates with the worker's file rules set on it (`Connector.files`, api/files.py), so a
connector that names files in its config refuses the ones the worker keeps it from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sparklink.api import config as cfg
from sparklink.api.errors import BadRequestError, ConfigValidationError, ForbiddenError
from sparklink.api.files import FileAccess
from sparklink.api.task_config import CONNECTOR_CLASS, TASKS_MAX, TASKS_MAX_ENFORCE, TOPICS
from sparklink.clients.connect import ClientKind, OverridePolicy, overrides
from sparklink.clients.secrets import HIDDEN, is_secret, scrub, secret_values
from sparklink.worker import connector_config
from sparklink.worker.config import WorkerConfig
from sparklink.worker.herder.group_checks import GroupChecks
from sparklink.worker.herder.model import ConfigInfo, ConfigInfos, ConfigValueInfo, RawConfig, config_key_info
from sparklink.worker.plugins import PluginDesc, Plugins
from sparklink.worker.providers.registry import ConfigProviders, is_provider_key
from sparklink.worker.transforms import enrichment

NULL_VALUE = "Null value can not be supplied as the configuration value."
DLQ_TOPIC = "errors.deadletterqueue.topic.name"
TOPIC_CREATION_PREFIX = "topic.creation."
# Connect 4.4 stopped quoting the whole config here (4.3 printed it, secrets included).
NO_CONNECTOR_TYPE = "Connector config contains no connector type"
# Connect 4.4's error for a key whose provider-resolved value failed validation (the value is not quoted).
RESOLVED_INVALID = (
    "Invalid value for configuration '{name}': the value resolved from the config provider reference failed validation"
)


def tasks_max_enforce(config: Mapping[str, str]) -> bool:
    """`tasks.max.enforce`: whether generating more task configs than tasks.max fails the connector."""
    return bool(cfg.parse_value(connector_config.SOURCE.keys[TASKS_MAX_ENFORCE], config.get(TASKS_MAX_ENFORCE)))


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
    return desc.config_def().merged(connector_config.definition(desc.type))


def validated_keys(
    desc: PluginDesc, config: Mapping[str, str] | None = None, java: enrichment.JavaLookup | None = None
) -> dict[str, cfg.ConfigKey]:
    """Connect's validate order: the base keys, the keys the config's transforms and predicates add
    (ConnectorConfig#enrich), then the plugin's (a plugin's definition wins)."""
    alias = enrichment.alias_keys(config or {}, java).keys
    return {**connector_config.definition(desc.type).keys, **alias, **desc.config_def().keys}


def declared_types(plugins: Plugins, config: Mapping[str, str | None]) -> dict[str, str]:
    """The declared type of each key the connector's validation knows (PASSWORD keys are secrets)."""
    desc = plugins.find(config.get(CONNECTOR_CLASS) or "")
    try:
        keys = validated_keys(desc, {k: v for k, v in config.items() if v is not None}) if desc else {}
    except Exception:  # a config whose transforms cannot be read: the base keys still count
        keys = dict(connector_config.definition(desc.type).keys) if desc else {}
    return {name: key.type for name, key in keys.items()}


def _resolved(
    plugins: Plugins, raw: RawConfig, providers: ConfigProviders | None
) -> tuple[dict[str, str | None], dict[str, str | None], dict[str, str]]:
    """The config without the worker's provider keys, the same resolved, and the declared key types."""
    config = {k: v for k, v in raw.items() if not is_provider_key(k)}
    resolved = providers.resolve(config, strict=False) if providers else dict(config)
    return config, resolved, declared_types(plugins, resolved)


def _redacted(
    errors: dict[str, list[str]], raw: RawConfig, resolved: RawConfig, types: Mapping[str, str]
) -> dict[str, list[str]]:
    """Errors that quote no resolved value and no secret."""
    secrets = secret_values(raw, types) | secret_values(resolved, types)
    out: dict[str, list[str]] = {}
    for key, errs in errors.items():
        if errs and key in raw and raw[key] != resolved.get(key):
            errs = [RESOLVED_INVALID.format(name=key)]
        out[key] = [scrub(e, secrets) for e in errs]
    return out


def validate(
    plugins: Plugins,
    raw: RawConfig,
    tasks_limit: int,
    files: FileAccess | None = None,
    policy: OverridePolicy | None = None,
    group: GroupChecks | None = None,
) -> dict[str, list[str]]:
    """Errors per key for a full connector config (an unknown class is reported on connector.class).

    A null value is an error of its own (AbstractHerder#addNullValuedErrors); `tasks.max` may not
    exceed this worker's `sparklink.tasks.max.limit`, since every task is a Spark query here; client
    overrides must pass `policy` (the worker's; Connect's default, All, when not given); a worker of a group
    adds the group's own checks (`group`).
    """
    config = {k: v for k, v in raw.items() if v is not None}
    errors = _validate(plugins, config, files)
    desc = plugins.find(config.get(CONNECTOR_CLASS, ""))
    if desc is not None:
        for key, refused in client_override_errors(config, desc.type, policy or OverridePolicy()).items():
            errors.setdefault(key, []).extend(refused)
        if group is not None:
            group.add_errors(desc, config, errors)
    keys = validated_keys(desc, config, plugins.java_lookup) if desc else connector_config.SOURCE.keys
    for key in (k for k, v in raw.items() if v is None):
        # ConfigDef validates the null first (range checks refuse it), then Connect adds its own error.
        if key in keys and getattr(keys[key].validator, "rejects_null", False):
            errors.setdefault(key, []).append(cfg.invalid(key, None, cfg.NON_NULL))
        errors.setdefault(key, []).append(NULL_VALUE)
    if not errors.get(TASKS_MAX) and tasks_max(config) > tasks_limit:
        errors[TASKS_MAX].append(
            cfg.invalid(TASKS_MAX, config[TASKS_MAX], f"Value must be no more than {tasks_limit}")
            + " (this worker's sparklink.tasks.max.limit: each task is a Spark streaming query)"
        )
    return errors


def client_override_errors(config: Mapping[str, str], kind: str, policy: OverridePolicy) -> dict[str, list[str]]:
    """Every `<client>.override.*` key of a client this connector uses (Connect's connectorUses{Producer,
    Consumer,Admin}), with the policy's message where it refuses the key; overrides of clients the
    connector does not use are not checked, as in Connect."""
    dlq = bool(config.get(DLQ_TOPIC, "").strip())
    used = {
        ClientKind.PRODUCER: kind == "source" or dlq,
        ClientKind.CONSUMER: kind == "sink",
        ClientKind.ADMIN: any(k.startswith(TOPIC_CREATION_PREFIX) for k in config) if kind == "source" else dlq,
    }
    refused = policy.violations(config)
    out: dict[str, list[str]] = {}
    for client, uses in used.items():
        for key in overrides(config, client) if uses else ():
            name = client.override_prefix + key
            out[name] = [refused[name]] if name in refused else []
    return out


def _validate(plugins: Plugins, config: Mapping[str, str], files: FileAccess | None) -> dict[str, list[str]]:
    desc = plugins.find(config.get("connector.class", ""))
    if desc is None:
        unknown = connector_config.SOURCE.validate(config)
        unknown.setdefault("connector.class", []).append(
            f"Invalid value {config.get('connector.class')} for configuration connector.class: "
            "no connector plugin with this name or alias"
        )
        return unknown
    # A key the plugin declares is the plugin's to validate, as `/connector-plugins/{p}/config` shows it;
    # the errors follow that answer's key order (the plugin's keys, then the connector-level ones).
    own = desc.config_def().keys
    base = cfg.ConfigDef({n: k for n, k in connector_config.definition(desc.type).keys.items() if n not in own})
    errors: dict[str, list[str]] = {name: [] for name in definition(desc).keys}
    for key, errs in [*base.validate(config).items(), *desc.validate(config, files).items()]:
        errors.setdefault(key, []).extend(errs)
    enrichment.check(config, desc.type, errors, plugins.java_lookup, desc.in_jvm)
    if desc.type == "sink" and not config.get(TOPICS, "").strip():
        errors.setdefault(TOPICS, []).append("Must configure one of topics or topics.regex")
    return errors


@dataclass(frozen=True)
class Checks:
    """What a worker checks a connector config against, for both a create or update and a validate call."""

    plugins: Plugins
    tasks_limit: int
    providers: ConfigProviders | None = None
    files: FileAccess | None = None
    policy: OverridePolicy | None = None
    group: GroupChecks | None = None

    def errors(self, resolved: RawConfig) -> dict[str, list[str]]:
        """`validate` of the resolved config with these checks."""
        return validate(self.plugins, resolved, self.tasks_limit, self.files, self.policy, self.group)


def validated(checks: Checks, name: str, raw: RawConfig) -> dict[str, str]:
    """The config a create or update stores (placeholders as written), or a 400 listing every error as
    Connect does."""
    if raw.get("name", name) != name:
        raise BadRequestError(
            f"Connector name configuration ({raw['name']}) doesn't match connector name in the URL ({name})"
        )
    check_addressable(name)
    raw = {**raw, "name": name}
    connector_class = raw.get(CONNECTOR_CLASS)
    if not connector_class:
        raise BadRequestError(NO_CONNECTOR_TYPE)
    checks.plugins.resolve(connector_class)
    config, resolved, types = _resolved(checks.plugins, raw, checks.providers)
    found = checks.errors(resolved)
    errors = {k: v for k, v in _redacted(found, config, resolved, types).items() if v}
    if errors:
        lines = [e for errs in errors.values() for e in errs]
        raise ConfigValidationError(
            f"Connector configuration is invalid and contains the following {len(lines)} error(s):\n"
            + "\n".join(lines)
            + "\nYou can also find the above list of errors at the endpoint "
            "`/connector-plugins/{connectorType}/config/validate`",
            errors,
        )
    return {k: v for k, v in raw.items() if v is not None}


def check_addressable(name: str) -> None:
    """A name the REST API could not address is refused (Connect accepts it, then cannot reach it)."""
    if "/" in name or name in (".", ".."):
        raise BadRequestError(
            f"Connector name {name!r} cannot be used: names may not contain '/' or be '.' or '..', because "
            "/connectors/{name} could not address the connector"
        )


def config_infos(checks: Checks, plugin: str, raw: RawConfig) -> ConfigInfos:
    """The `/connector-plugins/{plugin}/config/validate` answer (Connect's ConfigInfos)."""
    connector_class = raw.get(CONNECTOR_CLASS)
    if not connector_class:
        raise BadRequestError(NO_CONNECTOR_TYPE)
    if not _same_type(connector_class, plugin):
        raise BadRequestError(f"Included connector type {connector_class} does not match request type {plugin}")
    desc = checks.plugins.resolve(connector_class)
    config, resolved, types = _resolved(checks.plugins, raw, checks.providers)
    present = {k: v for k, v in resolved.items() if v is not None}
    keys = validated_keys(desc, present, checks.plugins.java_lookup)
    hints = desc.value_hints(present)
    errors = _redacted(checks.errors(resolved), config, resolved, types)
    configs = []
    for name in dict.fromkeys([*keys, *errors]):
        key = keys.get(name)
        hint = hints.get(name)
        shown = config.get(name, key.default_string() if key else None)  # a placeholder stays one
        from_provider = name in config and config[name] != resolved.get(name)
        if hint is not None and not from_provider and name not in config:
            shown = hint.value  # the plugin's own validation's value for a key the config leaves out
        recommended = hint.recommended if hint else key.recommended if key else ()
        value = ConfigValueInfo(
            name=name,
            value=HIDDEN if shown is not None and is_secret(name, types.get(name)) else shown,
            recommended_values=list(recommended) if not from_provider else [],
            errors=errors.get(name, []),
            visible=hint.visible if hint else True,
        )
        configs.append(ConfigInfo(definition=config_key_info(key) if key else None, value=value))
    return ConfigInfos(
        name=connector_class,
        error_count=sum(len(e) for e in errors.values()),
        groups=list(dict.fromkeys(k.group for k in keys.values() if k.group)),
        configs=configs,
    )


def _same_type(connector_class: str, plugin: str) -> bool:
    # Connect strips a trailing "Connector" from both names and compares with endsWith.
    a = connector_class.removesuffix("Connector")
    b = plugin.removesuffix("Connector")
    return a.endswith(b) or b.endswith(a)
