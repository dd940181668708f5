"""Compile a connector's converters, transforms, predicates and error policy into one Spark plan.
Caller: the worker, once per task; `Pipeline.run(batch)` per micro-batch.

Sinks: Kafka records (Spark's Kafka source columns) -> key/value converters -> transforms -> the
records the SinkTask writes (key/value as binary, string or VARIANT, see `record.Kind`); a sink that
writes values as text gets a JSON chain's value as its text, edited without a VARIANT (json_text.py).
Sources: the SourceTask's columns (`topic`, `key`, `value`[, `headers`, `partition`]) -> transforms ->
key/value converters -> the Kafka columns Spark's Kafka writer takes.

Each step is one `selectExpr` over named columns, so Spark keeps one plan (its optimizer collapses the
projections) and every record stays in the JVM. The SQL text of the steps is built once per task and
input schema; the DataFrames built from it on a query's first micro-batch (a sink's: before it, while
its query starts) are moved onto each later one (replay.py), so a batch costs no analysis in the JVM.
A record that fails a step carries the failure in the error column: `errors.tolerance=none` turns the
first one into a failed batch naming its topic, partition and offset; `all` splits the batch into good
and errant records.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from sparklink.worker import connector_config as keys
from sparklink.worker.transforms import catalog, enrichment, errors
from sparklink.worker.transforms import exprs as x
from sparklink.worker.transforms.converters import ByteArrayConverter, Converter
from sparklink.worker.transforms.frames import (
    ERROR,
    ORIGINAL,
    Op,
    barrier,
    materialize,
    output,
    select_sql,
    source_datum,
)
from sparklink.worker.transforms.json_text import VALUE_TEXT, chain_edits, edited_text, sink_text
from sparklink.worker.transforms.predicates import Predicate
from sparklink.worker.transforms.record import KEY_CONVERTER, NO_ERROR, VALUE_CONVERTER, Datum, Rec, Side
from sparklink.worker.transforms.replay import Replay, stand_in
from sparklink.worker.transforms.smt.base import Transformation
from sparklink.worker.transforms.smt.sql import SqlTransform
from sparklink.worker.transforms.sql_step import SqlStepError, sql_step

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sparklink.clients.settings import KafkaClientSettings

log = logging.getLogger(__name__)

DEFAULT_CONVERTER = ByteArrayConverter.class_name
DEFAULT_HEADER_CONVERTER = "org.apache.kafka.connect.storage.SimpleHeaderConverter"


class PipelineConfigError(ValueError):
    """The connector's converter/transform config cannot be compiled; the message says what to fix."""


__all__ = ["Outcome", "Pipeline", "PipelineConfigError", "SqlStepError", "compile_pipeline"]


@dataclass(frozen=True)
class Step:
    alias: str
    transform: Transformation
    predicate: Predicate | None = None
    negate: bool = False


@dataclass
class Outcome:
    """One batch through the pipeline: the records to write and, with errors.tolerance=all, the errant
    ones (columns `original`, `error`). `release()` frees what the batch cached."""

    records: DataFrame
    errant: DataFrame | None = None
    cached: list[DataFrame] = field(default_factory=list)

    def release(self) -> None:
        for frame in self.cached:
            frame.unpersist()
        self.cached.clear()


