"""`datagen`: a source that generates numbered records at a set rate, for demos, tests and benchmarks.

Each task runs Spark's JVM `rate` source, so records are made and written to Kafka without passing
through Python. Task n numbers its records 0, 1, 2, ... (`seq`); its source partition is {"task": n}
and its offset {"position": next seq}, so a restarted task continues where its last written batch ended.

Spark's `rate` source counts whole seconds since the stream was created and emits nothing until
the first has passed: a started (or restarted) task would write its first record only on its
second trigger, a second after the query started. Its creation time lives in the query's
checkpoint (`sources/0/0`, written only when absent), and every task start gets a fresh
checkpoint, so the task seeds it one second back: the first trigger, at query start, writes that
second's records at once. The rate holds from then on; a task's life carries one second of records more.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparklink.api import config as cfg
from sparklink.api.connector import NumberType, Offset, Partition, SourceConnector, SourceTask, TaskContext
from sparklink.api.direct import DirectSource

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

CONFIG = (
    cfg.ConfigDef()
    .key("topic", "STRING", "Topic to write generated records to.", importance="HIGH", validator=cfg.non_empty)
    .key(
        "records.per.second",
        "INT",
        "Records per second for the whole connector, split evenly across its tasks.",
        default=10,
        validator=cfg.at_least(1),
    )
    .key(
        "total.records",
        "LONG",
        "Records to generate in all, split across tasks; -1 generates without end.",
        default=-1,
        validator=cfg.at_least(-1),
    )
    .key(
        "key.shape",
        "STRING",
        'Record key: `seq` ("<task>-<seq>") or `none`.',
        default="seq",
        choices=("seq", "none"),
    )
    .key(
        "value.shape",
        "STRING",
        'Record value: `json` ({"task","seq","ts","payload"}) or `string` (the payload alone).',
        default="json",
        choices=("json", "string"),
    )
    .key(
        "value.size",
        "INT",
        "Length of the padding payload in each value, in bytes.",
        default=16,
        validator=cfg.at_least(0),
    )
    .key(
        "fail.after.records",
        "LONG",
        "Fault injection: a task fails when it reaches this seq; -1 never fails.",
        default=-1,
        importance="LOW",
        validator=cfg.at_least(-1),
    )
    .key(
        "fail.task",
        "INT",
        "Fault injection: which task fails (-1 means every task).",
        default=-1,
        importance="LOW",
        validator=cfg.at_least(-1),
    )
)


class DatagenConnector(SourceConnector):
    @classmethod
    def config_def(cls) -> cfg.ConfigDef:
        return CONFIG

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        parsed = CONFIG.parse(self.config)
        total = int(parsed["total.records"])
        rate = int(parsed["records.per.second"])
        tasks = max(1, min(max_tasks, rate))
        out = []
        for n in range(tasks):
            share = -1 if total < 0 else total // tasks + (1 if n < total % tasks else 0)
            out.append({**self.config, "task.rate": str(max(1, rate // tasks)), "task.records": str(share)})
        return out

    def alter_offsets(self, config: Mapping[str, str], offsets: list[tuple[Partition, Offset | None]]) -> bool:
        """Only `{"task": <id>}` -> `{"position": <next seq>}` with non-negative integers (or null to remove)."""
        for partition, offset in offsets:
            task = partition.get("task")
            if set(partition) != {"task"} or not _count(task, INT_MAX):
                raise ValueError(
                    f'A datagen partition is {{"task": <task id, an integer from 0 to {INT_MAX}>}}, '
                    f"not {_json(partition)}"
                )
            if offset is None:
                continue
            if set(offset) != {"position"} or not _count(offset.get("position"), LONG_MAX):
                raise ValueError(
                    'A datagen offset is {"position": <the next sequence number to write, an integer from 0 '
                    f"to {LONG_MAX}>}} or null, not {_json(offset)}"
                )
        return False


class DatagenTask(SourceTask, DirectSource):
    def transforms_in_query(self) -> bool:
        return True  # its rows are the records, nothing more

    def stream(self, ctx: TaskContext) -> DataFrame:
        from pyspark.sql import functions as F

        parsed = CONFIG.parse(ctx.config)
        self._partition: Partition = {"task": ctx.task_id}
        start = _resume_position(ctx.task_id, ctx.resume)
        limit = int(ctx.config.get("task.records", "-1"))
        self._start, self._limit, self._rate = start, limit, int(ctx.config.get("task.rate", "1"))
        if ctx.checkpoint is not None:
            seed_rate_start(Path(ctx.checkpoint), time.time() - RATE_HEAD_START_S)
        rate = (
            ctx.spark.readStream.format("rate")
            .option("rowsPerSecond", ctx.config.get("task.rate", "1"))
            .option("numPartitions", "1")
            .load()
        )

        # The task's id and start position are held numbers where the runtime has them, so that every
        # task and every restart reuses one compiled stage (TaskContext.held). They and the topic (the
        # one text from the config) come in as Columns, and the record is SQL text over them: each
        # Column built in Python costs py4j round trips, 88 for this stream when all of it was Columns
        # against 38 now, and a fail-over starts several tasks at once on one interpreter lock.
        def number(value: int, sql_type: NumberType) -> Column:
            return ctx.held(value, sql_type) if ctx.held else F.lit(value).cast(sql_type)

        rows = rate.select(
            (F.col("value") + number(start, "bigint")).alias("seq"),
            F.col("timestamp"),
            number(ctx.task_id, "int").alias("task"),
            F.lit(parsed["topic"]).alias("topic"),
        )
        if limit >= 0:
            rows = rows.where(F.col("seq") < number(limit, "bigint"))
        payload = f"repeat('x', {int(parsed['value.size'])})"
        if parsed["value.shape"] == "json":
            # A Struct: the value.converter writes it (JSON text by default, Connect's envelope with
            # JsonConverter and schemas.enable=true).
            ts = "date_format(timestamp, 'yyyy-MM-dd\\'T\\'HH:mm:ss.SSSXXX')"
            value = f"named_struct('task', task, 'seq', seq, 'ts', {ts}, 'payload', {payload})"
        else:
            value = payload
        fail_after = int(parsed["fail.after.records"])
        if fail_after >= 0 and int(parsed["fail.task"]) in (-1, ctx.task_id):
            message = f"datagen task {ctx.task_id} failing at seq {fail_after} (fail.after.records)"
            value = f"CASE WHEN seq >= {fail_after} THEN raise_error('{message}') ELSE {value} END"
        # The prefix is a string literal: Spark's generated code refers to a string literal instead of
        # writing it in, so every task still shares one compiled stage, and no record casts its task id.
        key = f"concat('{ctx.task_id}-', CAST(seq AS STRING))" if parsed["key.shape"] == "seq" else "NULL"
        return rows.selectExpr("topic", f"CAST({key} AS STRING) AS key", f"{value} AS value", "seq")

    def batch_offsets(self, batch: DataFrame) -> list[tuple[Partition, Offset]]:
        from pyspark.sql import functions as F

        top = batch.agg(F.max("seq")).first()
        if top is None or top[0] is None:
            return []
        return [(self._partition, {"position": int(top[0]) + 1})]

    def batch_metrics(self) -> dict[str, Column] | None:
        """The batch's highest seq, observed while it is written: a batch is one Spark job."""
        from pyspark.sql import functions as F

        return {"max_seq": F.max("seq")}

    def observed_offsets(self, metrics: Mapping[str, Any]) -> list[tuple[Partition, Offset]]:
        top = metrics.get("max_seq")
        return [] if top is None else [(self._partition, {"position": int(top) + 1})]

    def topics(self, ctx: TaskContext) -> list[str] | None:
        return [ctx.config["topic"]]

    def progress_offsets(self, end: Any) -> list[tuple[Partition, Offset]]:
        """The `rate` source's position is whole seconds since its start, and it has made `rate` rows
        a second by then (values 0 .. rate * seconds - 1, each written as seq start + value)."""
        if not isinstance(end, int) or isinstance(end, bool):
            return []
        position = self._start + self._rate * end
        if self._limit >= 0:
            position = min(position, self._limit)
        return [(self._partition, {"position": position})] if position > self._start else []


