"""The reconcilers' `Store` on a real API server, through the official `kubernetes` client.

What it writes to users' objects is exactly what Strimzi writes: `/status` (one JSON Patch that
replaces the whole status, so fields that went away really go), and the removal of a restart or
offsets annotation the operator acted on, only while it still holds the value acted on (checked on a
fresh read, and the patch applies to that version only), so a user's newer request is never lost.
ConfigMaps for listed offsets keep their other keys, labels and owners. Secrets the operator owns (a Kafka's
CAs, a KafkaUser's credentials) are written whole, as Strimzi's SecretOperator reconciles them.
"""

from __future__ import annotations

import base64
import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from sparklink.operator.hosting.kube_reads import read_or_none
from sparklink.operator.model.resources import GROUP, PLURALS, VERSION, Key, Resource, Secret

log = logging.getLogger("sparklink.operator")
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
# Seconds to connect to the API server and to wait for its answer (the longest, a big list, takes a few).
REQUEST_TIMEOUT = (10.0, 60.0)


def api_client(kubeconfig: Path | None) -> k8s.ApiClient:
    """A client from a kubeconfig file (or $KUBECONFIG / ~/.kube/config, or the in-cluster account), each of
    whose requests is bounded (`REQUEST_TIMEOUT` unless the call gives its own `_request_timeout`)."""
    if kubeconfig is not None:
        return _bounded(cast(k8s.ApiClient, k8s_config.new_client_from_config(config_file=str(kubeconfig))))
    try:
        k8s_config.load_incluster_config()
        return _bounded(k8s.ApiClient())
    except k8s_config.ConfigException:
        return _bounded(cast(k8s.ApiClient, k8s_config.new_client_from_config()))


def _bounded(api: k8s.ApiClient) -> k8s.ApiClient:
    """The `kubernetes` client waits forever for an answer unless each call says otherwise: one request the
    API server never answers (a connection dropped without a reset) would hold a reconcile worker for good.
    Every request of this client gets the default bound; the reconcile fails and is retried instead."""
    request: Callable[..., Any] = api.rest_client.request

    @functools.wraps(request)
    def bounded(*args: Any, _request_timeout: Any = None, **kwargs: Any) -> Any:
        return request(*args, _request_timeout=_request_timeout or REQUEST_TIMEOUT, **kwargs)

    api.rest_client.request = bounded  # type: ignore[method-assign]
    return api


def _escape(annotation: str) -> str:
    return annotation.replace("~", "~0").replace("/", "~1")


