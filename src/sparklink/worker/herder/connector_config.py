"""The keys every connector config has, as Kafka Connect 4.4.0 declares them (ConnectorConfig,
SourceConnectorConfig, SinkConnectorConfig, unchanged since 4.3.1): names, types, defaults, groups, order.

`/config/validate` and `/connector-plugins/{p}/config` show them with Connect's groups (Common,
Transforms, Predicates, Error Handling; for sources also Topic Creation, Exactly Once Support and
offsets.topic). sparklink reads `name`, `connector.class`, `tasks.max`, `tasks.max.enforce`,
`topics`; the others are accepted and validated so Connect configs carry over. Caller: validation.py.
"""

from __future__ import annotations

from typing import Any

from sparklink.api import config as cfg
from sparklink.api.task_config import CONNECTOR_CLASS, NAME, TASKS_MAX, TASKS_MAX_ENFORCE, TOPICS, TOPICS_REGEX

COMMON, TRANSFORMS, PREDICATES, ERRORS = "Common", "Transforms", "Predicates", "Error Handling"
TOPIC_CREATION, EXACTLY_ONCE, OFFSETS_TOPIC = "Topic Creation", "Exactly Once Support", "offsets.topic"
REQUIRED = cfg.NO_DEFAULT


def _upper_one_of(*choices: str) -> cfg.Validator:
    def check(_name: str, value: object) -> str | None:
        ok = str(value).upper() in choices
        return None if ok else f"String must be one of (case insensitive): {', '.join(choices)}"

    return check


# name, type, group, order in group, width, display name, default, importance, validator
Row = tuple[str, cfg.ConfigType, str, int, str, str, Any, cfg.Importance, cfg.Validator | None]

BASE: list[Row] = [
    (NAME, "STRING", COMMON, 1, "MEDIUM", "Connector name", REQUIRED, "HIGH", cfg.connector_name),
    (CONNECTOR_CLASS, "STRING", COMMON, 2, "LONG", "Connector class", REQUIRED, "HIGH", None),
    ("connector.plugin.version", "STRING", COMMON, 3, "MEDIUM", "Connector version", None, "MEDIUM", None),
    (TASKS_MAX, "INT", COMMON, 4, "SHORT", "Tasks max", 1, "HIGH", cfg.at_least(1)),
    (TASKS_MAX_ENFORCE, "BOOLEAN", COMMON, 5, "SHORT", "Enforce tasks max", True, "LOW", None),
    ("key.converter", "CLASS", COMMON, 6, "SHORT", "Key converter class", None, "LOW", None),
    ("key.converter.plugin.version", "STRING", COMMON, 7, "SHORT", "Key converter version", None, "LOW", None),
    ("value.converter", "CLASS", COMMON, 8, "SHORT", "Value converter class", None, "LOW", None),
    ("value.converter.plugin.version", "STRING", COMMON, 9, "SHORT", "Value converter version", None, "LOW", None),
    ("header.converter", "CLASS", COMMON, 10, "SHORT", "Header converter class", None, "LOW", None),
    ("header.converter.plugin.version", "STRING", COMMON, 11, "SHORT", "Header converter version", None, "LOW", None),
    ("transforms", "LIST", TRANSFORMS, 12, "LONG", "Transforms", [], "LOW", None),
    ("predicates", "LIST", PREDICATES, 13, "LONG", "Predicates", [], "LOW", None),
    ("config.action.reload", "STRING", COMMON, 14, "MEDIUM", "Reload Action", "restart", "LOW",
     cfg.one_of(["none", "restart"])),
    ("errors.retry.timeout", "LONG", ERRORS, 1, "MEDIUM", "Retry Timeout for Errors", 0, "MEDIUM", None),
    ("errors.retry.delay.max.ms", "LONG", ERRORS, 2, "MEDIUM", "Maximum Delay Between Retries for Errors", 60000,
     "MEDIUM", None),
    ("errors.tolerance", "STRING", ERRORS, 3, "SHORT", "Error Tolerance", "none", "MEDIUM",
     cfg.one_of(["none", "all"])),
    ("errors.log.enable", "BOOLEAN", ERRORS, 4, "SHORT", "Log Errors", False, "MEDIUM", None),
    ("errors.log.include.messages", "BOOLEAN", ERRORS, 5, "SHORT", "Log Error Details", False, "MEDIUM", None),
]  # fmt: skip
SOURCE_ONLY: list[Row] = [
    ("topic.creation.groups", "LIST", TOPIC_CREATION, 1, "LONG", "Topic Creation Groups", [], "LOW", None),
    ("exactly.once.support", "STRING", EXACTLY_ONCE, 2, "SHORT", "Exactly once support", "requested", "MEDIUM",
     _upper_one_of("REQUIRED", "REQUESTED")),
    ("transaction.boundary", "STRING", EXACTLY_ONCE, 3, "SHORT", "Transaction Boundary", "poll", "MEDIUM",
     _upper_one_of("INTERVAL", "POLL", "CONNECTOR")),
    ("transaction.boundary.interval.ms", "LONG", EXACTLY_ONCE, 4, "SHORT", "Transaction boundary interval", None,
     "LOW", cfg.at_least(0)),
    ("offsets.storage.topic", "STRING", OFFSETS_TOPIC, 1, "LONG", "Offsets topic", None, "LOW", cfg.non_empty),
]  # fmt: skip
SINK_ONLY: list[Row] = [
    (TOPICS, "LIST", COMMON, 4, "LONG", "Topics", "", "HIGH", None),
    (TOPICS_REGEX, "STRING", COMMON, 4, "LONG", "Topics regex", "", "HIGH", None),
    ("errors.deadletterqueue.topic.name", "STRING", ERRORS, 6, "MEDIUM", "Dead Letter Queue Topic Name", "",
     "MEDIUM", None),
    ("errors.deadletterqueue.topic.replication.factor", "SHORT", ERRORS, 7, "MEDIUM",
     "Dead Letter Queue Topic Replication Factor", 3, "MEDIUM", None),
    ("errors.deadletterqueue.context.headers.enable", "BOOLEAN", ERRORS, 8, "MEDIUM", "Enable Error Context Headers",
     False, "MEDIUM", None),
]  # fmt: skip

