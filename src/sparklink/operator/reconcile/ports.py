"""What the reconcilers need from the outside world, as protocols (implemented by `operator.kube`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from sparklink.operator.model.resources import Key, Resource, Secret


class Store(Protocol):
    """The Kubernetes side: resources, their status, their annotations, ConfigMaps and Secrets."""

    def get(self, key: Key) -> Resource | None: ...

    def list(self, kind: str, namespace: str | None, labels: Mapping[str, str] | None = None) -> list[Resource]: ...

    def write_status(self, resource: Resource, status: Mapping[str, object]) -> None:
        """Replace the resource's status through the /status subresource."""
        ...

    def remove_annotations(self, resource: Resource, annotations: Sequence[tuple[str, str]]) -> bool:
        """Remove each annotation only if it still holds the given value (a user who re-annotated in the
        meantime keeps the new request); False when nothing was removed because a value had changed."""
        ...

    def config_map_data(self, namespace: str, name: str) -> dict[str, str] | None:
        """The ConfigMap's `data`, or None when the ConfigMap does not exist."""
        ...

    def secret_data(self, namespace: str, name: str) -> dict[str, bytes] | None:
        """The Secret's data, decoded, or None when the Secret does not exist. Never logged or shown."""
        ...

    def write_config_map_entry(
        self, owner: Resource, name: str, key: str, value: str, labels: Mapping[str, str]
    ) -> None:
        """Create the ConfigMap or update one key of it, keeping its other keys, labels and owners and
        adding `owner` as a (non-controller) owner when it is not one yet."""
        ...

    def secret(self, namespace: str, name: str) -> Secret | None:
        """The Secret, its data decoded; None when it does not exist."""
        ...

    def apply_secret(self, secret: Secret) -> bool:
        """Create the Secret, or replace its labels, annotations, owners and data with these (as Strimzi's
        reconcile of a Secret it owns does: an annotation it did not write goes); True when anything changed."""
        ...

    def delete_secret(self, namespace: str, name: str) -> None:
        """Delete the Secret (nothing when it does not exist)."""
        ...