class KubeStore:
    def __init__(self, api: k8s.ApiClient) -> None:
        self.api = api
        self.custom = k8s.CustomObjectsApi(api)
        self.core = k8s.CoreV1Api(api)

    def get(self, key: Key) -> Resource | None:
        body = read_or_none(
            self.custom.get_namespaced_custom_object, GROUP, VERSION, key.namespace, PLURALS[key.kind], key.name
        )
        return None if body is None else Resource.from_json(cast(dict[str, Any], body))

    def list(self, kind: str, namespace: str | None, labels: Mapping[str, str] | None = None) -> list[Resource]:
        selector = ",".join(f"{k}={v}" for k, v in (labels or {}).items()) or None
        if namespace is None:
            raw = self.custom.list_cluster_custom_object(GROUP, VERSION, PLURALS[kind], label_selector=selector)
        else:
            raw = self.custom.list_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURALS[kind], label_selector=selector
            )
        body = cast(dict[str, Any], raw)
        return [Resource.from_json({**item, "kind": kind}) for item in body.get("items", [])]

    def write_status(self, resource: Resource, status: Mapping[str, object]) -> None:
        patch = [{"op": "add", "path": "/status", "value": dict(status)}]
        try:
            self.custom.patch_namespaced_custom_object_status(
                GROUP,
                VERSION,
                resource.namespace,
                PLURALS[resource.kind],
                resource.name,
                patch,
                _content_type=JSON_PATCH,
            )
        except ApiException as exc:
            if exc.status != 404:  # deleted meanwhile: nothing to report to
                raise

    def remove_annotations(self, resource: Resource, annotations: Sequence[tuple[str, str]]) -> bool:
        if not annotations:
            return True
        plural = PLURALS[resource.kind]
        for _attempt in range(5):
            try:
                fresh = cast(
                    dict[str, Any],
                    self.custom.get_namespaced_custom_object(GROUP, VERSION, resource.namespace, plural, resource.name),
                )
            except ApiException as exc:
                if exc.status == 404:
                    return False
                raise
            meta = fresh.get("metadata") or {}
            current = meta.get("annotations") or {}
            if any(current.get(name) != value for name, value in annotations):
                log.info(
                    "%s: annotations %s changed before they could be removed; the new values are handled next",
                    resource.key,
                    [name for name, _ in annotations],
                )
                return False
            # The values are compared here, and the patch only applies to the object version they were
            # read from. (A JSON Patch `test` of the values themselves fails on the API server for any
            # value with '<', '>' or '&', like MirrorMaker 2's "a->b..." connector names, because it
            # compares them in Go's HTML-escaped encoding.)
            patch: list[dict[str, Any]] = [
                {"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]}
            ]
            patch += [{"op": "remove", "path": f"/metadata/annotations/{_escape(name)}"} for name, _ in annotations]
            try:
                self.custom.patch_namespaced_custom_object(
                    GROUP, VERSION, resource.namespace, plural, resource.name, patch, _content_type=JSON_PATCH
                )
                return True
            except ApiException as exc:
                if exc.status not in (409, 422):  # 409/422: the object changed since we read it; read again
                    raise
        return False

    def config_map_data(self, namespace: str, name: str) -> dict[str, str] | None:
        config_map = read_or_none(self.core.read_namespaced_config_map, name, namespace)
        return None if config_map is None else dict(config_map.data or {})

    def secret_data(self, namespace: str, name: str) -> dict[str, bytes] | None:
        """The Secret's `data`, decoded, or None when the Secret does not exist."""
        found = self.secret(namespace, name)
        return None if found is None else dict(found.data)

    def write_config_map_entry(
        self, owner: Resource, name: str, key: str, value: str, labels: Mapping[str, str]
    ) -> None:
        reference = owner.owner_reference(controller=False)
        for _attempt in range(5):
            try:
                existing = self.core.read_namespaced_config_map(name, owner.namespace)
            except ApiException as exc:
                if exc.status != 404:
                    raise
                body: Any = {
                    "metadata": {"name": name, "labels": dict(labels), "ownerReferences": [reference]},
                    "data": {key: value},
                }
                try:
                    self.core.create_namespaced_config_map(owner.namespace, body)
                    return
                except ApiException as create_exc:
                    if create_exc.status == 409:  # created meanwhile: update it instead
                        continue
                    raise
            meta = existing.metadata
            assert meta is not None
            owners = [self.api.sanitize_for_serialization(o) for o in (meta.owner_references or [])]
            if not any(o.get("kind") == owner.kind and o.get("name") == owner.name for o in owners):
                owners.append(reference)
            patch = {
                "metadata": {
                    "resourceVersion": meta.resource_version,
                    "labels": {**(meta.labels or {}), **labels},
                    "ownerReferences": owners,
                },
                "data": {key: value},
            }
            try:
                self.core.patch_namespaced_config_map(name, owner.namespace, patch, _content_type=MERGE_PATCH)
                return
            except ApiException as exc:
                if exc.status != 409:  # 409: changed since we read it; read again
                    raise
        raise RuntimeError(f"ConfigMap {owner.namespace}/{name} kept changing while the offsets were written")

    def secret(self, namespace: str, name: str) -> Secret | None:
        found = read_or_none(self.core.read_namespaced_secret, name, namespace)
        if found is None:
            return None
        meta = found.metadata
        assert meta is not None
        return Secret(
            namespace,
            name,
            {k: base64.b64decode(v) for k, v in (found.data or {}).items()},
            dict(meta.labels or {}),
            dict(meta.annotations or {}),
            tuple(self.api.sanitize_for_serialization(o) for o in (meta.owner_references or [])),
        )

    def apply_secret(self, secret: Secret) -> bool:
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {
                "name": secret.name,
                "namespace": secret.namespace,
                "labels": dict(secret.labels),
                "annotations": dict(secret.annotations),
                "ownerReferences": [dict(o) for o in secret.owner_references],
            },
            "data": {k: base64.b64encode(v).decode() for k, v in secret.data.items()},
        }
        for _attempt in range(5):
            current = self.secret(secret.namespace, secret.name)
            if current is None:
                try:
                    self.core.create_namespaced_secret(secret.namespace, cast(Any, body))
                    return True
                except ApiException as exc:
                    if exc.status == 409:  # created meanwhile: replace it
                        continue
                    raise
            if _same_secret(current, secret):
                return False
            fresh = self.core.read_namespaced_secret(secret.name, secret.namespace)
            assert fresh.metadata is not None
            body["metadata"]["resourceVersion"] = fresh.metadata.resource_version
            try:
                self.core.replace_namespaced_secret(secret.name, secret.namespace, cast(Any, body))
                return True
            except ApiException as exc:
                if exc.status != 409:  # 409: changed since we read it; read again
                    raise
        raise RuntimeError(f"Secret {secret.namespace}/{secret.name} kept changing while the operator wrote it")

    def delete_secret(self, namespace: str, name: str) -> None:
        try:
            self.core.delete_namespaced_secret(name, namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise


def _same_secret(current: Secret, desired: Secret) -> bool:
    def owners(s: Secret) -> list[tuple[object, ...]]:
        return sorted((o.get("kind"), o.get("name"), o.get("uid"), o.get("controller")) for o in s.owner_references)

    return (
        dict(current.data) == dict(desired.data)
        and dict(current.labels) == dict(desired.labels)
        and dict(current.annotations) == dict(desired.annotations)
        and owners(current) == owners(desired)
    )