@dataclass
class Pipeline:
    side: Side
    key_converter: Converter
    value_converter: Converter
    header_converter: Converter
    steps: list[Step]
    policy: errors.ErrorPolicy
    connector: str = ""
    task_id: int = 0
    value_as_text: bool = False
    """The sink writes each value as text (`SinkTask.value_as_text`): a JSON chain that can be written as
    edits of the text hands it the text, and builds no VARIANT for a record that is an object."""
    cache_split: bool = True
    """With errors.tolerance=all, cache the transformed batch so that splitting it into good and errant
    records computes the transforms once (worth it for real batches; tests of tiny ones turn it off)."""
    error_counts: errors.ErrorCounts = field(default_factory=errors.ErrorCounts)
    """This run's task-error-metrics: what `dead_letters` split off and logged, and the DLQ writes."""
    _plans: dict[str, tuple[list[Op], bool]] = field(default_factory=dict)
    replayed_batches: int = 0
    """Batches whose DataFrames were moved from those built earlier (on a query run's first batch, or on a
    stand-in before it: `prebuild`) rather than built (replay.py)."""
    _replays: dict[str, Replay] = field(default_factory=dict)
    """Per input schema, the DataFrames of the batch built last, to move onto later batches (replay.py)."""
    _dlq_ready: bool = False

    @property
    def passthrough(self) -> bool:
        """No transforms and byte converters: records go through untouched (and unplanned)."""
        byte_converters = all(isinstance(c, ByteArrayConverter) for c in (self.key_converter, self.value_converter))
        return byte_converters and not self.steps

    @property
    def has_sql_step(self) -> bool:
        """A SQL transform is among the steps: its statement may read the session's tables and views."""
        return any(isinstance(step.transform, SqlTransform) for step in self.steps)

    def run(self, batch: DataFrame) -> Outcome:
        if self.passthrough and self._plain(batch):
            return Outcome(batch)
        signature = batch.schema.simpleString()
        replay = self._replays.get(signature)
        if replay is not None:
            moved = replay.onto(batch)
            if moved is not None:
                self.replayed_batches += 1
                return Outcome(*moved)
        plan = self._plans.get(signature)
        if plan is None:
            plan = self._plans[signature] = self._compile(batch)
        ops, may_fail = plan
        frame = batch
        for op in ops:
            frame = op(frame)
        outcome = self._split(frame, may_fail)
        # The batch built last is the one later batches move from: after a refusal (a restarted query's
        # batches have new column ids), the first of the new run. A SQL step's statement may read tables
        # or views that change between batches, so a chain with one is built for every batch.
        if not self.has_sql_step:
            self._replays[signature] = Replay(batch, outcome.records, outcome.errant, tuple(outcome.cached))
        return outcome

    def prebuild(self, stream: DataFrame) -> bool:
        """Build the DataFrames for the micro-batches of a query over `stream` before its first batch,
        on a stand-in batch they are then moved from (replay.py). False where nothing was built: the
        records pass through unplanned, a SQL step is analysed against each batch, or the stand-in could
        not be made."""
        if self.passthrough or self.has_sql_step:
            return False
        batch = stand_in(stream)
        if batch is None:
            return False
        self.run(batch).release()
        return True

    def _plain(self, batch: DataFrame) -> bool:
        if self.side == "sink":
            return True
        types = {f.name: f.dataType.typeName() for f in batch.schema.fields}
        return all(types.get(c, "binary") in ("binary", "string", "void") for c in ("key", "value"))

    # ------------------------------------------------------------------ compiling the steps
    def _compile(self, batch: DataFrame) -> tuple[list[Op], bool]:
        """The batch operations for this input schema, and whether any record can fail or be dropped
        in them; a SQL step is analysed against `batch`."""
        edits = None
        if self.side == "sink" and self.value_as_text:
            edits = chain_edits(self.value_converter, [(s.transform, s.predicate) for s in self.steps])
        rec, original = self._start(batch, as_text=edits is not None)
        ops: list[Op] = []
        carry: tuple[str, ...] = ()
        if edits is not None:
            # Its own projection, so that it runs once per record however many steps read it.
            text = f"{edited_text('value', self.unread_value_fields, edits)} AS {VALUE_TEXT}"
            ops.append(lambda frame: frame.selectExpr("*", text))
            carry = (VALUE_TEXT,)
        for step in self.steps:
            # Each step reads the previous one's columns by name (the first, the batch's columns).
            op, rec = materialize(rec, original, carry)
            ops.append(op)
            original = ORIGINAL
            if isinstance(step.transform, SqlTransform):
                frame = batch
                for done in ops:
                    frame = done(frame)
                op, rec = sql_step(frame, rec, step.alias, step.transform, self.side)
                ops.append(op)
                continue
            rec = self._apply(step, rec)
        finish, may_fail = self._finish(rec, batch, original, as_text=edits is not None)
        ops.append(finish)
        return ops, may_fail

    def _apply(self, step: Step, rec: Rec) -> Rec:
        """`rec` after one transform, where its predicate (if any) holds."""
        step.transform.header_converter = self.header_converter
        changed = step.transform.apply(rec)
        if step.predicate is None:
            return changed
        cond = step.predicate.test(rec)
        return rec.choose(f"NOT ({cond})" if step.negate else cond, changed)

    def topic_route(self, topic: str) -> str | None:
        """The SQL expression of the topic a record of `topic` leaves the transforms with, when the
        chain keeps every record (nothing dropped; with errors.tolerance=none a failing record fails
        the task rather than being skipped); None otherwise. Every field but the topic is an unknown
        column, so an expression that resolves with no input depends on the topic alone: a caller
        evaluating it learns the record's topic before any record exists (execution/factory.py)."""
        if self.policy.tolerant or self.has_sql_step:
            return None
        unknown = Datum("`?binary`", "binary")
        rec = Rec(
            x.text(topic),
            "`?partition`",
            "`?offset`",
            "`?timestamp`",
            "`?headers`",
            unknown,
            unknown,
            NO_ERROR,
            "false",
            self.side,
        )
        for step in self.steps:
            rec = self._apply(step, rec)
        return rec.topic if rec.drop == "false" else None

    def _start(self, batch: DataFrame, as_text: bool = False) -> tuple[Rec, str]:
        """The record over the batch's own columns, and the expression of its original (for errors).
        `as_text`: the value's text edit is in column VALUE_TEXT; where it answered, the value here is
        NULL and nothing of the converter runs (it is read only where the edit did not answer)."""
        columns = set(batch.columns)
        headers = f"coalesce(headers, {x.EMPTY_HEADERS})" if "headers" in columns else x.EMPTY_HEADERS
        if self.side == "sink":
            key, key_error = self.key_converter.to_connect("key")
            value, value_error = self.value_converter.to_connect("value", self.unread_value_fields)
            if as_text:
                guard = f"{VALUE_TEXT} IS NULL"
                value = replace(value, col=x.when(guard, value.col))
                value_error = None if value_error is None else x.when(guard, value_error)
            # Without errors.tolerance=all the original serves only a failure's text and the output's
            # timestampType: a copy of each record's key, value and headers would be made for nothing.
            kept: tuple[str, ...] = ("topic", "partition", "offset", "timestampType")
            if self.policy.tolerant:  # errant records go on whole (the dead letter queue, the error log)
                kept = ("key", "value", "headers", "topic", "partition", "offset", "timestamp", "timestampType")
            original = "struct(" + ", ".join(c for c in kept if c in columns) + ")"
            rec = Rec("topic", "partition", "offset", "timestamp", headers, key, value, NO_ERROR, "false", "sink")
            if key_error is not None:
                rec = rec.fail(f"{key_error} IS NOT NULL", key_error, self.key_converter.class_name, KEY_CONVERTER)
            if value_error is not None:
                rec = rec.fail(
                    f"{value_error} IS NOT NULL", value_error, self.value_converter.class_name, VALUE_CONVERTER
                )
        else:
            fields = {f.name: f for f in batch.schema.fields}
            partition = "CAST(partition AS INT)" if "partition" in columns else "CAST(NULL AS INT)"
            timestamp = "CAST(timestamp AS TIMESTAMP)" if "timestamp" in columns else "CAST(NULL AS TIMESTAMP)"
            key = (
                source_datum("key", fields["key"].dataType, fields["key"].nullable)
                if "key" in columns
                else Datum("CAST(NULL AS BINARY)", "binary")
            )
            value = source_datum("value", fields["value"].dataType, fields["value"].nullable)
            original = (
                f"named_struct('topic', topic, 'partition', {partition}, 'offset', CAST(NULL AS BIGINT), "
                f"'timestamp', {timestamp})"
            )
            rec = Rec(
                "topic", partition, "CAST(NULL AS BIGINT)", timestamp, headers, key, value, NO_ERROR, "false", "source"
            )
        return rec, original

    @property
    def unread_value_fields(self) -> frozenset[str]:
        """The value's top-level fields that no transform reads and none lets through to the sink (each
        transform says, from the last to the first; one under a predicate must also hold where it does not
        apply, as the record then goes on unchanged). The sink reads the whole value it is given."""
        unread: frozenset[str] = frozenset()
        for step in reversed(self.steps):
            before = step.transform.unread_value_fields(unread)
            unread = before if step.predicate is None else before & unread
        return unread

    def _finish(self, rec: Rec, batch: DataFrame, original: str, as_text: bool = False) -> tuple[Op, bool]:
        if self.side == "source":
            key, key_error = self.key_converter.from_connect(rec.key)
            value, value_error = self.value_converter.from_connect(rec.value)
            if key_error is not None:
                rec = rec.fail(f"{key_error} IS NOT NULL", key_error, self.key_converter.class_name, KEY_CONVERTER)
            if value_error is not None:
                rec = rec.fail(
                    f"{value_error} IS NOT NULL", value_error, self.value_converter.class_name, VALUE_CONVERTER
                )
            outputs = [f"{rec.topic} AS topic", f"{key} AS key", f"{value} AS value", f"{rec.headers} AS headers"]
            if "partition" in batch.columns:
                outputs.append(f"{rec.partition} AS partition")
        else:
            outputs = [
                f"{rec.topic} AS topic",
                f"{rec.partition} AS partition",
                f"{rec.offset} AS offset",
                f"{rec.timestamp} AS timestamp",
                f"{original}.timestampType AS timestampType",
                f"{rec.headers} AS headers",
                f"{output(rec.key)} AS key",
                f"{sink_text(output(rec.value)) if as_text else output(rec.value)} AS value",
            ]
            for name, datum in (("key_schema", rec.key), ("value_schema", rec.value)):
                if datum.schema is not None:
                    outputs.append(f"to_json({datum.schema}) AS {name}")
        if rec.error == NO_ERROR and rec.drop == "false":
            # Nothing can fail or be dropped: the records are the outputs, with no error columns to
            # split on and drop again (each DataFrame step is analysed in the JVM, once per batch).
            return (lambda frame: select_sql(frame, outputs)), False
        selected = [*outputs, f"{rec.error} AS {ERROR}", f"{original} AS {ORIGINAL}"]
        kept = f"NOT {rec.drop} OR {rec.error} IS NOT NULL"
        return (lambda frame: select_sql(barrier(frame, kept), selected)), True

    def _split(self, done: DataFrame, may_fail: bool) -> Outcome:
        if not may_fail:
            return Outcome(done)
        names = [c for c in done.columns if c not in (ERROR, ORIGINAL)]
        if not self.policy.tolerant:
            text = errors.failure_text(ERROR, f"{ORIGINAL}.topic", f"{ORIGINAL}.partition", f"{ORIGINAL}.offset")
            checked = barrier(done, f"(CASE WHEN {ERROR} IS NOT NULL THEN raise_error({text}) END) IS NULL")
            return Outcome(checked.select(*names))
        if self.cache_split:
            done = done.persist()
        errant = barrier(done, f"{ERROR} IS NOT NULL").selectExpr(f"{ORIGINAL} AS original", f"{ERROR} AS error")
        good = barrier(done, f"{ERROR} IS NULL").select(*names)
        return Outcome(good, errant, [done] if self.cache_split else [])

    # ------------------------------------------------------------------ SQL steps
    # ------------------------------------------------------------------ errant records
    def dead_letters(self, outcome: Outcome, admin: KafkaClientSettings | None) -> DataFrame | None:
        """Log the batch's errant records (errors.log.enable) and return its DLQ records (topic, key,
        value, headers) for a sink with a DLQ topic; None when there is nothing to write. `admin` (the task's
        admin settings; needed only with a DLQ topic) creates the topic the first time."""
        if outcome.errant is None:
            return None
        errant = outcome.errant.persist()
        outcome.cached.append(errant)
        count = errant.count()
        if count == 0:
            return None
        log.info(
            "task %s-%d: %d record(s) failed and were skipped (errors.tolerance=all)",
            self.connector,
            self.task_id,
            count,
        )
        logged = 0
        if self.policy.log_enable:
            logged = errors.log_errant(errant, self.policy, self.connector, self.task_id, self.side == "sink")
        self.error_counts.failed(count, skipped=True, logged=logged)
        dlq = self.policy.dlq
        if self.side != "sink" or dlq is None:
            return None
        if not self._dlq_ready:
            if admin is None:
                raise ValueError(f"task {self.connector}-{self.task_id}: the dead letter queue needs admin settings")
            errors.ensure_topic(admin, dlq.topic, dlq.replication_factor)
            self._dlq_ready = True
        records = errors.dlq_records(errant, self.policy, self.connector, self.task_id)
        return records.selectExpr(f"{x.text(dlq.topic)} AS topic", "*")


