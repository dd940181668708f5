"""Every connector-level key, declared once, as Kafka Connect 4.4.0 (unchanged since 4.3.1) declares them in
ConnectorConfig, SourceConnectorConfig and SinkConnectorConfig: name, type, default, importance, validator,
group, order in group, width and display name; the docs are in sparklink's words.

Validating and running read this one declaration. The herder validates a connector config with
`definition(type)` (create/update, `/config/validate`) and shows it (`/connector-plugins/{p}/config`); it
parses `tasks.max` and `tasks.max.enforce` with it. The transforms package parses the converters,
`transforms`, `predicates` and the Error Handling group with it when it compiles a task's pipeline and
error policy, and adds the per-alias keys a config's transforms and predicates bring (Connect's
ConnectorConfig#enrich). So each default below is written nowhere else.

sparklink acts on `name`, `connector.class`, `tasks.max`, `tasks.max.enforce`, `topics`, the converters,
transforms, predicates and every `errors.*` key; the others are accepted and validated so that Connect
configs carry over.
"""

from __future__ import annotations

from typing import Any

from sparklink.api import config as cfg
from sparklink.api.task_config import CONNECTOR_CLASS, NAME, TASKS_MAX, TASKS_MAX_ENFORCE, TOPICS, TOPICS_REGEX

COMMON, TRANSFORMS_GROUP, PREDICATES_GROUP, ERRORS = "Common", "Transforms", "Predicates", "Error Handling"
TOPIC_CREATION, EXACTLY_ONCE, OFFSETS_TOPIC = "Topic Creation", "Exactly Once Support", "offsets.topic"

CONNECTOR_PLUGIN_VERSION = "connector.plugin.version"
KEY_CONVERTER = "key.converter"
VALUE_CONVERTER = "value.converter"
HEADER_CONVERTER = "header.converter"
CONVERTERS = (KEY_CONVERTER, VALUE_CONVERTER, HEADER_CONVERTER)
TRANSFORMS = "transforms"
PREDICATES = "predicates"
CONFIG_ACTION_RELOAD = "config.action.reload"
ERRORS_RETRY_TIMEOUT = "errors.retry.timeout"
ERRORS_RETRY_MAX_DELAY = "errors.retry.delay.max.ms"
ERRORS_TOLERANCE = "errors.tolerance"
ERRORS_LOG_ENABLE = "errors.log.enable"
ERRORS_LOG_INCLUDE_MESSAGES = "errors.log.include.messages"
DLQ_TOPIC_NAME = "errors.deadletterqueue.topic.name"
DLQ_TOPIC_REPLICATION_FACTOR = "errors.deadletterqueue.topic.replication.factor"
DLQ_CONTEXT_HEADERS_ENABLE = "errors.deadletterqueue.context.headers.enable"

REQUIRED = cfg.NO_DEFAULT


def unique_aliases(name: str, value: Any) -> str | None:
    """ConnectorConfig's alias validator: an alias listed twice is refused (Connect prints the parsed list)."""
    if len(value) == len(set(value)):
        return None
    return cfg.Message(f"Invalid value {cfg.java_list(value)} for configuration {name}: Duplicate alias provided.")


def _upper_one_of(*choices: str) -> cfg.Validator:
    """Kafka's CaseInsensitiveValidString."""

    def check(_name: str, value: object) -> str | None:
        ok = str(value).upper() in choices
        return None if ok else f"String must be one of (case insensitive): {', '.join(choices)}"

    return check


def _converter_version(which: str, order: int) -> cfg.ConfigKey:
    name, display = f"{which}.converter.plugin.version", f"{which.capitalize()} converter version"
    doc = f"Version of the {which} converter plugin."
    return cfg.ConfigKey(name, "STRING", doc, None, "LOW", None, COMMON, order, "SHORT", display)


