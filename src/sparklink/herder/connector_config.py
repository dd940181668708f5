"""The keys every connector config has, as Kafka Connect 4.3.1 declares them (ConnectorConfig,
SourceConnectorConfig, SinkConnectorConfig): names, types, defaults, groups and their order.

`/config/validate` and `/connector-plugins/{p}/config` show them with Connect's groups (Common,
Transforms, Predicates, Error Handling; for sources also Topic Creation, Exactly Once Support and
offsets.topic). sparklink reads `name`, `connector.class`, `tasks.max`, `tasks.max.enforce`,
`topics`; the others are accepted and validated so Connect configs carry over. Caller: validation.py.
"""

from __future__ import annotations

from sparklink.api import config as cfg
from sparklink.api.task_config import CONNECTOR_CLASS, NAME, TASKS_MAX, TASKS_MAX_ENFORCE, TOPICS, TOPICS_REGEX

COMMON, TRANSFORMS, PREDICATES, ERRORS = "Common", "Transforms", "Predicates", "Error Handling"
TOPIC_CREATION, EXACTLY_ONCE, OFFSETS_TOPIC = "Topic Creation", "Exactly Once Support", "offsets.topic"


def _key(
    name: str,
    type_: cfg.ConfigType,
    doc: str,
    group: str,
    order: int,
    width: str,
    display: str,
    default: object = cfg.NO_DEFAULT,
    importance: cfg.Importance = "LOW",
    validator: cfg.Validator | None = None,
) -> cfg.ConfigKey:
    return cfg.ConfigKey(
        name,
        type_,
        doc,
        default=default,
        importance=importance,
        validator=validator,
        group=group,
        order=order,
        width=width,
        display_name=display,
    )


def _base() -> cfg.ConfigDef:
    d = cfg.ConfigDef()
    keys = [
        _key(
            NAME,
            "STRING",
            "Globally unique name of this connector.",
            COMMON,
            1,
            "MEDIUM",
            "Connector name",
            importance="HIGH",
            validator=cfg.connector_name,
        ),
        _key(
            CONNECTOR_CLASS,
            "STRING",
            "Name or alias of the connector's class.",
            COMMON,
            2,
            "LONG",
            "Connector class",
            importance="HIGH",
        ),
        _key(
            "connector.plugin.version",
            "STRING",
            "Version of the connector plugin (sparklink runs the installed one).",
            COMMON,
            3,
            "MEDIUM",
            "Connector version",
            default=None,
            importance="MEDIUM",
        ),
        _key(
            TASKS_MAX,
            "INT",
            "Maximum number of tasks the connector may run.",
            COMMON,
            4,
            "SHORT",
            "Tasks max",
            default=1,
            importance="HIGH",
            validator=cfg.at_least(1),
        ),
        _key(
            TASKS_MAX_ENFORCE,
            "BOOLEAN",
            "Fail the connector when it generates more task configs than tasks.max.",
            COMMON,
            5,
            "SHORT",
            "Enforce tasks max",
            default=True,
        ),
    ]
    order = 6
    for kind, display in (("key", "Key"), ("value", "Value"), ("header", "Header")):
        keys.append(
            _key(
                f"{kind}.converter",
                "CLASS",
                f"{display} converter class (the worker's when unset).",
                COMMON,
                order,
                "SHORT",
                f"{display} converter class",
                default=None,
            )
        )
        keys.append(
            _key(
                f"{kind}.converter.plugin.version",
                "STRING",
                f"Version of the {kind} converter plugin.",
                COMMON,
                order + 1,
                "SHORT",
                f"{display} converter version",
                default=None,
            )
        )
        order += 2
    keys += [
        _key(
            "transforms",
            "LIST",
            "Aliases of the transformations applied to records, in order.",
            TRANSFORMS,
            12,
            "LONG",
            "Transforms",
            default=[],
        ),
        _key(
            "predicates",
            "LIST",
            "Aliases of the predicates transformations can be conditioned on.",
            PREDICATES,
            13,
            "LONG",
            "Predicates",
            default=[],
        ),
        _key(
            "config.action.reload",
            "STRING",
            "What to do when a config provider reports a change.",
            COMMON,
            14,
            "MEDIUM",
            "Reload Action",
            default="restart",
            validator=cfg.one_of(["none", "restart"]),
        ),
        _key(
            "errors.retry.timeout",
            "LONG",
            "How long a failed operation is retried, in ms (-1: forever).",
            ERRORS,
            1,
            "MEDIUM",
            "Retry Timeout for Errors",
            default=0,
            importance="MEDIUM",
        ),
        _key(
            "errors.retry.delay.max.ms",
            "LONG",
            "Longest wait between retries of a failed operation, in ms.",
            ERRORS,
            2,
            "MEDIUM",
            "Maximum Delay Between Retries for Errors",
            default=60000,
            importance="MEDIUM",
        ),
        _key(
            "errors.tolerance",
            "STRING",
            "none: an error fails the task; all: problem records are skipped.",
            ERRORS,
            3,
            "SHORT",
            "Error Tolerance",
            default="none",
            importance="MEDIUM",
            validator=cfg.one_of(["none", "all"]),
        ),
        _key(
            "errors.log.enable",
            "BOOLEAN",
            "Log each error and the failed operation.",
            ERRORS,
            4,
            "SHORT",
            "Log Errors",
            default=False,
            importance="MEDIUM",
        ),
        _key(
            "errors.log.include.messages",
            "BOOLEAN",
            "Include the failed record in those logs.",
            ERRORS,
            5,
            "SHORT",
            "Log Error Details",
            default=False,
            importance="MEDIUM",
        ),
    ]
    for key in keys:
        d.define(key)
    return d


