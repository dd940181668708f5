"""A source chain's topics known before any record (direct_run.routed_topics): a chain that keeps
every record and routes by the topic alone runs inside the task's direct query, and the topics it
writes (KIP-558) are these; any other chain must answer None, so that its task takes the batch path,
which learns each batch's topics from its records."""

from __future__ import annotations

from typing import Any

import pytest

from sparklink.worker.execution.direct_run import routed_topics
from sparklink.worker.transforms.pipeline import compile_pipeline

ROUTER = "org.apache.kafka.connect.transforms.RegexRouter"
JSON = {"value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false"}


def routed(spark: Any, config: dict[str, str], topics: list[str] | None) -> list[str] | None:
    return routed_topics(compile_pipeline({**JSON, **config}, {}, "source", "c", 0), topics, spark)


def router(alias: str, regex: str, replacement: str) -> dict[str, str]:
    prefix = f"transforms.{alias}."
    return {prefix + "type": ROUTER, prefix + "regex": regex, prefix + "replacement": replacement}


def test_a_router_chain_with_field_edits_sends_each_topic_to_its_route(spark: Any) -> None:
    config = {
        "transforms": "route,origin,trim",
        **router("route", "orders-(.*)", "$1-orders"),
        "transforms.origin.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.origin.static.field": "origin",
        "transforms.origin.static.value": "datagen",
        "transforms.trim.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
        "transforms.trim.exclude": "payload",
    }
    assert routed(spark, config, ["orders-eu", "orders-us", "other"]) == ["eu-orders", "other", "us-orders"]


def test_a_router_under_a_topic_predicate_routes_only_the_matching_topics(spark: Any) -> None:
    config = {
        "transforms": "route",
        **router("route", "(.*)", "$1-copy"),
        "transforms.route.predicate": "eu",
        "predicates": "eu",
        "predicates.eu.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicates.eu.pattern": ".*-eu",
    }
    assert routed(spark, config, ["a-eu", "a-us"]) == ["a-eu-copy", "a-us"]


def test_field_edits_alone_keep_the_tasks_topics(spark: Any) -> None:
    config = {
        "transforms": "origin",
        "transforms.origin.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.origin.static.field": "origin",
        "transforms.origin.static.value": "x",
    }
    assert routed(spark, config, ["t"]) == ["t"]


@pytest.mark.parametrize(
    "config",
    [
        pytest.param(
            {"transforms": "drop", "transforms.drop.type": "org.apache.kafka.connect.transforms.Filter"},
            id="a Filter drops records",
        ),
        pytest.param(
            {
                "transforms": "stamp",
                "transforms.stamp.type": "org.apache.kafka.connect.transforms.TimestampRouter",
            },
            id="TimestampRouter reads each record's timestamp",
        ),
        pytest.param(
            {
                "transforms": "route",
                **router("route", "(.*)", "$1-tombstones"),
                "transforms.route.predicate": "dead",
                "predicates": "dead",
                "predicates.dead.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
            },
            id="a predicate on the value decides the route",
        ),
        pytest.param(
            {"transforms": "route", **router("route", "(.*)", "$1-x"), "errors.tolerance": "all"},
            id="errors.tolerance=all skips failing records",
        ),
    ],
)
def test_a_chain_whose_topics_or_records_depend_on_the_records_is_not_known_up_front(
    spark: Any, config: dict[str, str]
) -> None:
    assert routed(spark, config, ["t"]) is None


def test_a_task_that_does_not_name_its_topics_is_not_known_up_front(spark: Any) -> None:
    assert routed(spark, {"transforms": "route", **router("route", "(.*)", "$1-x")}, None) is None
