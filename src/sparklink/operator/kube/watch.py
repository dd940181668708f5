"""The watch: kopf lists and watches the operator's kinds and feeds every event into the work queue.

kopf is configured so it adds nothing to users' objects that Strimzi would not:
- only `on.event` handlers are registered. kopf's change-detection handlers (on.create/update/resume)
  are what store the "last handled configuration" annotation and handler progress (annotations or
  `status.kopf`), and deletion handlers and daemons are what add finalizers; none of them is used;
- the progress and diff-base storages are in-memory no-ops anyway, so a handler added later cannot
  start writing to users' objects unnoticed;
- posting of Kubernetes Events from log lines is off, and the operator runs standalone (no peering
  objects).
kopf still brings what a hand-written loop would have to redo: list-then-watch from the list's
resourceVersion, re-listing on 410 Gone, reconnects with back-off, and per-object event batching.
The handlers only enqueue keys; reconciling happens in `operator.kube.loop`, level-triggered.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import kopf
from kubernetes import client as k8s

from sparklink.operator.model import annotations as anno
from sparklink.operator.model.resources import (
    GROUP,
    KAFKA,
    KAFKA_CONNECT,
    KAFKA_CONNECTOR,
    KAFKA_NODE_POOL,
    PLURALS,
    VERSION,
    Key,
)

log = logging.getLogger("sparklink.operator")

Enqueue = Callable[[Key], None]


class NoProgressStorage(kopf.ProgressStorage):
    """Keeps no handler progress anywhere (kopf's default writes annotations and status.kopf)."""

    def fetch(self, *, key: kopf.HandlerId, body: kopf.Body) -> kopf.ProgressRecord | None:
        return None

    def store(self, *, key: kopf.HandlerId, record: kopf.ProgressRecord, body: kopf.Body, patch: kopf.Patch) -> None:
        return None

    def purge(self, *, key: kopf.HandlerId, body: kopf.Body, patch: kopf.Patch) -> None:
        return None

    def touch(self, *, body: kopf.Body, patch: kopf.Patch, value: str | None) -> None:
        return None

    def clear(self, *, essence: kopf.BodyEssence) -> kopf.BodyEssence:
        return super().clear(essence=essence)


class NoDiffBaseStorage(kopf.DiffBaseStorage):
    """Keeps no last-handled configuration (kopf's default writes an annotation)."""

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        return None


def settings(kopf_settings: kopf.OperatorSettings) -> kopf.OperatorSettings:
    kopf_settings.persistence.progress_storage = NoProgressStorage()
    kopf_settings.persistence.diffbase_storage = NoDiffBaseStorage()
    kopf_settings.posting.enabled = False
    kopf_settings.peering.standalone = True
    kopf_settings.watching.server_timeout = 300
    kopf_settings.watching.client_timeout = 330
    return kopf_settings


def registry(enqueue: Enqueue, api_config: k8s.Configuration) -> kopf.OperatorRegistry:
    """Event handlers for every kind; each event only enqueues the keys it concerns. kopf logs in
    with the same credentials as the operator's own client (`api_config`, a kubernetes Configuration)."""
    reg = kopf.OperatorRegistry()

    @kopf.on.login(registry=reg)
    def login(**_: object) -> kopf.ConnectionInfo:
        header = api_config.get_api_key_with_prefix("BearerToken") or api_config.get_api_key_with_prefix(
            "authorization"
        )
        scheme, _sep, token = (header or "").rpartition(" ")
        return kopf.ConnectionInfo(
            server=api_config.host,
            ca_path=api_config.ssl_ca_cert,
            insecure=not api_config.verify_ssl,
            scheme=scheme or None,
            token=token or None,
            certificate_path=api_config.cert_file,
            private_key_path=api_config.key_file,
        )

    last_cluster: dict[Key, str] = {}

    def handler(kind: str) -> Callable[..., None]:
        def on_event(type: str, body: kopf.Body, **_: object) -> None:
            meta = body.get("metadata", {})
            key = Key(kind, meta.get("namespace", ""), meta.get("name", ""))
            enqueue(key)
            if kind in (KAFKA_CONNECTOR, KAFKA_NODE_POOL):
                # A KafkaConnect deletes a connector whose resource went away or moved to another cluster: tell
                # the old and the new cluster. A Kafka runs its pools' nodes: tell it of every change.
                parent = KAFKA_CONNECT if kind == KAFKA_CONNECTOR else KAFKA
                cluster = (meta.get("labels") or {}).get(anno.CLUSTER_LABEL)
                before = last_cluster.get(key)
                for name in {before, cluster} - {None}:
                    if type == "DELETED" or name != cluster or kind == KAFKA_NODE_POOL:
                        enqueue(Key(parent, key.namespace, str(name)))
                if type == "DELETED":
                    last_cluster.pop(key, None)
                elif cluster:
                    last_cluster[key] = cluster

        return on_event

    for kind, plural in PLURALS.items():
        kopf.on.event(GROUP, VERSION, plural, id=f"enqueue-{plural}", registry=reg)(handler(kind))
    return reg
