"""The agent's answers for each broker state, with an in-memory metrics reader (the HTTP contract only)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from sparklink.agent.app import create_app
from sparklink.agent.jolokia import BrokerMetrics, MetricsUnavailableError


class Reader:
    def __init__(self, metrics: BrokerMetrics | None) -> None:
        self.metrics = metrics

    async def read(self) -> BrokerMetrics:
        if self.metrics is None:
            raise MetricsUnavailableError("connection refused")
        return self.metrics


def answer(metrics: BrokerMetrics | None, path: str) -> tuple[int, str]:
    response = TestClient(create_app(Reader(metrics))).get(path)
    if path.startswith(("/v1/broker-state", "/v1/ready")):
        assert (
            response.headers.get("content-type", "application/json; charset=UTF-8") == "application/json; charset=UTF-8"
        )
    return response.status_code, response.text


@pytest.mark.parametrize("path", ["/v1/broker-state", "/v1/broker-state/"])
def test_broker_state_as_strimzis_agent_answers_it(path: str) -> None:
    assert answer(BrokerMetrics(3), path) == (200, '{"brokerState":3}')
    assert answer(BrokerMetrics(2, 4, 17), path) == (
        200,
        '{"brokerState":2,"recoveryState":{"remainingLogsToRecover":4,"remainingSegmentsToRecover":17}}',
    )
    assert answer(BrokerMetrics(2), path) == (200, '{"brokerState":2}')
    assert answer(BrokerMetrics(None), path) == (404, "Broker state metric not found")
    assert answer(None, path)[0] == 503


def test_a_kraft_broker_loading_logs_while_starting_is_reported_in_recovery() -> None:
    assert answer(BrokerMetrics(1, 3, 9), "/v1/broker-state") == (
        200,
        '{"brokerState":2,"recoveryState":{"remainingLogsToRecover":3,"remainingSegmentsToRecover":9}}',
    )
    assert answer(BrokerMetrics(1, 3, 9), "/v1/ready") == (503, "Readiness failed: brokerState is 2")
    assert answer(BrokerMetrics(1), "/v1/broker-state") == (200, '{"brokerState":1}')


def test_readiness() -> None:
    assert answer(BrokerMetrics(3), "/v1/ready") == (204, "")
    assert answer(BrokerMetrics(6), "/v1/ready") == (204, "")
    assert answer(BrokerMetrics(127), "/v1/ready") == (503, "Readiness failed: brokerState is 127")
    assert answer(BrokerMetrics(1), "/v1/ready") == (503, "Readiness failed: brokerState is 1")
    assert answer(BrokerMetrics(None), "/v1/ready") == (404, "Broker state metric not found")
    assert answer(None, "/v1/ready")[0] == 503


def test_other_paths_and_api_versions_are_not_found() -> None:
    for path in ("/v2/broker-state", "/v1/brokerstate", "/", "/v1"):
        assert answer(BrokerMetrics(3), path)[0] == 404