# In sparklink's words: what each key is for.
DOCS = {
    NAME: "Globally unique name of this connector.",
    CONNECTOR_CLASS: "Name or alias of the connector's class.",
    "connector.plugin.version": "Version of the connector plugin (sparklink runs the installed one).",
    TASKS_MAX: "Maximum number of tasks the connector may run.",
    TASKS_MAX_ENFORCE: "Fail the connector when it generates more task configs than tasks.max.",
    "key.converter": "Key converter class (the worker's when unset).",
    "value.converter": "Value converter class (the worker's when unset).",
    "header.converter": "Header converter class (the worker's when unset).",
    "transforms": "Aliases of the transformations applied to records, in order.",
    "predicates": "Aliases of the predicates transformations can be conditioned on.",
    "config.action.reload": "What to do when a config provider reports a change.",
    "errors.retry.timeout": "How long a failed operation is retried, in ms (-1: forever).",
    "errors.retry.delay.max.ms": "Longest wait between retries of a failed operation, in ms.",
    "errors.tolerance": "none: an error fails the task; all: problem records are skipped.",
    "errors.log.enable": "Log each error and the failed operation.",
    "errors.log.include.messages": "Include the failed record in those logs.",
    "topic.creation.groups": "Groups of settings for topics the connector's records create.",
    "exactly.once.support": "Whether the connector must support exactly-once delivery.",
    "transaction.boundary": "Where exactly-once transactions end.",
    "transaction.boundary.interval.ms": "Transaction length with the interval boundary, in ms.",
    "offsets.storage.topic": "A topic of the connector's own for its source offsets.",
    TOPICS: "Topics to consume, separated by commas.",
    TOPICS_REGEX: "A regular expression of the topics to consume.",
    "errors.deadletterqueue.topic.name": "Topic for records that failed (sinks only).",
    "errors.deadletterqueue.topic.replication.factor": "Replication factor of that topic.",
    "errors.deadletterqueue.context.headers.enable": "Add the failure's context as headers.",
}


def _definition(rows: list[Row]) -> cfg.ConfigDef:
    d = cfg.ConfigDef()
    for name, type_, group, order, width, display, default, importance, validator in rows:
        doc = DOCS.get(name) or f"Version of the {name.split('.')[0]} converter plugin."
        d.define(
            cfg.ConfigKey(name, type_, doc, default, importance, validator, group, order, width, display_name=display)
        )
    return d


SOURCE = _definition(BASE + SOURCE_ONLY)
SINK = _definition(BASE + SINK_ONLY)
