"""The roller's client of the broker-state agents: mutual TLS with the roller's certificate, 10 s timeouts.

Caller: `executor.KafkaRoller`, when a node did not become ready within the operation timeout. Like
Strimzi's KafkaAgentClient, any error or non-200 answer gives BrokerState(-1) and the roller keeps its old
behaviour for that node.
"""

from __future__ import annotations

import logging
import ssl
from pathlib import Path
from typing import Protocol

import httpx

from sparklink.roller.model import UNKNOWN_BROKER_STATE, BrokerState

log = logging.getLogger("sparklink.roller")


class AgentClient(Protocol):
    def broker_state(self, agent_url: str | None) -> BrokerState: ...


def client_tls_context(cert: Path, key: Path, ca_cert: Path) -> ssl.SSLContext:
    """TLS 1.3, trusting only the cluster CA, presenting the roller's certificate."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(ca_cert))
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.load_cert_chain(cert, key)
    return context


class MtlsAgentClient:
    def __init__(self, cert: Path, key: Path, ca_cert: Path, timeout: float = 10.0) -> None:
        self._client = httpx.Client(verify=client_tls_context(cert, key, ca_cert), timeout=timeout)

    def broker_state(self, agent_url: str | None) -> BrokerState:
        if not agent_url:
            return UNKNOWN_BROKER_STATE
        url = f"{agent_url.rstrip('/')}/v1/broker-state/"
        try:
            response = self._client.get(url)
        except httpx.HTTPError as exc:
            log.warning("cannot ask the agent at %s for the broker state: %s", url, exc)
            return UNKNOWN_BROKER_STATE
        if response.status_code != 200:
            log.warning("agent at %s answered %d: %s", url, response.status_code, response.text[:200])
            return UNKNOWN_BROKER_STATE
        try:
            body = response.json()
            recovery = body.get("recoveryState") or {}
            return BrokerState(
                int(body["brokerState"]),
                recovery.get("remainingLogsToRecover"),
                recovery.get("remainingSegmentsToRecover"),
            )
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("agent at %s answered something unreadable: %s", url, exc)
            return UNKNOWN_BROKER_STATE

    def close(self) -> None:
        self._client.close()
