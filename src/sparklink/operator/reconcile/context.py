"""What every resource reconciler shares, and what a reconcile returns to the work queue."""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from sparklink.clients.settings import KafkaClientSettings
from sparklink.operator.clock import Clock, timestamp
from sparklink.operator.connect_client import ConnectClient
from sparklink.operator.hosting import WorkerHost
from sparklink.operator.hosting.kafka import KafkaHost
from sparklink.operator.hosting.kafka_user_admin import UserAdmin
from sparklink.operator.hosting.plugin_build import LocalPluginBuilder
from sparklink.operator.metrics import OperatorMetrics
from sparklink.operator.model.autorestart import BackOff
from sparklink.operator.model.conditions import stamped, without_timestamps
from sparklink.operator.model.kafka_config import ConfigModel
from sparklink.operator.model.rendering import render
from sparklink.operator.model.resources import Key, Resource
from sparklink.operator.model.status import Status
from sparklink.operator.reconcile.connector import ConnectorReconciler
from sparklink.operator.reconcile.ports import Store

log = logging.getLogger("sparklink.operator")


@dataclass
class ReconcileResult:
    """What the queue does next: look again after `requeue_after` seconds, and reconcile `also` now."""

    requeue_after: float | None = None
    also: list[Key] = field(default_factory=list)
    status_written: bool = False
    failed: bool = False

    def requeue_at(self, moment: datetime | None, now: datetime) -> None:
        if moment is None:
            return
        delay = max(0.0, (moment - now).total_seconds())
        if self.requeue_after is None or delay < self.requeue_after:
            self.requeue_after = delay


@functools.lru_cache(maxsize=1)
def load_config_model() -> ConfigModel:
    """Kafka's configuration model from the jars (generated once per jar set, then read from the cache)."""
    from sparklink.platform import kafka_config_model

    return ConfigModel.from_json(kafka_config_model.load())


def unsecured_client(url: str, ca_pem: bytes | None) -> ConnectClient:
    """Without the operator's identity only groups without a CA (workers it did not start) can be reached."""
    if ca_pem is not None:
        raise ValueError(f"the workers at {url} ask for a client certificate: the operator's identity is needed")
    return ConnectClient(url)


@dataclass
class Deps:
    store: Store
    runtime: WorkerHost
    clock: Clock
    backoff: BackOff
    metrics: OperatorMetrics
    # A group's REST client from its URL and CA (`hosting.rest_tls.OperatorIdentity.connect` in the operator).
    connect: Callable[[str, bytes | None], ConnectClient] = unsecured_client
    kafka: KafkaHost | None = None  # runs Kafka clusters (None: this operator runs none)
    kafka_model: Callable[[], ConfigModel] = load_config_model
    # `<cluster>-kafka-bootstrap:<port>` -> the real address of a Kafka this operator runs locally
    resolve_bootstrap: bool = False
    # The User Operator's Admin API client for a Kafka, given the operator's own settings for it.
    user_admin: Callable[[KafkaClientSettings], UserAdmin] = UserAdmin
    # Fetches KafkaConnect spec.build plugins for local workers (None: this runtime builds no plugins).
    plugin_builder: LocalPluginBuilder | None = None

    def __post_init__(self) -> None:
        self.connectors = ConnectorReconciler(self.store, self.clock, self.backoff, self.metrics)

    def write_status(self, resource: Resource, status: Status) -> bool:
        """Write `status` (conditions given unstamped) unless only timestamps would change; True if written."""
        now = timestamp(self.clock.now())
        previous = resource.status.get("conditions") or []
        body = render(dataclasses.replace(status, conditions=stamped(status.conditions, previous, now)))
        if without_timestamps(body) == without_timestamps(resource.status):
            return False
        self.store.write_status(resource, body)
        return True
