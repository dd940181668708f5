"""`/connector-plugins` (list, config, validate) and `/admin/loggers`, with Connect's shapes and codes."""

from __future__ import annotations

import logging

import httpx

from sparklink.worker.assembly import RunningWorker
from tests.it.test_connect_shapes import CONFIG_KEY_INFO


def test_list_plugins(module_worker: RunningWorker) -> None:
    for params in ({}, {"connectorsOnly": "true"}, {"connectorsOnly": "False"}):
        plugins = httpx.get(f"{module_worker.url}/connector-plugins/", params=params, timeout=10).json()
        datagen = [p for p in plugins if p["class"] == "sparklink.connectors.datagen.DatagenConnector"]
        assert datagen == [
            {
                "class": "sparklink.connectors.datagen.DatagenConnector",
                "type": "source",
                "version": datagen[0]["version"],
            }
        ]
        if params.get("connectorsOnly") == "False":
            # Connect's order: connectors, then transformations, predicates, converters, header converters.
            kinds = list(dict.fromkeys(p["type"] for p in plugins))
            assert kinds[-4:] == ["transformation", "predicate", "converter", "header_converter"]
            classes = {p["class"] for p in plugins}
            assert "org.apache.kafka.connect.transforms.InsertField$Value" in classes
            assert "org.apache.kafka.connect.json.JsonConverter" in classes
        else:
            assert {p["type"] for p in plugins} <= {"source", "sink"}


def test_plugin_config_lists_plugin_keys_then_base_keys(module_worker: RunningWorker) -> None:
    keys = httpx.get(f"{module_worker.url}/connector-plugins/datagen/config", timeout=10).json()
    names = [k["name"] for k in keys]
    assert names.index("topic") < names.index("connector.class")
    topic = next(k for k in keys if k["name"] == "topic")
    assert topic["required"] is True and topic["default_value"] is None and topic["type"] == "STRING"
    rate = next(k for k in keys if k["name"] == "records.per.second")
    assert rate["required"] is False and rate["default_value"] == "10" and rate["type"] == "INT"
    assert set(rate) == CONFIG_KEY_INFO
    missing = httpx.get(f"{module_worker.url}/connector-plugins/NoSuch/config", timeout=10)
    assert missing.status_code == 404 and missing.json()["message"] == "Unknown plugin NoSuch."


def test_validate_reports_errors_with_200(module_worker: RunningWorker) -> None:
    url = f"{module_worker.url}/connector-plugins/DatagenConnector/config/validate"
    good = httpx.put(url, json={"connector.class": "DatagenConnector", "name": "v", "topic": "t"}, timeout=10).json()
    assert good["name"] == "DatagenConnector" and good["error_count"] == 0
    bad = httpx.put(
        url,
        json={"connector.class": "DatagenConnector", "name": "v", "tasks.max": "0", "records.per.second": "x"},
        timeout=10,
    )
    assert bad.status_code == 200
    body = bad.json()
    # records.per.second=x gives Connect's two errors (not a number, then null for the range check).
    assert body["error_count"] == 4
    errors = {c["value"]["name"]: c["value"]["errors"] for c in body["configs"]}
    assert errors["topic"] == ['Missing required configuration "topic" which has no default value.']
    assert errors["tasks.max"] == ["Invalid value 0 for configuration tasks.max: Value must be at least 1"]
    mismatch = httpx.put(url, json={"connector.class": "FileStreamSink", "name": "v"}, timeout=10)
    assert mismatch.status_code == 400
    assert (
        mismatch.json()["message"]
        == "Included connector type FileStreamSink does not match request type DatagenConnector"
    )
    no_class = httpx.put(url, json={"name": "v", "password": "s3cret"}, timeout=10)
    assert no_class.status_code == 400 and no_class.json()["message"] == "Connector config contains no connector type"


def test_loggers_can_be_read_and_changed_at_run_time(module_worker: RunningWorker) -> None:
    url = f"{module_worker.url}/admin/loggers"
    assert httpx.get(url, timeout=10).json()["root"]["level"] in {"INFO", "WARN", "ERROR", "DEBUG"}
    changed = httpx.put(f"{url}/sparklink.worker.herder", json={"level": "DEBUG"}, timeout=10)
    assert changed.status_code == 200 and "sparklink.worker.herder" in changed.json()
    assert logging.getLogger("sparklink.worker.herder.herder").getEffectiveLevel() == logging.DEBUG
    entry = httpx.get(f"{url}/sparklink.worker.herder", timeout=10).json()
    assert entry["level"] == "DEBUG" and isinstance(entry["last_modified"], int)
    assert (
        httpx.put(
            f"{url}/sparklink.worker.herder", json={"level": "INFO"}, params={"scope": "cluster"}, timeout=10
        ).status_code
        == 204
    )
    assert httpx.get(f"{url}/sparklink.worker.herder", timeout=10).json()["level"] == "INFO"
    invalid = httpx.put(f"{url}/sparklink.worker.herder", json={"level": "LOUD"}, timeout=10)
    assert invalid.status_code == 404 and invalid.json()["message"] == "invalid log level 'LOUD'."
    missing = httpx.put(f"{url}/sparklink.worker.herder", json={}, timeout=10)
    assert missing.status_code == 400
    assert missing.json()["message"] == "Desired 'level' parameter was not specified in request."
    assert httpx.get(f"{url}/no.such.logger", timeout=10).status_code == 404
