"""The agent's HTTP API, answering exactly as Strimzi's KafkaAgent does.

Caller: `server.serve` mounts one app on both ports (mTLS external, plain loopback). Routes:
- `GET /v1/broker-state` (and `/v1/broker-state/`, which the operator's client sends): 200
  `{"brokerState": n}`, with `"recoveryState": {"remainingLogsToRecover": N, "remainingSegmentsToRecover": M}`
  when n == 2 and both gauges exist; 404 `Broker state metric not found` before the broker registers it;
- `GET /v1/ready` (and `/v1/ready/`): 204 when `3 <= n != 127`, else 503 `Readiness failed: brokerState is n`
  (404 as above);
- 503 on both when the broker's metrics cannot be read (broker down, Jolokia not up yet);
- anything else, including other API versions: 404.

One deliberate difference, for KRaft: Kafka 4.x loads and recovers logs while the broker is still STARTING
(1) - the first metadata publish runs LogManager.startup before the controller sees the broker caught up -
and RECOVERY (2) now only means "caught up, not yet unfenced". ZooKeeper-mode brokers, which Strimzi's
agent and proposal 048 were written against, reported RECOVERY during log loading. So while the LogManager's
recovery gauges exist (they are registered for exactly the duration of log loading) and the broker is not
yet RUNNING, the agent reports state 2 with `recoveryState`, and a roller that never restarts a broker in
state 2 - ours or Strimzi's - keeps its promise.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Protocol

from fastapi import FastAPI
from fastapi.responses import Response

from sparklink.agent.jolokia import BrokerMetrics, MetricsUnavailableError

RUNNING = 3
RECOVERY = 2
UNKNOWN = 127
# Strimzi's agent labels every answer, text ones included, as JSON.
CONTENT_TYPE = "application/json; charset=UTF-8"
NOT_FOUND = "Broker state metric not found"

log = logging.getLogger(__name__)


class MetricsReader(Protocol):
    async def read(self) -> BrokerMetrics: ...


# What a state route answers, given the broker's metrics and its effective state.
StateAnswer = Callable[[BrokerMetrics, int], Response]


def create_app(reader: MetricsReader, node_name: str = "broker") -> FastAPI:
    app = FastAPI(title=f"sparklink agent ({node_name})", openapi_url=None, docs_url=None, redoc_url=None)

    def state_route(path: str, *, warn_missing: bool) -> Callable[[StateAnswer], StateAnswer]:
        """Serve `answer` at `path` and `path/` with the broker's metrics and effective state; 503 when the
        metrics cannot be read, 404 when they hold no broker state yet (logged if `warn_missing`)."""

        def register(answer: StateAnswer) -> StateAnswer:
            async def endpoint() -> Response:
                try:
                    found = await reader.read()
                except MetricsUnavailableError as exc:
                    log.warning("%s: %s", node_name, exc)
                    return _text(503, f"Broker metrics cannot be read: {exc}")
                if found.broker_state is None:
                    if warn_missing:
                        log.warning("%s: %s", node_name, NOT_FOUND)
                    return _text(404, NOT_FOUND)
                return answer(found, effective_state(found))

            app.get(path)(endpoint)
            app.get(f"{path}/", include_in_schema=False)(endpoint)
            return answer

        return register

    @state_route("/v1/broker-state", warn_missing=False)
    def broker_state(found: BrokerMetrics, state: int) -> Response:
        body: dict[str, object] = {"brokerState": state}
        if state == RECOVERY and found.remaining_logs is not None and found.remaining_segments is not None:
            body["recoveryState"] = {
                "remainingLogsToRecover": found.remaining_logs,
                "remainingSegmentsToRecover": found.remaining_segments,
            }
        return _text(200, json.dumps(body, separators=(",", ":")))

    @state_route("/v1/ready", warn_missing=True)
    def ready(_found: BrokerMetrics, state: int) -> Response:
        if RUNNING <= state != UNKNOWN:
            return Response(status_code=204, media_type=CONTENT_TYPE)
        return _text(503, f"Readiness failed: brokerState is {state}")

    return app


def effective_state(found: BrokerMetrics) -> int:
    """The broker's state, reported as RECOVERY while it loads logs before RUNNING (see the module docstring)."""
    assert found.broker_state is not None
    loading = found.remaining_logs is not None and found.remaining_segments is not None
    if loading and found.broker_state < RUNNING:
        return RECOVERY
    return found.broker_state


def _text(status: int, body: str) -> Response:
    return Response(content=body, status_code=status, media_type=CONTENT_TYPE)