RATE_HEAD_START_S = 1.0
"""How far back a task's `rate` stream is dated: one whole second, the rate source's unit."""


def seed_rate_start(checkpoint: Path, start_s: float) -> None:
    """Date the `rate` source of a new query with this checkpoint to `start_s` (epoch seconds).

    The rate source (RateStreamMicroBatchStream) keeps its creation time as batch 0 of its own
    metadata log, `<checkpoint>/sources/<source index>/0`, in the text form "v1\n<epoch ms>", and
    writes it only if absent. A datagen query has one source, so its index is 0. A checkpoint that
    already has one (a query resuming) is left alone."""
    log_dir = checkpoint / "sources" / "0"
    entry = log_dir / "0"
    if entry.exists():
        return
    log_dir.mkdir(parents=True, exist_ok=True)
    draft = log_dir / ".0.seed"
    draft.write_text(f"v1\n{int(start_s * 1000)}")
    draft.rename(entry)


INT_MAX, LONG_MAX = 2**31 - 1, 2**63 - 1
"""The largest task id and position: a task's id is a Spark int, its sequence numbers Spark longs."""


def _count(value: object, most: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= most


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _resume_position(task_id: int, resume: list[tuple[Partition, Offset]]) -> int:
    for partition, offset in resume:
        if partition.get("task") == task_id:
            return int(offset.get("position", 0))
    return 0


DatagenConnector.task_class = DatagenTask