# name, type, doc, default, importance, validator, group, order in group, width, display name
BASE = [
    cfg.ConfigKey(NAME, "STRING", "Globally unique name of this connector.", REQUIRED, "HIGH", cfg.connector_name,
                  COMMON, 1, "MEDIUM", "Connector name"),
    cfg.ConfigKey(CONNECTOR_CLASS, "STRING", "Name or alias of the connector's class.", REQUIRED, "HIGH", None,
                  COMMON, 2, "LONG", "Connector class"),
    cfg.ConfigKey(CONNECTOR_PLUGIN_VERSION, "STRING", "Version of the connector plugin (sparklink runs the installed "
                  "one).", None, "MEDIUM", None, COMMON, 3, "MEDIUM", "Connector version"),
    cfg.ConfigKey(TASKS_MAX, "INT", "Maximum number of tasks the connector may run.", 1, "HIGH", cfg.at_least(1),
                  COMMON, 4, "SHORT", "Tasks max"),
    cfg.ConfigKey(TASKS_MAX_ENFORCE, "BOOLEAN", "Fail the connector when it generates more task configs than "
                  "tasks.max.", True, "LOW", None, COMMON, 5, "SHORT", "Enforce tasks max"),
    cfg.ConfigKey(KEY_CONVERTER, "CLASS", "Key converter class (the worker's when unset).", None, "LOW", None,
                  COMMON, 6, "SHORT", "Key converter class"),
    _converter_version("key", 7),
    cfg.ConfigKey(VALUE_CONVERTER, "CLASS", "Value converter class (the worker's when unset).", None, "LOW", None,
                  COMMON, 8, "SHORT", "Value converter class"),
    _converter_version("value", 9),
    cfg.ConfigKey(HEADER_CONVERTER, "CLASS", "Header converter class (the worker's when unset).", None, "LOW", None,
                  COMMON, 10, "SHORT", "Header converter class"),
    _converter_version("header", 11),
    cfg.ConfigKey(TRANSFORMS, "LIST", "Aliases of the transformations applied to records, in order.", [], "LOW",
                  unique_aliases, TRANSFORMS_GROUP, 12, "LONG", "Transforms"),
    cfg.ConfigKey(PREDICATES, "LIST", "Aliases of the predicates transformations can be conditioned on.", [], "LOW",
                  unique_aliases, PREDICATES_GROUP, 13, "LONG", "Predicates"),
    cfg.ConfigKey(CONFIG_ACTION_RELOAD, "STRING", "What to do when a config provider reports a change.", "restart",
                  "LOW", cfg.one_of(["none", "restart"]), COMMON, 14, "MEDIUM", "Reload Action"),
    cfg.ConfigKey(ERRORS_RETRY_TIMEOUT, "LONG", "How long a failed operation is retried, in ms (-1: forever).", 0,
                  "MEDIUM", None, ERRORS, 1, "MEDIUM", "Retry Timeout for Errors"),
    cfg.ConfigKey(ERRORS_RETRY_MAX_DELAY, "LONG", "Longest wait between retries of a failed operation, in ms.",
                  60000, "MEDIUM", None, ERRORS, 2, "MEDIUM", "Maximum Delay Between Retries for Errors"),
    cfg.ConfigKey(ERRORS_TOLERANCE, "STRING", "none: an error fails the task; all: problem records are skipped.",
                  "none", "MEDIUM", cfg.one_of(["none", "all"]), ERRORS, 3, "SHORT", "Error Tolerance"),
    cfg.ConfigKey(ERRORS_LOG_ENABLE, "BOOLEAN", "Log each error and the failed operation.", False, "MEDIUM", None,
                  ERRORS, 4, "SHORT", "Log Errors"),
    cfg.ConfigKey(ERRORS_LOG_INCLUDE_MESSAGES, "BOOLEAN", "Include the failed record in those logs.", False,
                  "MEDIUM", None, ERRORS, 5, "SHORT", "Log Error Details"),
]  # fmt: skip
SOURCE_ONLY = [
    cfg.ConfigKey("topic.creation.groups", "LIST", "Groups of settings for topics the connector's records create.",
                  [], "LOW", None, TOPIC_CREATION, 1, "LONG", "Topic Creation Groups"),
    cfg.ConfigKey("exactly.once.support", "STRING", "Whether the connector must support exactly-once delivery.",
                  "requested", "MEDIUM", _upper_one_of("REQUIRED", "REQUESTED"), EXACTLY_ONCE, 2, "SHORT",
                  "Exactly once support"),
    cfg.ConfigKey("transaction.boundary", "STRING", "Where exactly-once transactions end.", "poll", "MEDIUM",
                  _upper_one_of("INTERVAL", "POLL", "CONNECTOR"), EXACTLY_ONCE, 3, "SHORT", "Transaction Boundary"),
    cfg.ConfigKey("transaction.boundary.interval.ms", "LONG", "Transaction length with the interval boundary, in ms.",
                  None, "LOW", cfg.at_least(0), EXACTLY_ONCE, 4, "SHORT", "Transaction boundary interval"),
    cfg.ConfigKey("offsets.storage.topic", "STRING", "A topic of the connector's own for its source offsets.", None,
                  "LOW", cfg.non_empty, OFFSETS_TOPIC, 1, "LONG", "Offsets topic"),
]  # fmt: skip
SINK_ONLY = [
    cfg.ConfigKey(TOPICS, "LIST", "Topics to consume, separated by commas.", "", "HIGH", None, COMMON, 4, "LONG",
                  "Topics"),
    cfg.ConfigKey(TOPICS_REGEX, "STRING", "A regular expression of the topics to consume.", "", "HIGH", None, COMMON,
                  4, "LONG", "Topics regex"),
    cfg.ConfigKey(DLQ_TOPIC_NAME, "STRING", "Topic for records that failed (sinks only).", "", "MEDIUM", None,
                  ERRORS, 6, "MEDIUM", "Dead Letter Queue Topic Name"),
    cfg.ConfigKey(DLQ_TOPIC_REPLICATION_FACTOR, "SHORT", "Replication factor of that topic.", 3, "MEDIUM", None,
                  ERRORS, 7, "MEDIUM", "Dead Letter Queue Topic Replication Factor"),
    cfg.ConfigKey(DLQ_CONTEXT_HEADERS_ENABLE, "BOOLEAN", "Add the failure's context as headers.", False, "MEDIUM",
                  None, ERRORS, 8, "MEDIUM", "Enable Error Context Headers"),
]  # fmt: skip

SOURCE = cfg.ConfigDef({k.name: k for k in BASE + SOURCE_ONLY})
SINK = cfg.ConfigDef({k.name: k for k in BASE + SINK_ONLY})


def definition(connector_type: str) -> cfg.ConfigDef:
    """The connector-level keys of a connector of this type ("sink" or "source")."""
    return SINK if connector_type == "sink" else SOURCE


def subset(connector_type: str, names: tuple[str, ...]) -> cfg.ConfigDef:
    """The named keys of `definition(connector_type)` that it has, in its order (a source has no DLQ keys)."""
    return cfg.ConfigDef({n: k for n, k in definition(connector_type).keys.items() if n in names})
