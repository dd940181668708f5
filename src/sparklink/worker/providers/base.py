"""What a config provider is (Kafka's ConfigProvider interface, in Python) and how one says it failed.

A provider is configured once with its `config.providers.<name>.param.*` settings, then asked for keys at
a path; it answers with the values it found, leaving out keys it does not have. It raises
`ProviderError` when it cannot look at all (a path outside `allowed.paths`, a file it cannot read, an API
that refuses): the message names the provider and the path, never a value, because it reaches statuses,
REST answers and logs. Callers: registry.py builds providers; files.py, env.py and kubernetes.py
implement them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

__all__ = ["ConfigProvider", "ProviderError"]


class ProviderError(Exception):
    """A provider could not read what a placeholder asks for; the text names the provider and path only."""


class ConfigProvider(Protocol):
    """Kafka's org.apache.kafka.common.config.provider.ConfigProvider."""

    name: str
    """The name it is configured under (`config.providers=<name>`), used in messages."""

    def get(self, path: str, keys: set[str]) -> Mapping[str, str]:
        """The values of `keys` found at `path` (keys it does not have are left out)."""
        ...

    def close(self) -> None: ...
