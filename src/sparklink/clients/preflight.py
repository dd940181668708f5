"""A preflight check: one metadata request with a client's settings, and an error that says what to fix.

`verify(settings, timeout)` asks the brokers for metadata through confluent-kafka. On failure it reads
what librdkafka reported (its error callback and its log lines) and raises `KafkaAccessError` naming the
broker, the protocol and SASL mechanism, what happened and the setting to check, for: a wrong password,
an untrusted server certificate, an expired, rejected or missing client certificate, a mechanism the
listener does not enable, and a client speaking the wrong protocol (plaintext to TLS, TLS to plaintext,
SASL to a non-SASL listener or the reverse). Definite failures are raised as soon as they are seen; an
unreachable broker is reported at `timeout` (librdkafka keeps retrying, so nothing hangs past it).
Callers: the worker's start, `sparklink kafka status --command-config`, the operator.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sparklink.clients.errors import AccessProblem, KafkaAccessError
from sparklink.clients.security import SecurityProtocol
from sparklink.clients.settings import KafkaClientSettings

__all__ = ["ClusterInfo", "classify", "verify"]

_BROKER = re.compile(r"((?:\[[0-9a-fA-F:]+\]|[A-Za-z0-9.\-]+):\d+)/(?:bootstrap|\d+)")
_MECHANISMS = re.compile(r"broker's supported mechanisms: ([A-Z0-9_,-]*)")
_STATE = re.compile(r"in state ([A-Z_]+)\)")
# A broker that keeps closing the connection in one state of librdkafka's handshake expects what the client
# does not do: that state, whether the client's protocol does it, what the listener expects, what to fix.
_CLOSED_IN: tuple[tuple[str, Callable[[SecurityProtocol], bool], str, str], ...] = (
    (
        "APIVERSION_QUERY",
        lambda protocol: protocol.tls,
        "at the first request: the listener expects TLS",
        "security.protocol (SSL or SASL_SSL for this listener) and the ssl.truststore.* settings",
    ),
    (
        "UP",
        lambda protocol: protocol.sasl,
        "after the first request: the listener expects SASL authentication",
        "security.protocol (SASL_SSL or SASL_PLAINTEXT), sasl.mechanism and sasl.jaas.config",
    ),
)


@dataclass(frozen=True)
class ClusterInfo:
    """What the metadata answer said: the cluster id, the controller and each broker's address."""

    cluster_id: str | None
    controller_id: int
    brokers: dict[int, str]


class _Reports(logging.Handler):
    """Collects what librdkafka says, through its error callback and its log."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self.logger = logging.Logger(f"sparklink.rdkafka.preflight.{id(self)}", logging.DEBUG)
        self.logger.addHandler(self)
        self.logger.propagate = False

    def emit(self, record: logging.LogRecord) -> None:
        self.add(record.getMessage())

    def error(self, err: Any) -> None:
        self.add(str(err.str()))

    def add(self, text: str) -> None:
        with self._lock:
            self.lines.append(text)

    def snapshot(self) -> list[str]:
        with self._lock:
            return list(self.lines)


def verify(settings: KafkaClientSettings, timeout: float = 15.0) -> ClusterInfo:
    """One metadata request with `settings`; `KafkaAccessError` saying what to fix when it fails."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    reports = _Reports()
    admin = AdminClient(
        settings.librdkafka(
            logger=reports.logger,
            error_cb=reports.error,
            **{
                "socket.connection.setup.timeout.ms": int(min(timeout, 10.0) * 1000),
                "socket.timeout.ms": int(max(timeout, 1.0) * 1000),
                "reconnect.backoff.ms": 100,
                "reconnect.backoff.max.ms": 1000,
            },
        )
    )
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        try:
            meta = admin.list_topics(timeout=max(0.1, min(1.0, remaining)))
            brokers = {b.id: f"{b.host}:{b.port}" for b in meta.brokers.values()}
            return ClusterInfo(meta.cluster_id, meta.controller_id, brokers)
        except KafkaException:
            admin.poll(0)
        problem = classify(settings, reports.snapshot(), final=remaining <= 0.1)
        if problem is not None:
            raise _error(settings, problem, reports.snapshot())


