"""SMTs that change where a record goes: RegexRouter, TimestampRouter, and Filter (drops it).
Caller: the transform catalog.

Topic regexes are Java regexes evaluated by Spark; a router applies only when the whole topic matches,
as Connect's Matcher.matches() does.
"""

from __future__ import annotations

from dataclasses import replace

from sparklink.worker.transforms import exprs as x
from sparklink.worker.transforms.json_text import TextEdit
from sparklink.worker.transforms.plugin import config, key, valid_regex
from sparklink.worker.transforms.record import Rec
from sparklink.worker.transforms.smt.base import PACKAGE, Transformation


def whole(regex: str) -> str:
    """A Java regex that matches only a whole string (Matcher.matches semantics under find())."""
    return f"^(?:{regex})$"


class RegexRouter(Transformation):
    class_name = f"{PACKAGE}.RegexRouter"
    doc = "Renames the topic when the whole topic matches a Java regex; the replacement may use $1, $2, ..."
    CONFIG = config(
        key(
            "regex",
            "STRING",
            "Java regular expression matched against the whole topic.",
            importance="HIGH",
            validator=valid_regex,
        ),
        key("replacement", "STRING", "The new topic; $n inserts the n-th group of the match.", importance="HIGH"),
    )

    def apply(self, rec: Rec) -> Rec:
        pattern = x.text(whole(str(self.config["regex"])))
        topic = f"regexp_replace({rec.topic}, {pattern}, {x.text(str(self.config['replacement']))})"
        return replace(rec, topic=topic)

    def unread_value_fields(self, after: frozenset[str]) -> frozenset[str]:
        return after  # reads the topic alone

    def text_edits(self) -> tuple[TextEdit, ...]:
        return ()


class TimestampRouter(Transformation):
    class_name = f"{PACKAGE}.TimestampRouter"
    doc = "Renames the topic from a format with the original topic and the record's timestamp."
    CONFIG = config(
        key(
            "topic.format",
            "STRING",
            "The new topic; ${topic} and ${timestamp} stand for the original topic and the formatted timestamp.",
            default="${topic}-${timestamp}",
            importance="HIGH",
        ),
        key(
            "timestamp.format",
            "STRING",
            "Date pattern (SimpleDateFormat letters, UTC) for ${timestamp}.",
            default="yyyyMMdd",
            importance="HIGH",
        ),
    )

    def apply(self, rec: Rec) -> Rec:
        stamp = x.utc_text(rec.timestamp, str(self.config["timestamp.format"]))
        fmt = x.text(str(self.config["topic.format"]))
        topic = f"replace(replace({fmt}, {x.text('${topic}')}, {rec.topic}), {x.text('${timestamp}')}, {stamp})"
        missing = x.concat(
            "'Timestamp missing on record: topic='",
            rec.topic,
            "', partition='",
            f"coalesce(CAST({rec.partition} AS STRING), 'null')",
            "', offset='",
            f"coalesce(CAST({rec.offset} AS STRING), 'null')",
        )
        rec = rec.fail(f"{rec.timestamp} IS NULL", missing, self.class_name)
        return replace(rec, topic=f"coalesce({topic}, {rec.topic})")

    def unread_value_fields(self, after: frozenset[str]) -> frozenset[str]:
        return after  # reads the topic and timestamp alone


class Filter(Transformation):
    class_name = f"{PACKAGE}.Filter"
    doc = "Drops every record it is applied to; combine it with a predicate to drop some records."

    def apply(self, rec: Rec) -> Rec:
        return replace(rec, drop=f"({rec.drop} OR {rec.error} IS NULL)")

    def unread_value_fields(self, after: frozenset[str]) -> frozenset[str]:
        return after  # a dropped record is read by nothing after


ALL: tuple[type[Transformation], ...] = (RegexRouter, TimestampRouter, Filter)
