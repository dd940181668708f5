"""A bounded fuzz run over the served OpenAPI schema (schemathesis): every operation, no 5xx, bad input
answered with Connect's error body, and a canary connector that keeps RUNNING, its offsets and its records.

The figures (requests, operations, status codes) are printed at the end of the module.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings

from sparklink.worker.assembly import RunningWorker
from tests.support.canary import CANARY, start, unharmed

EXAMPLES_PER_OPERATION = 20
TARGET = "fuzz-target"
STATS: dict[str, Any] = {"requests": 0, "operations": set(), "statuses": Counter()}


@pytest.fixture(scope="module")
def fuzzed(module_worker: RunningWorker) -> Iterator[RunningWorker]:
    start(module_worker)
    config = {"connector.class": "datagen", "topic": "fuzz-target", "records.per.second": "5"}
    body = {"name": TARGET, "config": config, "initial_state": "STOPPED"}
    assert httpx.post(f"{module_worker.url}/connectors", json=body, timeout=60).status_code == 201
    levels = {name: logging.getLogger(name).level for name in ("", *logging.root.manager.loggerDict)}
    yield module_worker
    for name, level in levels.items():  # the fuzzer may have changed levels through /admin/loggers
        logging.getLogger(name).setLevel(level)


def test_no_operation_answers_5xx_and_errors_have_connects_body(fuzzed: RunningWorker) -> None:
    api = schemathesis.openapi.from_url(f"{fuzzed.url}/openapi.json")
    failures: list[str] = []
    for result in api.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def send(case: Any) -> None:
            if case.path_parameters and "name" in case.path_parameters:
                # Every other request addresses a real (stopped) connector, so the fuzzer reaches past
                # the 404s; the canary is the witness, never a target.
                target = TARGET if STATS["requests"] % 2 else case.path_parameters["name"]
                case.path_parameters["name"] = f"{CANARY}-not" if target == CANARY else target
            response = case.call(base_url=fuzzed.url, timeout=60)
            STATS["requests"] += 1
            STATS["operations"].add(f"{case.method.upper()} {case.path}")
            STATS["statuses"][response.status_code] += 1
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path}: {response.status_code} {response.text[:300]}")
            elif response.status_code >= 400 and case.method.upper() != "HEAD":
                body = response.json()
                if set(body) != {"error_code", "message"} or body["error_code"] != response.status_code:
                    failures.append(f"{case.method} {case.formatted_path}: not Connect's error body: {body}")

        send()
    assert not failures, "\n".join(failures[:20])


def test_the_fuzzed_worker_covered_every_operation_and_the_canary_survived(fuzzed: RunningWorker) -> None:
    operations = {
        f"{method.upper()} {path}"
        for path, item in httpx.get(f"{fuzzed.url}/openapi.json", timeout=10).json()["paths"].items()
        for method in item
    }
    print(
        f"\nfuzz: {STATS['requests']} requests over {len(STATS['operations'])} of {len(operations)} operations; "
        f"statuses {dict(sorted(STATS['statuses'].items()))}; 5xx seen: "
        f"{sum(n for s, n in STATS['statuses'].items() if s >= 500)}"
    )
    assert STATS["operations"] == operations
    unharmed(fuzzed)
