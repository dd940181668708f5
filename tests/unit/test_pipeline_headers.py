"""When a sink's pipeline needs the records' headers (the runtime reads the topic without them otherwise)."""

from __future__ import annotations

from sparklink.transforms.pipeline import Pipeline, compile_pipeline

FILTER = {
    "transforms": "skip",
    "transforms.skip.type": "org.apache.kafka.connect.transforms.Filter",
    "transforms.skip.predicate": "tagged",
    "predicates": "tagged",
    "predicates.tagged.type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
    "predicates.tagged.name": "skip",
}
DLQ = {"errors.tolerance": "all", "errors.deadletterqueue.topic.name": "dlq"}


def pipeline(**config: str) -> Pipeline:
    return compile_pipeline({"connector.class": "FileStreamSink", "topics": "t", **config})


def test_converters_alone_need_no_headers() -> None:
    assert not pipeline().needs_headers


def test_a_transform_may_read_headers() -> None:
    assert pipeline(**FILTER).needs_headers


def test_a_dead_letter_queue_keeps_the_original_headers() -> None:
    assert pipeline(**DLQ).needs_headers
