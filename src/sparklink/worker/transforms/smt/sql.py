"""sparklink's SQL transform: `transforms.t.type=sql`, `transforms.t.statement=SELECT ... FROM records ...`.
Caller: the pipeline, which runs the statement over each batch's records.

`records` has the columns key, value (as the converter produced them: binary, string or VARIANT),
headers, topic, partition, timestamp and, for sinks, offset. The statement's result is the new set of
records: it must have `value` and `topic`; key, headers, partition and timestamp are NULL/empty when
not selected. A JSON value is a VARIANT, so `value:amount::int > 100` or `variant_get(value, '$.id',
'bigint')` read its fields, and `to_variant_object(named_struct(...))` builds a new object.

The statement runs inside the same Spark plan as the rest of the chain; records that failed in an
earlier step skip it (they go to the dead letter queue) and a failure inside the statement fails the
batch, whatever errors.tolerance says.

It is a query over `records` and nothing else: no other table, view, file or table-valued function, no
reflection, scripts, commands or `${...}` substitution (sql_guard.py). The validator refuses any other
statement with the part that breaks the rule; the task's build checks again with Spark's parser.
"""

from __future__ import annotations

import re
import uuid

from sparklink.api.config import Message
from sparklink.worker.transforms import sql_guard
from sparklink.worker.transforms.plugin import config, key
from sparklink.worker.transforms.smt.base import Transformation

NAME = "sql"
_WITH = re.compile(r"^\s*WITH\s", re.IGNORECASE)
_RECORDS = re.compile(r"\brecords\b", re.IGNORECASE)


def _check(name: str, value: object) -> str | None:
    text = str(value).strip()
    if not text:
        return "String must be non-empty"
    reason = sql_guard.refusal(text)
    if reason:
        return Message(f"The SQL statement of {name} is refused: {reason}")
    if not _RECORDS.search(text):
        return Message("The SQL statement must read from the table 'records', e.g. SELECT * FROM records WHERE ...")
    return None


class SqlTransform(Transformation):
    class_name = NAME
    doc = (
        "sparklink's SQL transform: a Spark SQL statement over the table 'records' (key, value, headers, topic, "
        "partition, timestamp, offset) whose result is the new set of records."
    )
    CONFIG = config(
        key(
            "statement",
            "STRING",
            "A Spark SQL SELECT over 'records'; its result must have the columns value and topic.",
            importance="HIGH",
            validator=_check,
        )
    )

    def configure(self) -> None:
        self.view = f"sparklink_records_{uuid.uuid4().hex}"

    def query(self) -> str:
        """The statement with `records` bound to this transform's per-batch view (a CTE of that name)."""
        statement = str(self.config["statement"]).strip().rstrip(";")
        if "${" in statement:  # never handed to Spark's variable substitution, whatever else checked it
            raise sql_guard.SqlRefused(f"The SQL statement is refused: {sql_guard.NO_SUBSTITUTION}")
        binding = f"records AS (SELECT * FROM {self.view})"
        if _WITH.match(statement):
            return f"WITH {binding}, {_WITH.sub('', statement, count=1)}"
        return f"WITH {binding} {statement}"