# ---------------------------------------------------------------------- compiling a config


def compile_pipeline(
    config: Mapping[str, str],
    worker_defaults: Mapping[str, str] | None = None,
    kind: Side = "sink",
    connector: str = "",
    task_id: int = 0,
    value_as_text: bool = False,
) -> Pipeline:
    """Build a task's pipeline from its connector config; converters not set on the connector come
    from the worker's (`worker_defaults`), as in Connect; `value_as_text` as `Pipeline` says. Raises
    PipelineConfigError naming the key."""
    defaults = dict(worker_defaults or {})
    errs = {k: v for k, v in enrichment.validate(config, kind).items() if v}
    if errs:
        detail = "; ".join(f"{k}: {' '.join(v)}" for k, v in errs.items())
        raise PipelineConfigError(f"Invalid converter, transform or error-handling configuration: {detail}")
    parsed = enrichment.enriched(config, kind).parse(config)
    policy = errors.ErrorPolicy.from_config(parsed)
    steps = []
    for alias in enrichment.aliases(config, keys.TRANSFORMS):
        prefix = f"transforms.{alias}."
        cls = catalog.transformation(config[prefix + "type"])
        assert cls is not None
        props = {
            k: v for k, v in enrichment.sub_config(config, prefix).items() if k not in ("type", "predicate", "negate")
        }
        predicate = None
        predicate_alias = parsed[prefix + "predicate"]
        if predicate_alias:
            pprefix = f"predicates.{predicate_alias}."
            pcls = catalog.predicate(config.get(pprefix + "type"))
            assert pcls is not None
            predicate = pcls({k: v for k, v in enrichment.sub_config(config, pprefix).items() if k != "type"})
        steps.append(Step(alias, cls(props), predicate, bool(parsed[prefix + "negate"])))
    return Pipeline(
        side=kind,
        key_converter=_converter(config, defaults, "key"),
        value_converter=_converter(config, defaults, "value"),
        header_converter=_converter(config, defaults, "header"),
        steps=steps,
        policy=policy,
        connector=connector,
        task_id=task_id,
        value_as_text=value_as_text,
    )


def _converter(config: Mapping[str, str], defaults: Mapping[str, str], which: str) -> Converter:
    name = f"{which}.converter"
    source = config if config.get(name) else defaults
    default = DEFAULT_HEADER_CONVERTER if which == "header" else DEFAULT_CONVERTER
    class_name = source.get(name) or default
    finder = catalog.header_converter if which == "header" else catalog.converter
    cls = finder(class_name)
    if cls is None:
        raise PipelineConfigError(
            f"Invalid value {class_name} for configuration {name}: Class {class_name} could not be found."
        )
    props = {"converter.type": which, **enrichment.sub_config(source, f"{name}.")}
    try:
        return cls(props)
    except ValueError as exc:
        raise PipelineConfigError(f"{name} ({class_name}): {exc}") from exc