def _source() -> cfg.ConfigDef:
    d = _base()
    for key in (
        _key(
            "topic.creation.groups",
            "LIST",
            "Groups of settings for topics the connector's records create.",
            TOPIC_CREATION,
            1,
            "LONG",
            "Topic Creation Groups",
            default=[],
        ),
        _key(
            "exactly.once.support",
            "STRING",
            "Whether the connector must support exactly-once delivery.",
            EXACTLY_ONCE,
            2,
            "SHORT",
            "Exactly once support",
            default="requested",
            importance="MEDIUM",
            validator=_one_of_ignoring_case("REQUIRED", "REQUESTED"),
        ),
        _key(
            "transaction.boundary",
            "STRING",
            "Where exactly-once transactions end.",
            EXACTLY_ONCE,
            3,
            "SHORT",
            "Transaction Boundary",
            default="poll",
            importance="MEDIUM",
            validator=_one_of_ignoring_case("INTERVAL", "POLL", "CONNECTOR"),
        ),
        _key(
            "transaction.boundary.interval.ms",
            "LONG",
            "Transaction length with the interval boundary, in ms.",
            EXACTLY_ONCE,
            4,
            "SHORT",
            "Transaction boundary interval",
            default=None,
            validator=cfg.at_least(0),
        ),
        _key(
            "offsets.storage.topic",
            "STRING",
            "A topic of the connector's own for its source offsets.",
            OFFSETS_TOPIC,
            1,
            "LONG",
            "Offsets topic",
            default=None,
            validator=cfg.non_empty,
        ),
    ):
        d.define(key)
    return d


def _sink() -> cfg.ConfigDef:
    d = _base()
    for key in (
        _key(
            TOPICS,
            "LIST",
            "Topics to consume, separated by commas.",
            COMMON,
            4,
            "LONG",
            "Topics",
            default="",
            importance="HIGH",
        ),
        _key(
            TOPICS_REGEX,
            "STRING",
            "A regular expression of the topics to consume.",
            COMMON,
            4,
            "LONG",
            "Topics regex",
            default="",
            importance="HIGH",
        ),
        _key(
            "errors.deadletterqueue.topic.name",
            "STRING",
            "Topic for records that failed (sinks only).",
            ERRORS,
            6,
            "MEDIUM",
            "Dead Letter Queue Topic Name",
            default="",
            importance="MEDIUM",
        ),
        _key(
            "errors.deadletterqueue.topic.replication.factor",
            "SHORT",
            "Replication factor of that topic.",
            ERRORS,
            7,
            "MEDIUM",
            "Dead Letter Queue Topic Replication Factor",
            default=3,
            importance="MEDIUM",
        ),
        _key(
            "errors.deadletterqueue.context.headers.enable",
            "BOOLEAN",
            "Add the failure's context as headers.",
            ERRORS,
            8,
            "MEDIUM",
            "Enable Error Context Headers",
            default=False,
            importance="MEDIUM",
        ),
    ):
        d.define(key)
    return d


def _one_of_ignoring_case(*choices: str) -> cfg.Validator:
    def check(_name: str, value: object) -> str | None:
        ok = str(value).upper() in choices
        return None if ok else f"String must be one of (case insensitive): {', '.join(choices)}"

    return check


SOURCE = _source()
SINK = _sink()
