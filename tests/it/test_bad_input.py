"""The adversarial reproductions of issue 7, one per defect: each gets a precise 4xx (or Connect's own
answer), and a running canary connector is unharmed (RUNNING, offsets intact, records flowing)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest

from sparklink.worker.assembly import RunningWorker
from tests.helpers import task_states, unique, wait_for
from tests.support.canary import CANARY, start, unharmed


@pytest.fixture(scope="module")
def canary(module_worker: RunningWorker) -> Iterator[RunningWorker]:
    start(module_worker)
    yield module_worker
    httpx.delete(f"{module_worker.url}/connectors/{CANARY}", timeout=60)


def error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error_code", "message"} and body["error_code"] == status
    return str(body["message"])


def names(worker: RunningWorker) -> list[str]:
    listed: list[str] = httpx.get(f"{worker.url}/connectors", timeout=10).json()
    return listed


def datagen(topic: str = "t") -> dict[str, str]:
    return {"connector.class": "datagen", "topic": topic, "records.per.second": "5"}


def test_1_names_beyond_latin1_are_served_and_non_string_names_refused(canary: RunningWorker) -> None:
    url, name = canary.url, f"adv-\U0001f600-{unique('n')}"
    created = httpx.post(f"{url}/connectors", json={"name": name, "config": datagen()}, timeout=60)
    assert created.status_code == 201
    assert created.headers["location"] == f"{url}/connectors/{quote(name, safe='')}"
    assert httpx.get(created.headers["location"], timeout=10).json()["name"] == name
    assert httpx.delete(created.headers["location"], timeout=60).status_code == 204
    assert "must be a JSON string" in error(
        httpx.post(f"{url}/connectors", json={"name": ["a"], "config": datagen()}), 400
    )
    assert names(canary) == [CANARY]
    unharmed(canary)


def test_2_deep_json_and_lone_surrogates_are_400_on_every_body_endpoint(canary: RunningWorker) -> None:
    url = canary.url
    deep = "[" * 990 + "]" * 990
    endpoints = [
        ("POST", "/connectors"),
        ("PUT", "/connectors/deep/config"),
        ("PATCH", "/connectors/deep/config"),
        ("PUT", "/connector-plugins/datagen/config/validate"),
        ("PATCH", f"/connectors/{CANARY}/offsets"),
        ("PUT", "/admin/loggers/root"),
    ]
    for method, path in endpoints:
        response = httpx.request(method, f"{url}{path}", content=deep, headers={"Content-Type": "application/json"})
        assert "nested deeper than 64 levels" in error(response, 400), path
    surrogate = '"\\ud800"'
    for method, path, raw in [
        ("POST", "/connectors", '{"name": ' + surrogate + ', "config": {"connector.class": "datagen"}}'),
        ("PUT", "/connectors/s/config", '{"connector.class": "datagen", "topic": ' + surrogate + "}"),
        ("PUT", "/connector-plugins/datagen/config/validate", '{"connector.class": ' + surrogate + "}"),
    ]:
        response = httpx.request(method, f"{url}{path}", content=raw, headers={"Content-Type": "application/json"})
        assert "unpaired UTF-16 surrogate" in error(response, 400), path
    assert names(canary) == [CANARY]
    unharmed(canary)


def test_3_a_10mb_config_is_413_and_stores_nothing(canary: RunningWorker) -> None:
    body = {"name": "huge", "config": {**datagen(), "padding": "x" * 10_000_000}}
    assert "over the limit" in error(httpx.post(f"{canary.url}/connectors", json=body, timeout=60), 413)
    assert names(canary) == [CANARY]
    unharmed(canary)


POSITIONS = ['"abc"', "-1", "1e30", "NaN", "Infinity", "true", "null", "{}"]


def test_4_offsets_that_datagen_cannot_use_are_refused_and_get_offsets_keeps_working(canary: RunningWorker) -> None:
    url, name = canary.url, unique("stopped")
    body = {"name": name, "config": datagen(), "initial_state": "STOPPED"}
    assert httpx.post(f"{url}/connectors", json=body, timeout=60).status_code == 201
    headers = {"Content-Type": "application/json"}
    poisoned = '{"offsets": [{"partition": {"k": "\\ud800"}, "offset": {"position": 1}}]}'
    error(httpx.patch(f"{url}/connectors/{name}/offsets", content=poisoned, headers=headers), 400)
    for position in POSITIONS:
        raw = '{"offsets": [{"partition": {"task": 0}, "offset": {"position": ' + position + "}}]}"
        message = error(httpx.patch(f"{url}/connectors/{name}/offsets", content=raw, headers=headers), 400)
        assert "position" in message or "JSON" in message, (position, message)
    assert httpx.get(f"{url}/connectors/{name}/offsets", timeout=10).json() == {"offsets": []}
    good = '{"offsets": [{"partition": {"task": 0}, "offset": {"position": 7}}]}'
    assert httpx.patch(f"{url}/connectors/{name}/offsets", content=good, headers=headers).status_code == 200
    assert httpx.delete(f"{url}/connectors/{name}", timeout=60).status_code == 204
    unharmed(canary)


def test_5_url_names_with_control_characters_are_refused_and_spaces_are_addressable(canary: RunningWorker) -> None:
    url = canary.url
    for raw in ("a%0Ab", "a%00b", "a%C2%85b"):
        message = error(httpx.put(f"{url}/connectors/{raw}/config", json=datagen(), timeout=60), 400)
        assert "String may not contain control sequences" in message
    posted = httpx.post(f"{url}/connectors", json={"name": "a\x85b", "config": datagen()}, timeout=60)
    assert "control sequences but had the following ASCII chars: 133" in error(posted, 400)
    spaced = httpx.put(f"{url}/connectors/%20sp%20/config", json=datagen(), timeout=60)
    assert spaced.status_code == 201 and spaced.headers["location"] == f"{url}/connectors/%20sp%20"
    assert httpx.delete(spaced.headers["location"], timeout=60).status_code == 204
    assert names(canary) == [CANARY]
    unharmed(canary)


def test_6_tasks_max_is_bounded_by_the_worker(canary: RunningWorker) -> None:
    body = {"name": "many", "config": {**datagen(), "tasks.max": "1000000000", "records.per.second": "1000000000"}}
    message = error(httpx.post(f"{canary.url}/connectors", json=body, timeout=60), 400)
    assert "Invalid value 1000000000 for configuration tasks.max: Value must be no more than 256" in message
    assert "sparklink.tasks.max.limit" in message
    assert names(canary) == [CANARY]
    unharmed(canary)


def test_7_names_that_cannot_be_addressed_are_refused(canary: RunningWorker) -> None:
    for name in ("adv/a", "/adv", "../adv", ".", ".."):
        message = error(httpx.post(f"{canary.url}/connectors", json={"name": name, "config": datagen()}), 400)
        assert "cannot be used" in message
    assert names(canary) == [CANARY]
    unharmed(canary)


def test_8_names_that_sanitise_alike_run_side_by_side(canary: RunningWorker) -> None:
    url, base = canary.url, unique("adv")
    pair = [f"{base};x", f"{base}+x"]
    for name in pair:
        assert httpx.post(f"{url}/connectors", json={"name": name, "config": datagen(unique("t"))}).status_code == 201
    for name in pair:
        wait_for(lambda n=name: task_states(url, quote(n, safe="")) == ["RUNNING"], 90, f"{name} RUNNING")
    for name in pair:
        assert httpx.delete(f"{url}/connectors/{quote(name, safe='')}", timeout=60).status_code == 204
    unharmed(canary)


def _counts() -> tuple[int, int]:
    return threading.active_count(), len(os.listdir("/proc/self/fd"))


def test_9_creating_and_deleting_connectors_leaks_no_threads_or_files(canary: RunningWorker) -> None:
    url = canary.url

    def cycle(i: int) -> None:
        name = f"cycle-{i}"
        assert httpx.post(f"{url}/connectors", json={"name": name, "config": datagen(unique("c"))}).status_code == 201
        # Until its first batch, the task's query has not called back into Python yet.
        wait_for(lambda: canary.stores.offsets.get(name), 90, f"{name}'s first batch")
        assert httpx.delete(f"{url}/connectors/{name}", timeout=60).status_code == 204

    for i in range(2):  # warm-up: pools and caches reach their size
        cycle(i)
    threads, fds = _counts()
    cycles = 8
    for i in range(2, 2 + cycles):
        cycle(i)
    after_threads, after_fds = _counts()
    # One leaked thread and socket per cycle would add 8; pools may still breathe by a couple.
    assert after_threads - threads <= 3, (threads, after_threads)
    assert after_fds - fds <= 3, (fds, after_fds)
    unharmed(canary)


def test_11_smaller_defects(canary: RunningWorker) -> None:
    url = canary.url
    not_allowed = httpx.delete(f"{url}/connector-plugins", timeout=10)
    assert error(not_allowed, 405) == "HTTP 405 Method Not Allowed" and not_allowed.headers["allow"] == "GET"
    only = httpx.get(f"{url}/connector-plugins", params={"connectorsOnly": "AAA"}, timeout=10)
    assert error(only, 400) == "Query parameter connectorsOnly must be true or false, not 'AAA'"
    spaced = httpx.post(f"{url}/connectors/{CANARY}/restart?includeTasks=%20true%20", timeout=10)
    assert error(spaced, 400) == "Query parameter includeTasks must be true or false, not ' true '"
    # Apache Kafka Connect 4.3.1 answers these for an unknown connector (checked against a running
    # 4.3.1 worker and AbstractHerder#connectorActiveTopics): no 404, an empty list and a no-op.
    missing = httpx.get(f"{url}/connectors/missing/topics", timeout=10)
    assert missing.status_code == 200 and missing.json() == {"missing": {"topics": []}}
    assert httpx.put(f"{url}/connectors/missing/topics/reset", timeout=10).status_code == 202
    nulled = httpx.post(f"{url}/connectors", json={"name": "nulled", "config": {**datagen(), "tasks.max": None}})
    message = error(nulled, 400)
    assert "Invalid value null for configuration tasks.max: Value must be non-null" in message
    assert "Null value can not be supplied as the configuration value." in message
    schema = httpx.get(f"{url}/openapi.json", timeout=10).json()
    create = schema["paths"]["/connectors"]["post"]
    assert create["requestBody"]["content"]["application/json"]["schema"]["required"] == ["name", "config"]
    assert {"400", "404", "409", "500"} <= set(create["responses"])
    restart = schema["paths"]["/connectors/{name}/restart"]["post"]
    assert {p["name"] for p in restart["parameters"]} == {"name", "includeTasks", "onlyFailed"}
    assert json.dumps(schema).count('"422"') == 0
    assert names(canary) == [CANARY]
    unharmed(canary)
