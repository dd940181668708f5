"""Common settings for the confluent-kafka clients sparklink makes (control plane only)."""

from __future__ import annotations

import logging
from typing import Any

_rdkafka_log = logging.getLogger("sparklink.rdkafka")
# librdkafka warns about transient states (coordinator loading, broker restarts) that it retries itself.
_rdkafka_log.setLevel(logging.ERROR)


def client_config(bootstrap_servers: str, **extra: Any) -> dict[str, Any]:
    """Bootstrap servers plus librdkafka's logs routed to Python logging instead of stderr."""
    return {"bootstrap.servers": bootstrap_servers, "logger": _rdkafka_log, **extra}
