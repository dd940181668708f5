"""A sink's JSON value edited as text: the chain's edits of a schemaless object's top-level fields applied
to the record's bytes in one pass, for a sink that writes the value as text. Caller: the pipeline
(whether a chain qualifies, and its text column); transforms say what they do as `TextEdit`s.

JsonConverter would parse each value into a VARIANT, InsertField and ReplaceField rebuild it once each, and
the sink render it back into JSON: about three fifths of bench.sink's executor time with its chain. The text
edit (jvm/sql/JsonEdit.java) answers with the same bytes that path gives, or NULL where it cannot promise
to (not an object, malformed, ...); those records alone take the VARIANT path, which the pipeline guards
with the text column so that nothing of it runs for the others.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sparklink.api.text import as_text
from sparklink.worker.transforms import exprs as x
from sparklink.worker.transforms.converters import Converter, JsonConverter

if TYPE_CHECKING:
    from sparklink.worker.transforms.predicates import Predicate
    from sparklink.worker.transforms.smt.base import Transformation

JSON_EDIT = "sparklink_json_edit"
"""The SQL function `edited_text` calls: Java's edit from our jar (jvm/sql/JsonEdit.java), else
`JSON_EDIT_IN_SQL`."""

JSON_EDIT_IN_SQL = (
    f"CREATE OR REPLACE TEMPORARY FUNCTION {JSON_EDIT}(bytes BINARY, spec STRING) RETURNS BINARY"
    " RETURN CAST(NULL AS BINARY)"
)
"""The same function for a session without our jar: it never answers, so every record takes the VARIANT
path (the same records, as that path always gave them)."""


VALUE_TEXT = "__sl_value_text"
"""The column the pipeline selects `edited_text` into, beside the record's (frames.py), for `sink_text`."""


@dataclass(frozen=True)
class Put:
    """InsertField's static field: `name` set to the string `value`, replacing a field of that name."""

    name: str
    value: str


@dataclass(frozen=True)
class Select:
    """ReplaceField: the fields not excluded and (when `include` is not empty) included, renamed."""

    exclude: tuple[str, ...]
    include: tuple[str, ...]
    renames: tuple[tuple[str, str], ...]


TextEdit = Put | Select


def edited_text(raw: str, skip: frozenset[str], edits: list[TextEdit]) -> str:
    """SQL for the JSON text of the object in bytes `raw` with the fields in `skip` left out unread and
    `edits` applied in order, fields sorted by name; NULL where the VARIANT path must decide (see the
    module docstring)."""
    spec: list[object] = [sorted(skip)]
    for edit in edits:
        if isinstance(edit, Put):
            spec.append(["put", edit.name, edit.value])
        else:
            renames = dict(edit.renames)
            lists = [list(edit.exclude), list(edit.include), list(renames), list(renames.values())]
            spec.append(["select", *lists])
    return f"{JSON_EDIT}(CAST({raw} AS BINARY), {x.text(json.dumps(spec))})"


def chain_edits(
    converter: Converter, steps: Sequence[tuple[Transformation, Predicate | None]]
) -> list[TextEdit] | None:
    """A sink chain (each transform with its predicate) as edits of its value's text, when the value is
    schemaless JSON and every step can be written so (`Transformation.text_edits`); None otherwise."""
    if not isinstance(converter, JsonConverter) or converter.schemas_enabled:
        return None
    edits: list[TextEdit] = []
    for transform, predicate in steps:
        done = transform.text_edits() if predicate is None else None  # a predicate may read the value
        if done is None:
            return None
        edits.extend(done)
    return edits


def sink_text(variant: str) -> str:
    """The value a text sink gets: column VALUE_TEXT (`edited_text`, selected by the pipeline) where it
    answered, else the VARIANT path's value (`variant`) as the sink would write it."""
    return f"coalesce(CAST({VALUE_TEXT} AS STRING), {as_text(variant, 'variant')})"