def classify(settings: KafkaClientSettings, lines: list[str], final: bool = False) -> AccessProblem | None:
    """What librdkafka's reports mean for these settings; None while nothing is definite (unless `final`)."""
    security = settings.security
    mechanism = security.mechanism
    for line in reversed(lines):
        text = line.lower()
        if "unsupported sasl mechanism" in text or "not valid in current sasl state" in text:
            offered = _MECHANISMS.search(line)
            names = offered.group(1).strip(",") if offered else ""
            if not names:
                return AccessProblem(
                    "mechanism",
                    "the listener does not use SASL",
                    "security.protocol (SSL or PLAINTEXT for this listener) and remove sasl.mechanism",
                )
            return AccessProblem(
                "mechanism",
                f"the listener does not enable SASL mechanism {mechanism} (it offers {names.replace(',', ', ')})",
                "sasl.mechanism (and the login module in sasl.jaas.config)",
            )
        if "sasl authentication error" in text or "authentication failed" in text:
            return AccessProblem(
                "authentication",
                f"SASL authentication failed: the broker rejected the username or password ({mechanism})",
                "the username and password in sasl.jaas.config, and that the user has "
                f"{mechanism} credentials on the cluster",
            )
        if "hostname mismatch" in text or "ip address mismatch" in text:
            return AccessProblem(
                "hostname",
                "the broker's certificate does not name the address the client connected to",
                "bootstrap.servers (use a name the certificate lists) or ssl.endpoint.identification.algorithm",
            )
        if "certificate verify failed" in text:
            return AccessProblem(
                "untrusted-server",
                "the broker's certificate is not signed by a CA the client trusts",
                _truststore_keys(settings),
            )
        if re.search(
            r"alert (bad certificate|certificate unknown|certificate expired|unknown ca|certificate "
            r"required|certificate revoked|unsupported certificate)",
            text,
        ):
            return _client_certificate_problem(settings, "expired" in text)
        if "connecting to a plaintext broker listener" in text or (
            "ssl handshake failed" in text and ("wrong version number" in text or "packet length" in text)
        ):
            return AccessProblem(
                "protocol",
                f"the listener does not speak TLS, but security.protocol is {security.protocol}",
                "security.protocol (PLAINTEXT or SASL_PLAINTEXT for this listener)",
            )
    closed = [line for line in lines if "closed by peer" in line.lower()]
    states = {m.group(1) for line in closed if (m := _STATE.search(line))}
    if len(closed) >= 2:
        for state, speaks, expects, fix in _CLOSED_IN:
            if state in states and not speaks(security.protocol):
                message = f"the broker closes the connection {expects}, but security.protocol is {security.protocol}"
                return AccessProblem("protocol", message, fix)
    if not final:
        return None
    if any("connection refused" in line.lower() or "timed out" in line.lower() for line in lines):
        return AccessProblem("unreachable", "no broker answered (connection refused or timed out)", "bootstrap.servers")
    last = next((line for line in reversed(lines) if "brokers are down" not in line), "no answer")
    return AccessProblem(
        "no-answer",
        f"the brokers did not answer a metadata request ({_short(last)})",
        "bootstrap.servers and security.protocol",
    )


def _client_certificate_problem(settings: KafkaClientSettings, said_expired: bool) -> AccessProblem:
    tls = settings.security.tls
    keystore = tls.keystore if tls else None
    if keystore is None:
        return AccessProblem(
            "client-certificate-missing",
            "the listener requires a client certificate (mutual TLS) and the client has none",
            "ssl.keystore.type with ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key",
        )
    who = f" ({keystore.subject})" if keystore.subject else ""
    now = dt.datetime.now(dt.UTC)
    if said_expired or (keystore.not_after is not None and keystore.not_after < now):
        when = f" on {keystore.not_after:%Y-%m-%d %H:%M} UTC" if keystore.not_after else ""
        return AccessProblem(
            "client-certificate-expired",
            f"the broker refused the client certificate{who}: it expired{when}",
            f"{keystore.key} (renew the certificate)",
        )
    return AccessProblem(
        "client-certificate-rejected",
        f"the broker refused the client certificate{who}: it is not signed by a CA the listener trusts",
        f"{keystore.key} (a certificate from the cluster's clients CA)",
    )


def _truststore_keys(settings: KafkaClientSettings) -> str:
    tls = settings.security.tls
    if tls is None or tls.truststore is None:
        return "ssl.truststore.type with ssl.truststore.location or ssl.truststore.certificates (the CA of the brokers)"
    return f"{tls.truststore.key} (it must hold the CA that signed the brokers' certificates)"


def _error(settings: KafkaClientSettings, problem: AccessProblem, lines: list[str]) -> KafkaAccessError:
    security = settings.security
    broker = next((m.group(1) for line in reversed(lines) if (m := _BROKER.search(line))), settings.bootstrap_servers)
    how = security.protocol.value + (f", SASL mechanism {security.mechanism}" if security.mechanism else "")
    message = f"Kafka at {broker} ({how}): {problem.explanation}. Check {problem.check}."
    return KafkaAccessError(message, problem, broker, security.protocol.value, security.mechanism)


def _short(line: str) -> str:
    return line if len(line) < 200 else line[:197] + "..."
