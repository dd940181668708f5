"""Transform, predicate, converter and error-handling configs are validated with Connect's messages
(ConfigDef texts, the transforms' own ConfigExceptions, ConnectorConfig's alias rules); no Spark."""

from __future__ import annotations

import pytest

from sparklink.worker import connector_config
from sparklink.worker.transforms import catalog, enrichment
from sparklink.worker.transforms.pipeline import PipelineConfigError, compile_pipeline

PKG = "org.apache.kafka.connect.transforms"


def errors_of(config: dict[str, str], kind: str = "sink") -> dict[str, list[str]]:
    return {k: v for k, v in enrichment.validate(config, kind).items() if v}


@pytest.mark.parametrize(
    ("config", "key", "message"),
    [
        # ConnectorConfig: aliases, the type key, negate without predicate.
        (
            {"transforms": "a,a", "transforms.a.type": f"{PKG}.Filter"},
            "transforms",
            "Invalid value [a, a] for configuration transforms: Duplicate alias provided.",
        ),
        (
            {"transforms": "a"},
            "transforms.a.type",
            'Missing required configuration "transforms.a.type" which has no default value.',
        ),
        (
            {"transforms": "a", "transforms.a.type": "com.example.Nope"},
            "transforms.a.type",
            "Invalid value com.example.Nope for configuration transforms.a.type: Class com.example.Nope could not be "
            "found.",
        ),
        (
            {"transforms": "a", "transforms.a.type": f"{PKG}.Filter", "transforms.a.negate": "true"},
            "transforms.a.type",
            "Config 'transforms.a.negate' was provided but there is no config 'transforms.a.predicate' defining a "
            "predicate to be negated.",
        ),
        (
            {"transforms": "a", "transforms.a.type": f"{PKG}.Filter", "transforms.a.predicate": "p"},
            "transforms.a.predicate",
            "Invalid value p for configuration transforms.a.predicate: no predicate with this alias is listed in "
            "'predicates'",
        ),
        # The transforms' ConfigDefs, prefixed as Connect embeds them.
        (
            {"transforms": "r", "transforms.r.type": f"{PKG}.RegexRouter", "transforms.r.regex": "x"},
            "transforms.r.replacement",
            'Missing required configuration "transforms.r.replacement" which has no default value.',
        ),
        (
            {"transforms": "m", "transforms.m.type": f"{PKG}.MaskField$Value", "transforms.m.fields": ""},
            "transforms.m.fields",
            "Invalid value [] for configuration transforms.m.fields: Empty list",
        ),
        (
            {"transforms": "c", "transforms.c.type": f"{PKG}.Cast$Value", "transforms.c.spec": "a:bytes"},
            "transforms.c.spec",
            "Cast transformation does not support casting to BYTES; supported types are [INT8, INT16, INT32, INT64, "
            "FLOAT32, FLOAT64, BOOLEAN, STRING]",
        ),
        (
            {"transforms": "c", "transforms.c.type": f"{PKG}.Cast$Value", "transforms.c.spec": "a:foo"},
            "transforms.c.spec",
            "Invalid type found in casting spec: foo",
        ),
        (
            {"transforms": "c", "transforms.c.type": f"{PKG}.Cast$Value", "transforms.c.spec": "int8,a:int16"},
            "transforms.c.spec",
            "Cast transformations that specify a type to cast the entire value to may only specify a single cast in "
            "their spec",
        ),
        (
            {
                "transforms": "t",
                "transforms.t.type": f"{PKG}.TimestampConverter$Value",
                "transforms.t.target.type": "x",
            },
            "transforms.t.target.type",
            "Invalid value x for configuration transforms.t.target.type: String must be one of: string, unix, Date, "
            "Time, Timestamp",
        ),
        # The transforms' own checks (Connect's configure()), reported on the type key.
        (
            {"transforms": "i", "transforms.i.type": f"{PKG}.InsertField$Value"},
            "transforms.i.type",
            "No field insertion configured",
        ),
        (
            {"transforms": "i", "transforms.i.type": f"{PKG}.InsertField$Value", "transforms.i.static.field": "s"},
            "transforms.i.type",
            "No value specified for static field: s",
        ),
        (
            {
                "transforms": "t",
                "transforms.t.type": f"{PKG}.TimestampConverter$Value",
                "transforms.t.target.type": "string",
            },
            "transforms.t.type",
            "TimestampConverter requires format option to be specified when using string timestamps",
        ),
        (
            {"transforms": "s", "transforms.s.type": f"{PKG}.SetSchemaMetadata$Value"},
            "transforms.s.type",
            "Neither schema name nor version configured",
        ),
        (
            {
                "transforms": "h",
                "transforms.h.type": f"{PKG}.HeaderFrom$Value",
                "transforms.h.fields": "a,b",
                "transforms.h.headers": "x",
                "transforms.h.operation": "copy",
            },
            "transforms.h.type",
            "'fields' config must have the same number of elements as 'headers' config.",
        ),
        # Predicates (TopicNameMatchesTest, HasHeaderKeyTest).
        (
            {"predicates": "p", "predicates.p.type": f"{PKG}.predicates.TopicNameMatches", "predicates.p.pattern": ""},
            "predicates.p.pattern",
            "Invalid value  for configuration predicates.p.pattern: String must be non-empty",
        ),
        (
            {"predicates": "p", "predicates.p.type": f"{PKG}.predicates.HasHeaderKey", "predicates.p.name": ""},
            "predicates.p.name",
            "Invalid value  for configuration predicates.p.name: String must be non-empty",
        ),
        # Converters and error handling.
        (
            {"value.converter": "com.example.Converter"},
            "value.converter",
            "Invalid value com.example.Converter for configuration value.converter: Class com.example.Converter could "
            "not be found.",
        ),
        (
            {
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable": "maybe",
            },
            "value.converter.schemas.enable",
            "Invalid value maybe for configuration schemas.enable: Expected value to be either true or false",
        ),
        (
            {"topics": "orders,dlq", "errors.deadletterqueue.topic.name": "dlq"},
            "topics",
            "The DLQ topic 'dlq' may not be included in the list of topics ('topics=[orders, dlq]') consumed by the "
            "connector",
        ),
        (
            {"errors.tolerance": "some"},
            "errors.tolerance",
            "Invalid value some for configuration errors.tolerance: String must be one of: none, all",
        ),
        (
            {"transforms": "q", "transforms.q.type": "sql", "transforms.q.statement": "SELECT 1"},
            "transforms.q.statement",
            "The SQL statement must read from the table 'records', e.g. SELECT * FROM records WHERE ...",
        ),
    ],
)
def test_invalid_configs_get_connects_messages(config: dict[str, str], key: str, message: str) -> None:
    assert message in errors_of(config).get(key, []), errors_of(config)


