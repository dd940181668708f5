"""Connect's predicates (TopicNameMatches, HasHeaderKey, RecordIsTombstone) as boolean SQL expressions.
Caller: the pipeline, which applies a transform only where its predicate (or, with `negate`, its
opposite) holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparklink.worker.transforms import exprs as x
from sparklink.worker.transforms.plugin import Plugin, config, key, valid_regex
from sparklink.worker.transforms.smt.routing import whole

if TYPE_CHECKING:
    from sparklink.worker.transforms.record import Rec

PACKAGE = "org.apache.kafka.connect.transforms.predicates"


def _non_empty(_name: str, value: Any) -> str | None:
    return None if str(value).strip() else "String must be non-empty"


class Predicate(Plugin):
    def test(self, rec: Rec) -> str:
        raise NotImplementedError


class TopicNameMatches(Predicate):
    class_name = f"{PACKAGE}.TopicNameMatches"
    doc = "True for records whose whole topic matches a Java regex."
    CONFIG = config(
        key(
            "pattern",
            "STRING",
            "Java regular expression matched against the whole topic.",
            validator=lambda n, v: _non_empty(n, v) or valid_regex(n, v),
        )
    )

    def test(self, rec: Rec) -> str:
        return f"coalesce({rec.topic} RLIKE {x.text(whole(str(self.config['pattern'])))}, false)"


class HasHeaderKey(Predicate):
    class_name = f"{PACKAGE}.HasHeaderKey"
    doc = "True for records with at least one header of the given name."
    CONFIG = config(key("name", "STRING", "The header name.", validator=_non_empty))

    def test(self, rec: Rec) -> str:
        h = x.fresh("h")
        return f"coalesce(exists({rec.headers}, {h} -> {h}.key = {x.text(str(self.config['name']))}), false)"


class RecordIsTombstone(Predicate):
    class_name = f"{PACKAGE}.RecordIsTombstone"
    doc = "True for records whose value is null (tombstones)."

    def test(self, rec: Rec) -> str:
        return rec.value.is_null()


ALL: tuple[type[Predicate], ...] = (TopicNameMatches, HasHeaderKey, RecordIsTombstone)
