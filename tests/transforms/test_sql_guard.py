"""The SQL transform runs one query over `records` and nothing else: each way out of that is refused by
the validator (sqlglot) and again by Spark's own parser when the task's pipeline is built."""

from __future__ import annotations

from typing import Any

import pytest

from sparklink.worker.transforms import enrichment, sql_guard
from sparklink.worker.transforms.pipeline import compile_pipeline
from tests.transforms.harness import SCHEMALESS, kafka_batch

REFUSED = [
    # (statement, words the refusal must hold: the part, then the rule)
    ("SELECT * FROM text.`/etc/passwd`", ["/etc/passwd", "text format", "reads only the table 'records'"]),
    ("SELECT * FROM parquet.`/var/data`", ["/var/data", "parquet format"]),
    (
        "SELECT reflect('java.lang.System', 'getenv', 'HOME') AS value, topic FROM records",
        ["reflect()", "Java methods"],
    ),
    ("SELECT java_method('java.lang.System', 'exit', 0) AS value, topic FROM records", ["java_method()"]),
    ("SELECT try_reflect('java.lang.System', 'exit', 0) AS value, topic FROM records", ["try_reflect()"]),
    ("SELECT system.builtin.reflect('a', 'b') AS value, topic FROM records", ["reflect()"]),
    ("SELECT '${env:HOME}' AS value, topic FROM records", ["${env:HOME}", "variable substitution"]),
    ("SELECT '${system:user.home}' AS value, topic FROM records", ["${system:user.home}"]),
    ("SELECT * FROM records r JOIN secrets s ON r.key = s.key", ["reads secrets", "reads only the table 'records'"]),
    ("SELECT * FROM records WHERE key IN (SELECT key FROM secrets)", ["reads secrets"]),
    ("SELECT * FROM records WHERE EXISTS (SELECT 1 FROM global_temp.v)", ["global_temp.v"]),
    ("WITH records AS (SELECT * FROM secrets) SELECT * FROM records", ["reads secrets"]),
    ("SELECT * FROM range(10)", ["table-valued function", "range"]),
    ("SELECT * FROM read_files('/etc')", ["table-valued function", "read_files"]),
    ("SELECT * FROM IDENTIFIER('secrets')", ["secrets"]),
    ("SELECT TRANSFORM(value) USING 'cat /etc/passwd' AS (value) FROM records", ["cat /etc/passwd", "run a program"]),
    ("CREATE TABLE t AS SELECT * FROM records", ["not a query", "no DDL, DML, SET"]),
    ("INSERT INTO t SELECT * FROM records", ["not a query"]),
    ("CACHE TABLE t AS SELECT * FROM records", ["not a query"]),
    ("EXPLAIN SELECT * FROM records", ["not a query"]),
]
ALLOWED = [
    "SELECT key, topic, to_variant_object(named_struct('id', value:id::int)) AS value FROM records "
    "WHERE value:amount::int > 100",
    "WITH big AS (SELECT * FROM records WHERE partition = 0) SELECT * FROM big",
    "SELECT *, (SELECT count(*) FROM records) AS n FROM records",
    "SELECT * FROM records UNION ALL SELECT * FROM records",
    "FROM records SELECT *",
    "SELECT key, topic, transform(array(1, 2), x -> x + 1) AS value FROM records",
    "SELECT key, topic, x AS value FROM records LATERAL VIEW explode(array(1)) t AS x",
    "SELECT key, topic, concat('$', '{not a variable}') AS value FROM records;",
]


@pytest.mark.parametrize(("statement", "words"), REFUSED, ids=[s for s, _ in REFUSED])
def test_the_validator_refuses_each_way_out_naming_the_part_and_the_rule(statement: str, words: list[str]) -> None:
    config = {"transforms": "q", "transforms.q.type": "sql", "transforms.q.statement": statement}
    (error,) = enrichment.validate(config, "sink")["transforms.q.statement"]
    assert error.startswith("The SQL statement of transforms.q.statement is refused: it ")
    for word in words:
        assert word in error


@pytest.mark.parametrize(("statement", "words"), REFUSED, ids=[s for s, _ in REFUSED])
def test_sparks_own_parser_refuses_them_too(spark: Any, statement: str, words: list[str]) -> None:
    reason = sql_guard.spark_refusal(spark, statement)
    assert reason is not None
    assert words[-1] in reason or "does not parse" in reason


def test_more_than_one_statement_is_refused_by_both() -> None:
    reason = sql_guard.refusal("SELECT * FROM records; DROP TABLE t")
    assert reason is not None and "2 statements" in reason


@pytest.mark.parametrize("statement", ALLOWED)
def test_queries_over_records_pass_both_parsers(spark: Any, statement: str) -> None:
    assert sql_guard.refusal(statement) is None
    assert sql_guard.spark_refusal(spark, statement) is None


def test_a_statement_stored_before_the_rules_fails_the_build_and_reads_nothing(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A config written before the validator knew the rule (here: the validator's check switched off)
    is refused by Spark's parser when the task's pipeline is built; nothing is read."""
    monkeypatch.setattr(sql_guard, "refusal", lambda statement: None)
    config = {
        **SCHEMALESS,
        "transforms": "q",
        "transforms.q.type": "sql",
        "transforms.q.statement": "SELECT r.key, f.value, r.topic FROM records r CROSS JOIN text.`/etc/hostname` f",
    }
    batch = kafka_batch(spark, [{"value": {"a": 1}}])
    jobs_before = spark.sparkContext.statusTracker().getJobIdsForGroup()
    with pytest.raises(sql_guard.SqlRefused, match=r"transform 'q' is refused: it reads the file /etc/hostname"):
        compile_pipeline(config).run(batch)
    assert spark.sparkContext.statusTracker().getJobIdsForGroup() == jobs_before


def test_a_stored_substitution_never_reaches_spark(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sql_guard, "refusal", lambda statement: None)
    monkeypatch.setattr(sql_guard, "spark_refusal", lambda session, statement: None)
    config = {
        **SCHEMALESS,
        "transforms": "q",
        "transforms.q.type": "sql",
        "transforms.q.statement": "SELECT '${env:HOME}' AS value, topic FROM records",
    }
    with pytest.raises(sql_guard.SqlRefused, match="variable substitution"):
        compile_pipeline(config).run(kafka_batch(spark, [{"value": {"a": 1}}]))
    # The session keeps Spark's own setting: nothing was switched off for everyone else.
    assert spark.conf.get("spark.sql.variable.substitute") == "true"