def test_topic_name_matches_rejects_an_invalid_regex() -> None:
    config = {"predicates": "p", "predicates.p.type": f"{PKG}.predicates.TopicNameMatches", "predicates.p.pattern": "["}
    (message,) = errors_of(config)["predicates.p.pattern"]
    assert message.startswith("Invalid value [ for configuration predicates.p.pattern: Invalid regex")


def test_a_valid_chain_has_no_errors_and_its_keys_are_in_the_definition() -> None:
    config = {
        "transforms": "route,insert,drop",
        "transforms.route.type": f"{PKG}.RegexRouter",
        "transforms.route.regex": "(.*)",
        "transforms.route.replacement": "$1-copy",
        "transforms.insert.type": "InsertField$Value",
        "transforms.insert.static.field": "origin",
        "transforms.insert.static.value": "sparklink",
        "transforms.drop.type": f"{PKG}.Filter",
        "transforms.drop.predicate": "tombstones",
        "predicates": "tombstones",
        "predicates.tombstones.type": f"{PKG}.predicates.RecordIsTombstone",
        "value.converter": "JsonConverter",
        "value.converter.schemas.enable": "false",
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": "dlq",
    }
    assert errors_of(config) == {}
    keys = enrichment.enriched(config, "sink").keys
    assert keys["transforms.route.regex"].group == "Transforms: route"
    assert keys["transforms.drop.negate"].default is False
    assert keys["predicates.tombstones.type"].type == "CLASS"
    assert keys["errors.deadletterqueue.context.headers.enable"].group == "Error Handling"
    assert "errors.deadletterqueue.topic.name" not in enrichment.enriched(config, "source").keys


