"""Settings for the confluent-kafka clients that plugins, the worker, the roller and the CLI make.

librdkafka's own logs go to the `sparklink.rdkafka` Python logger instead of stderr. This module
imports no Kafka client.
"""

from __future__ import annotations

import logging
from typing import Any

_rdkafka_log = logging.getLogger("sparklink.rdkafka")
# librdkafka reports transient states (coordinator loading, a broker restarting, connection refused)
# that it retries itself; failures that matter surface as exceptions from the client calls. Raise
# the level at run time through /admin/loggers/sparklink.rdkafka when debugging a connection.
_rdkafka_log.setLevel(logging.CRITICAL)


def client_config(bootstrap_servers: str, **extra: Any) -> dict[str, Any]:
    """Bootstrap servers plus librdkafka's logs routed to Python logging instead of stderr."""
    return {"bootstrap.servers": bootstrap_servers, "logger": _rdkafka_log, **extra}
