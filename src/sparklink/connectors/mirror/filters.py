"""Which topics, groups and topic-config properties MirrorMaker 2 replicates.

Callers: the source connector (topics, topic configs), the checkpoint connector and its reader
(groups, and topics a group's offsets are checkpointed for). Ports of DefaultTopicFilter,
DefaultGroupFilter and DefaultConfigPropertyFilter: include and exclude lists are regexes joined
with `|` and matched against the whole name (Java's `matches()`); an empty list matches nothing;
excludes win.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass


def compile_patterns(patterns: Sequence[str]) -> re.Pattern[str] | None:
    """MirrorUtils.compilePatternList: None for an empty list (a blank property matches nothing)."""
    items = [p for p in patterns if p]
    return re.compile("|".join(items)) if items else None


def _matches(pattern: re.Pattern[str] | None, name: str) -> bool:
    return pattern is not None and pattern.fullmatch(name) is not None


@dataclass(frozen=True)
class IncludeExclude:
    include: re.Pattern[str] | None
    exclude: re.Pattern[str] | None

    @classmethod
    def of(cls, include: Sequence[str], exclude: Sequence[str]) -> IncludeExclude:
        return cls(compile_patterns(include), compile_patterns(exclude))

    def accepts(self, name: str) -> bool:
        return _matches(self.include, name) and not _matches(self.exclude, name)


@dataclass(frozen=True)
class ConfigPropertyFilter:
    exclude: re.Pattern[str] | None
    use_defaults_from: str = "target"

    def should_replicate(self, prop: str) -> bool:
        return not _matches(self.exclude, prop)

    def should_replicate_source_default(self, _prop: str) -> bool:
        return self.use_defaults_from == "source"