def test_compiling_a_bad_config_names_the_key() -> None:
    with pytest.raises(PipelineConfigError, match=r"transforms\.r\.replacement"):
        compile_pipeline({"transforms": "r", "transforms.r.type": f"{PKG}.RegexRouter", "transforms.r.regex": "x"})


def test_converters_come_from_the_connector_else_the_worker() -> None:
    json = "org.apache.kafka.connect.json.JsonConverter"
    worker = {"value.converter": json, "value.converter.schemas.enable": "false"}
    inherited = compile_pipeline({}, worker)
    assert inherited.value_converter.class_name == json and inherited.value_converter.config["schemas.enable"] is False
    own = compile_pipeline({"value.converter": "org.apache.kafka.connect.storage.StringConverter"}, worker)
    assert own.value_converter.class_name == "org.apache.kafka.connect.storage.StringConverter"
    default = compile_pipeline({}, {})
    assert default.key_converter.class_name == "org.apache.kafka.connect.converters.ByteArrayConverter"
    assert default.header_converter.class_name == "org.apache.kafka.connect.storage.SimpleHeaderConverter"


def test_catalog_lists_connects_plugin_types_in_connects_order() -> None:
    kinds = [kind for _cls, kind in catalog.listing()]
    assert kinds == sorted(kinds, key=["transformation", "predicate", "converter", "header_converter"].index)
    names = {cls.class_name for cls, _kind in catalog.listing()}
    for expected in (
        f"{PKG}.Cast$Key",
        f"{PKG}.TimestampConverter$Value",
        f"{PKG}.HeaderFrom$Value",
        f"{PKG}.predicates.HasHeaderKey",
        "org.apache.kafka.connect.storage.SimpleHeaderConverter",
        "sql",
    ):
        assert expected in names


def test_the_error_policy_is_read_through_the_connector_definition() -> None:
    sink = compile_pipeline({}, {}, "sink").policy
    declared = connector_config.SINK.keys
    assert sink.tolerance == declared["errors.tolerance"].default and not sink.tolerant
    assert sink.retry_timeout_ms == declared["errors.retry.timeout"].default
    assert sink.retry_delay_max_ms == declared["errors.retry.delay.max.ms"].default
    assert sink.log_enable is declared["errors.log.enable"].default and sink.dlq is None
    config = {
        "errors.tolerance": "all",
        "errors.retry.timeout": "-1",
        "errors.retry.delay.max.ms": "5",
        "errors.log.include.messages": "true",
        "errors.deadletterqueue.topic.name": " dlq ",
        "errors.deadletterqueue.topic.replication.factor": "2",
    }
    policy = compile_pipeline(config, {}, "sink").policy
    assert (policy.tolerant, policy.retry_timeout_ms, policy.retry_delay_max_ms) == (True, -1, 5)
    assert policy.log_include_messages and not policy.log_enable
    assert policy.dlq is not None and (policy.dlq.topic, policy.dlq.replication_factor) == ("dlq", 2)
    assert policy.dlq.context_headers is declared["errors.deadletterqueue.context.headers.enable"].default
    # SourceConnectorConfig has no dead letter queue keys.
    assert compile_pipeline(config, {}, "source").policy.dlq is None
