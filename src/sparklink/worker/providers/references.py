"""The placeholder grammar of KIP-297: `${provider:[path:]key}` inside any string value.

Kafka's ConfigTransformer.DEFAULT_PATTERN, read the same way: the provider name runs to the first colon,
an optional path to the next one, and the key to the closing brace, so `${file:/etc/app.properties:pw}`
is (file, /etc/app.properties, pw), `${env:HOME}` and `${env::HOME}` are both (env, "", HOME), and a
colon after the path belongs to the key. A value may hold several placeholders and text around them.
`${topic}` (no colon) is not a placeholder, so `table.name.format=${topic}` stays a template.
Callers: the provider registry (registry.py) and the herder's resolution of connector configs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

__all__ = ["PATTERN", "Reference", "find", "has_references", "substitute"]

PATTERN = re.compile(r"\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}")


@dataclass(frozen=True)
class Reference:
    """One placeholder: which provider, which path (may be empty), which key."""

    provider: str
    path: str
    key: str

    @property
    def text(self) -> str:
        """The placeholder as a config holds it (never a value: safe in messages)."""
        return f"${{{self.provider}:{self.path}:{self.key}}}" if self.path else f"${{{self.provider}:{self.key}}}"

    @classmethod
    def of(cls, match: re.Match[str]) -> Reference:
        return cls(match.group(1), match.group(3) or "", match.group(4))


def find(value: str) -> Iterator[Reference]:
    """Every placeholder in `value`, in order."""
    for match in PATTERN.finditer(value):
        yield Reference.of(match)


def has_references(config: Mapping[str, str | None]) -> set[str]:
    """The keys of `config` whose value holds a placeholder (Connect's keysWithVariableValues)."""
    return {k for k, v in config.items() if v is not None and PATTERN.search(v)}


def substitute(value: str, lookup: Callable[[Reference], str | None]) -> str:
    """`value` with each placeholder replaced by `lookup(ref)`; a None answer leaves the placeholder."""

    def replace(match: re.Match[str]) -> str:
        found = lookup(Reference.of(match))
        return match.group(0) if found is None else found

    return PATTERN.sub(replace, value)


def reapply(raw_connector: Mapping[str, str], task_configs: list[dict[str, str]]) -> list[dict[str, str]]:
    """Task configs as stored: a key the raw connector config holds a placeholder for gets that placeholder
    back in each task config that has the key (Connect's AbstractHerder#reverseTransform), so the config topic
    and `/tasks` never hold a value a provider resolved."""
    keys = has_references(raw_connector)
    return [{k: (raw_connector[k] if k in keys else v) for k, v in task.items()} for task in task_configs]
