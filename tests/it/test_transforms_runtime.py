"""Converters, transforms and error handling on the real stack (broker, worker, Spark): a public Connect
config runs unchanged, poison records go to the dead letter queue with Connect's context headers, and
errors.tolerance=none fails the task naming the record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import Producer

from sparklink.clients.settings import client_config
from sparklink.worker.assembly import RunningWorker
from tests.helpers import create_topic, read_topic, status, task_states, unique, wait_for

JSON = "org.apache.kafka.connect.json.JsonConverter"


def produce(
    bootstrap: str, topic: str, values: list[bytes], headers: list[list[tuple[str, bytes]]] | None = None
) -> None:
    producer = Producer(client_config(bootstrap))
    for i, value in enumerate(values):
        producer.produce(topic, value=value, headers=headers[i] if headers else None)
    assert producer.flush(30) == 0


def create(worker: RunningWorker, name: str, config: dict[str, str]) -> None:
    response = httpx.post(f"{worker.url}/connectors", json={"name": name, "config": config}, timeout=60)
    assert response.status_code == 201, response.text


def lines(path: Path) -> list[str]:
    return path.read_text("utf-8").splitlines() if path.exists() else []


def test_public_connect_example_runs_unchanged(module_worker: RunningWorker, tmp_path: Path) -> None:
    # Kafka's config/connect-file-sink.properties with the JsonConverter settings of
    # connect-standalone.properties (schemas off), plus the RegexRouter example of Confluent's SMT
    # reference ("dropPrefix") and the InsertField example of Kafka's Connect docs ("InsertSource").
    # Only the file and topic names are ours.
    topic = unique("soe-Order")
    sink_file = tmp_path / "test.sink.txt"
    config = {
        "name": "local-file-sink",
        "connector.class": "FileStreamSink",
        "tasks.max": "1",
        "file": str(sink_file),
        "topics": topic,
        "key.converter": JSON,
        "value.converter": JSON,
        "key.converter.schemas.enable": "false",
        "value.converter.schemas.enable": "false",
        "transforms": "dropPrefix,InsertSource",
        "transforms.dropPrefix.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.dropPrefix.regex": "soe-(.*)",
        "transforms.dropPrefix.replacement": "$1",
        "transforms.InsertSource.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.InsertSource.static.field": "data_source",
        "transforms.InsertSource.static.value": "test-file-source",
    }
    create_topic(module_worker.config.bootstrap_servers, topic)
    create(module_worker, "local-file-sink", config)
    orders = [{"id": n, "item": f"item-{n}"} for n in range(5)]
    produce(module_worker.config.bootstrap_servers, topic, [json.dumps(o).encode() for o in orders])
    wait_for(lambda: len(lines(sink_file)) == 5, 120, "five lines in the sink file")
    assert [json.loads(line) for line in lines(sink_file)] == [{**o, "data_source": "test-file-source"} for o in orders]
    assert task_states(module_worker.url, "local-file-sink") == ["RUNNING"]


def dlq_config(topic: str, sink_file: Path, dlq: str, tolerance: str) -> dict[str, str]:
    return {
        "connector.class": "FileStreamSink",
        "file": str(sink_file),
        "topics": topic,
        "value.converter": JSON,
        "value.converter.schemas.enable": "false",
        "transforms": "tag",
        "transforms.tag.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.tag.offset.field": "offset",
        "errors.tolerance": tolerance,
        "errors.log.enable": "true",
        "errors.log.include.messages": "true",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true",
    }


POISONED = [b'{"n": 0}', b"{not json", b'{"n": 2}', b"plain text", b'{"n": 4}']


def test_poison_records_go_to_the_dead_letter_queue_and_the_task_keeps_running(
    module_worker: RunningWorker, tmp_path: Path
) -> None:
    bootstrap = module_worker.config.bootstrap_servers
    topic, dlq, sink_file = unique("poisoned"), unique("dlq"), tmp_path / "good.txt"
    create_topic(bootstrap, topic)
    create(module_worker, "tolerant", dlq_config(topic, sink_file, dlq, "all"))
    wait_for(lambda: task_states(module_worker.url, "tolerant") == ["RUNNING"], 60, "the task to run")
    produce(bootstrap, topic, POISONED)
    wait_for(lambda: len(lines(sink_file)) == 3, 120, "the three good records in the file")
    assert [json.loads(line) for line in lines(sink_file)] == [
        {"n": 0, "offset": 0},
        {"n": 2, "offset": 2},
        {"n": 4, "offset": 4},
    ]
    dead = read_topic(bootstrap, dlq, 2)
    assert [d.value() for d in dead] == [b"{not json", b"plain text"]
    for record, offset in zip(dead, (1, 3), strict=True):
        headers: dict[str, Any] = {k: v.decode() for k, v in record.headers()}
        assert headers["__connect.errors.topic"] == topic
        assert headers["__connect.errors.partition"] == "0"
        assert headers["__connect.errors.offset"] == str(offset)
        assert headers["__connect.errors.connector.name"] == "tolerant"
        assert headers["__connect.errors.task.id"] == "0"
        assert headers["__connect.errors.stage"] == "VALUE_CONVERTER"
        assert headers["__connect.errors.class.name"] == JSON
        assert headers["__connect.errors.exception.class.name"] == "org.apache.kafka.connect.errors.DataException"
        assert headers["__connect.errors.exception.message"].startswith("Converting byte[] to Kafka Connect data")
    assert task_states(module_worker.url, "tolerant") == ["RUNNING"]


def test_a_json_chain_edited_as_text_writes_its_lines_and_sends_poison_records_to_the_dead_letter_queue(
    module_worker: RunningWorker, tmp_path: Path
) -> None:
    # For a file sink, InsertField's static field and ReplaceField are edits of each value's text
    # (transforms/json_text.py); a value that is not a JSON object takes the VARIANT path and fails there.
    bootstrap = module_worker.config.bootstrap_servers
    topic, dlq, sink_file = unique("edited"), unique("dlq"), tmp_path / "edited.txt"
    config = {
        **{k: v for k, v in dlq_config(topic, sink_file, dlq, "all").items() if not k.startswith("transforms.tag.")},
        "transforms": "tag,drop",
        "transforms.tag.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.tag.static.field": "origin",
        "transforms.tag.static.value": "edited",
        "transforms.drop.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
        "transforms.drop.exclude": "payload",
        "transforms.drop.renames": "n:number",
    }
    create_topic(bootstrap, topic)
    create(module_worker, "edited", config)
    wait_for(lambda: task_states(module_worker.url, "edited") == ["RUNNING"], 60, "the task to run")
    values = [
        b'{"n": 0, "payload": "x"}',
        b"{not json",
        b'{"payload": {"a": 1}, "n": 2}',
        b"[1, 2]",
        b'{"z": {"b": 1, "a": 2.5}, "n": 4}',
    ]
    produce(bootstrap, topic, values)
    wait_for(lambda: len(lines(sink_file)) == 3, 120, "the three objects in the file")
    assert lines(sink_file) == [
        '{"number":0,"origin":"edited"}',
        '{"number":2,"origin":"edited"}',
        '{"number":4,"origin":"edited","z":{"a":2.5,"b":1}}',
    ]
    dead = read_topic(bootstrap, dlq, 2)
    assert [d.value() for d in dead] == [b"{not json", b"[1, 2]"]
    stages = [dict((k, v.decode()) for k, v in d.headers())["__connect.errors.stage"] for d in dead]
    assert stages == ["VALUE_CONVERTER", "TRANSFORMATION"]
    assert task_states(module_worker.url, "edited") == ["RUNNING"]


def test_with_tolerance_none_a_poison_record_fails_the_task_naming_it(
    module_worker: RunningWorker, tmp_path: Path
) -> None:
    bootstrap = module_worker.config.bootstrap_servers
    topic, dlq, sink_file = unique("poisoned"), unique("dlq"), tmp_path / "none.txt"
    create_topic(bootstrap, topic)
    create(module_worker, "intolerant", dlq_config(topic, sink_file, dlq, "none"))
    wait_for(lambda: task_states(module_worker.url, "intolerant") == ["RUNNING"], 60, "the task to run")
    produce(bootstrap, topic, POISONED[:2])
    wait_for(lambda: task_states(module_worker.url, "intolerant") == ["FAILED"], 120, "the task to fail")
    trace = status(module_worker.url, "intolerant")["tasks"][0]["trace"]
    assert f"topic={topic}, partition=0, offset=1" in trace
    assert "Tolerance exceeded in error handler" in trace and JSON in trace


def test_invalid_transform_configs_are_refused_with_connects_messages(module_worker: RunningWorker) -> None:
    bad = {
        "connector.class": "FileStreamSink",
        "file": "/tmp/never",
        "topics": "t",
        "transforms": "route",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    }
    response = httpx.post(f"{module_worker.url}/connectors", json={"name": unique("bad"), "config": bad}, timeout=60)
    assert response.status_code == 400
    message = response.json()["message"]
    assert 'Missing required configuration "transforms.route.regex" which has no default value.' in message
    validated = httpx.put(
        f"{module_worker.url}/connector-plugins/FileStreamSink/config/validate",
        json={**bad, "name": "bad"},
        timeout=60,
    ).json()
    assert validated["error_count"] == 2
    assert "Transforms: route" in validated["groups"]
    keys = httpx.get(
        f"{module_worker.url}/connector-plugins/org.apache.kafka.connect.transforms.Cast$Value/config", timeout=30
    ).json()
    assert [k["name"] for k in keys] == ["spec", "replace.null.with.default"]


def test_a_file_sink_reads_headers_when_a_predicate_or_its_dead_letter_queue_needs_them(
    module_worker: RunningWorker, tmp_path: Path
) -> None:
    # FileStreamSink writes values only, so alone it reads no headers; a header predicate and a DLQ
    # (whose records keep their original's headers) must still see them.
    bootstrap = module_worker.config.bootstrap_servers
    filtered, poisoned, dlq = unique("tagged"), unique("poisoned"), unique("dlq")
    for topic in (filtered, poisoned):
        create_topic(bootstrap, topic)
    create(
        module_worker,
        "skip-tagged",
        {
            "connector.class": "FileStreamSink",
            "file": str(tmp_path / "kept.txt"),
            "topics": filtered,
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "transforms": "skip",
            "transforms.skip.type": "org.apache.kafka.connect.transforms.Filter",
            "transforms.skip.predicate": "tagged",
            "predicates": "tagged",
            "predicates.tagged.type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
            "predicates.tagged.name": "skip",
        },
    )
    create(
        module_worker,
        "dlq-only",
        {
            "connector.class": "FileStreamSink",
            "file": str(tmp_path / "good.txt"),
            "topics": poisoned,
            "value.converter": JSON,
            "value.converter.schemas.enable": "false",
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": dlq,
            "errors.deadletterqueue.topic.replication.factor": "1",
        },
    )
    trace = [("trace-id", b"t-1")]
    produce(bootstrap, filtered, [b"a", b"b", b"c"], [[], [("skip", b"")], trace])
    produce(bootstrap, poisoned, [b'{"n": 0}', b"{not json"], [trace, trace])

    wait_for(lambda: lines(tmp_path / "kept.txt") == ["a", "c"], 120, "the untagged records in the file")
    dead = read_topic(bootstrap, dlq, 1)
    assert [(d.value(), d.headers()) for d in dead] == [(b"{not json", trace)]
    # The dead letter reaches its topic before the batch's good records reach the file (the sink writes
    # them after dead-lettering), so the file is waited for rather than read at once.
    wait_for(lambda: lines(tmp_path / "good.txt") == ['{"n":0}'], 60, "the good record in the file")
