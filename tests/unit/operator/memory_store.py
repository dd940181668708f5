"""An in-memory twin of `sparklink.operator.reconcile.ports.Store`, for tests of reconcile logic."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sparklink.operator.model.resources import Key, Resource, Secret


class MemoryStore:
    def __init__(self) -> None:
        self.resources: dict[Key, Resource] = {}
        self.config_maps: dict[tuple[str, str], dict[str, Any]] = {}
        self.secrets: dict[tuple[str, str], Secret] = {}
        self.status_writes = 0

    def put(self, body: Mapping[str, Any]) -> Resource:
        resource = Resource.from_json(body)
        resource = replace(resource, uid=resource.uid or f"uid-{resource.name}", generation=resource.generation or 1)
        self.resources[resource.key] = resource
        return resource

    def annotate(self, key: Key, **annotations: str) -> None:
        r = self.resources[key]
        self.resources[key] = replace(r, annotations={**r.annotations, **annotations})

    def get(self, key: Key) -> Resource | None:
        return self.resources.get(key)

    def list(self, kind: str, namespace: str | None, labels: Mapping[str, str] | None = None) -> list[Resource]:
        return [
            r
            for r in self.resources.values()
            if r.kind == kind
            and namespace in (None, r.namespace)
            and all(r.labels.get(k) == v for k, v in (labels or {}).items())
        ]

    def write_status(self, resource: Resource, status: Mapping[str, Any]) -> None:
        current = self.resources[resource.key]
        self.resources[resource.key] = replace(current, status=copy.deepcopy(dict(status)))
        self.status_writes += 1

    def remove_annotations(self, resource: Resource, annotations: Sequence[tuple[str, str]]) -> bool:
        current = self.resources[resource.key]
        if any(current.annotations.get(k) != v for k, v in annotations):
            return False
        remaining = {k: v for k, v in current.annotations.items() if k not in dict(annotations)}
        self.resources[resource.key] = replace(current, annotations=remaining)
        return True

    def config_map_data(self, namespace: str, name: str) -> dict[str, str] | None:
        cm = self.config_maps.get((namespace, name))
        return None if cm is None else dict(cm["data"])

    def secret_data(self, namespace: str, name: str) -> dict[str, bytes] | None:
        found = self.secrets.get((namespace, name))
        return None if found is None else dict(found.data)

    def write_config_map_entry(
        self, owner: Resource, name: str, key: str, value: str, labels: Mapping[str, str]
    ) -> None:
        cm = self.config_maps.setdefault((owner.namespace, name), {"data": {}, "labels": {}, "owners": []})
        cm["data"][key] = value
        cm["labels"].update(labels)
        if not any(o["name"] == owner.name and o["kind"] == owner.kind for o in cm["owners"]):
            cm["owners"].append(owner.owner_reference())

    def secret(self, namespace: str, name: str) -> Secret | None:
        return self.secrets.get((namespace, name))

    def apply_secret(self, secret: Secret) -> bool:
        if self.secrets.get((secret.namespace, secret.name)) == secret:
            return False
        self.secrets[(secret.namespace, secret.name)] = secret
        return True

    def delete_secret(self, namespace: str, name: str) -> None:
        self.secrets.pop((namespace, name), None)
