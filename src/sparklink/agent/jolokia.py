"""Reads a broker's state from inside its JVM through the Jolokia JVM agent bound to loopback.

Caller: the agent's HTTP app. Proposal 048 keeps JMX off the network; Jolokia only listens on 127.0.0.1 and
is read by the agent on the same host. The LogManager recovery gauges carry `dir` (and `threadNum`) tags
and only exist while logs load, so they are read with a pattern and summed over every log dir and thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

BROKER_STATE_MBEAN = "kafka.server:type=KafkaServer,name=BrokerState"
REMAINING_LOGS_MBEAN = "kafka.log:type=LogManager,name=remainingLogsToRecover,*"
REMAINING_SEGMENTS_MBEAN = "kafka.log:type=LogManager,name=remainingSegmentsToRecover,*"


class MetricsUnavailableError(RuntimeError):
    """Jolokia could not be reached or answered with an error other than a missing MBean."""


@dataclass(frozen=True)
class BrokerMetrics:
    """What the broker reports: its state (None before the gauge is registered) and, in recovery, what is left."""

    broker_state: int | None
    remaining_logs: int | None = None
    remaining_segments: int | None = None


class JolokiaReader:
    """One broker's Jolokia endpoint (`http://127.0.0.1:<port>/jolokia/`)."""

    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 5.0) -> None:
        self.url = f"http://{host}:{port}/jolokia/"
        self._client = httpx.AsyncClient(timeout=timeout)

    async def read(self) -> BrokerMetrics:
        """The broker state and, when there are recovery gauges, their sums; one bulk request."""
        body = [
            {"type": "read", "mbean": BROKER_STATE_MBEAN, "attribute": "Value"},
            {"type": "read", "mbean": REMAINING_LOGS_MBEAN, "attribute": "Value"},
            {"type": "read", "mbean": REMAINING_SEGMENTS_MBEAN, "attribute": "Value"},
        ]
        try:
            response = await self._client.post(self.url, json=body)
            response.raise_for_status()
            state, logs, segments = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise MetricsUnavailableError(f"cannot read broker metrics from Jolokia at {self.url}: {exc}") from exc
        return BrokerMetrics(_single(state), _summed(logs), _summed(segments))

    async def aclose(self) -> None:
        await self._client.aclose()


def _single(reply: dict[str, Any]) -> int | None:
    if reply.get("status") == 404:
        return None
    if reply.get("status") != 200:
        raise MetricsUnavailableError(f"Jolokia could not read {BROKER_STATE_MBEAN}: {reply.get('error')}")
    return int(reply["value"])


def _summed(reply: dict[str, Any]) -> int | None:
    """The sum of a gauge over every MBean the pattern matched; None when none is registered."""
    if reply.get("status") != 200:
        return None
    values = reply.get("value") or {}
    if not values:
        return None
    # A recovery thread's gauge reads null until the thread picks up its first log.
    return sum(int(attrs.get("Value") or 0) for attrs in values.values())
