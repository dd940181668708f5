"""What every resource reconciler shares, and what a reconcile returns to the work queue."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sparklink.operator.clock import Clock, timestamp
from sparklink.operator.connect_client import ConnectClient
from sparklink.operator.hosting import WorkerHost
from sparklink.operator.hosting.kafka import KafkaHost
from sparklink.operator.metrics import OperatorMetrics
from sparklink.operator.model import bootstrap
from sparklink.operator.model.autorestart import BackOff
from sparklink.operator.model.conditions import stamped, without_timestamps
from sparklink.operator.model.kafka_config import ConfigModel
from sparklink.operator.model.resources import KAFKA, Key, Resource
from sparklink.operator.reconcile.connector import ConnectorReconciler
from sparklink.operator.reconcile.ports import Store

log = logging.getLogger("sparklink.operator")

# How soon to look again at a Connect cluster whose workers are still starting.
STARTING_RECHECK_SECONDS = 2.0


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


@dataclass
class Deps:
    store: Store
    runtime: WorkerHost
    clock: Clock
    backoff: BackOff
    metrics: OperatorMetrics
    connect: Callable[[str], ConnectClient] = ConnectClient
    kafka: KafkaHost | None = None  # runs Kafka clusters (None: this operator runs none)
    kafka_model: Callable[[], ConfigModel] = load_config_model
    # `<cluster>-kafka-bootstrap:<port>` -> the real address of a Kafka this operator runs locally
    resolve_bootstrap: bool = False

    def __post_init__(self) -> None:
        self.connectors = ConnectorReconciler(self.store, self.clock, self.backoff, self.metrics)

    def write_status(self, resource: Resource, status: dict[str, Any]) -> bool:
        """Write `status` (conditions given unstamped) unless only timestamps would change; True if written."""
        now = timestamp(self.clock.now())
        previous = resource.status.get("conditions") or []
        status = {**status, "conditions": stamped(status.get("conditions", []), previous, now)}
        if without_timestamps(status) == without_timestamps(resource.status):
            return False
        self.store.write_status(resource, status)
        return True


def local_addresses(deps: Deps, resource: Resource) -> Resource:
    """With a local runtime, a Connect or MirrorMaker 2 resource whose clusters are named by a Kafka's
    bootstrap Service (`my-cluster-kafka-bootstrap:9092`) gets that Kafka's real addresses (see
    `model.bootstrap`); ReconcileFailure when that Kafka has no ready listener there yet."""
    if not deps.resolve_bootstrap:
        return resource
    return bootstrap.resolve_resource(resource, lambda ns, name: deps.store.get(Key(KAFKA, ns, name)))


def prune(status: Mapping[str, Any]) -> dict[str, Any]:
    """Drop absent fields, as Strimzi's JSON serialisation (NON_NULL) does."""
    return {k: v for k, v in status.items() if v is not None}
