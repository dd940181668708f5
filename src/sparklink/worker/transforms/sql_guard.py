"""What a SQL transform's statement may be: one query over the table `records`, nothing else.
Callers: the SQL transform's validator (smt/sql.py: create, update, `/config/validate`) and the SQL
step when a task's pipeline is built (sql_step.py).

A statement runs in the worker's SparkSession, where full Spark SQL could read any file
(`` text.`/etc/passwd` ``), call static Java methods (`reflect`), run a program (`SELECT TRANSFORM ...
USING`), read the worker's environment through variable substitution (`${env:...}`) or change the
session (`SET`, DDL). So a statement is refused, with the part that broke the rule named, when it

- holds `${` (Spark would substitute `${env:..}`, `${system:..}`, `${spark:..}` before parsing);
- is not exactly one query (a SELECT, a set operation of SELECTs, FROM-first SELECT): no DDL, DML,
  SET, CACHE, EXPLAIN or other commands, no second statement;
- reads any relation but `records` or a CTE the statement itself defines: no table, view, file
  (`format.`path``), table-valued function (`range`, `read_files`, `explode` in FROM), IDENTIFIER(...)
  clause, in FROM, a join or a subquery alike;
- calls `reflect`, `java_method` or `try_reflect`, or runs a script (TRANSFORM ... USING).

Twice, with two parsers. At validate time with sqlglot's Databricks dialect (Spark's grammar plus the
`value:field` paths Spark 4 reads), since the herder does not import pyspark; and when the task is
built with Spark's own parser, walking the unresolved plan, so a statement stored before these rules,
or one the two grammars read differently, still cannot run. Since the statement never holds `${`,
Spark's variable substitution has nothing to replace in it, whatever the session's setting, and the
session is left as it is.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import TokenType, exp
from sqlglot.errors import SqlglotError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

RECORDS = "records"
REFLECTION = frozenset({"reflect", "java_method", "try_reflect"})
DIALECT = "databricks"
ONLY_RECORDS = "a SQL transform reads only the table 'records'"
ONE_QUERY = "a SQL transform is one SELECT query over 'records' (no DDL, DML, SET, commands or second statement)"
NO_REFLECTION = "a SQL transform may not call Java methods (reflect, java_method, try_reflect)"
NO_SUBSTITUTION = (
    "variable substitution (${...}) is off in a SQL transform; write '$' || '{' if the text needs those characters"
)
NO_SCRIPTS = "a SQL transform may not run a program (SELECT TRANSFORM ... USING)"
FILE_FORMATS = frozenset({"text", "csv", "json", "parquet", "orc", "avro", "binaryfile", "xml", "delta", "jdbc"})


class SqlRefused(ValueError):
    """A statement the SQL transform does not run; the message names the part and the rule."""


def refusal(statement: str) -> str | None:
    """Why `statement` may not run as a SQL transform (sqlglot's reading), or None if it may."""
    text = statement.strip().rstrip(";")
    if "${" in text:
        return f"it holds {_excerpt(text, text.index('${'))}: {NO_SUBSTITUTION}"
    try:
        found = _reflection_token(text)
        if found:
            return f"it calls {found}(): {NO_REFLECTION}"
        sqlglot_log = logging.getLogger("sqlglot")
        level = sqlglot_log.level
        sqlglot_log.setLevel(logging.ERROR)  # "falling back to parsing as a Command" is our refusal to give
        try:
            trees = [t for t in sqlglot.parse(text, read=DIALECT) if t is not None]
        finally:
            sqlglot_log.setLevel(level)
    except SqlglotError as exc:
        return f"it does not parse as Spark SQL ({str(exc).splitlines()[0][:200]})"
    if len(trees) != 1:
        return f"it holds {len(trees)} statements: {ONE_QUERY}"
    (tree,) = trees
    if not isinstance(tree, exp.Query):
        return f"it is not a query but {tree.key.upper()}: {ONE_QUERY}"
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for node in tree.walk():
        reason = _node_refusal(node, ctes)
        if reason:
            return reason
    return None


def _node_refusal(node: exp.Expr, ctes: set[str]) -> str | None:
    if isinstance(node, exp.QueryTransform):
        return f"it runs {node.sql(DIALECT)[:120]}: {NO_SCRIPTS}"
    if isinstance(node, exp.Table):
        if not isinstance(node.this, exp.Identifier):
            if _func_name(node.this) == "identifier":
                return f"it names a relation with {node.this.sql(DIALECT)[:120]}: {ONLY_RECORDS}"
            return f"it reads the table-valued function {_func_name(node.this)}: {ONLY_RECORDS}"
        if node.db or node.catalog:
            if node.db.lower() in FILE_FORMATS and not node.catalog:
                return f"it reads the file {node.name} through the {node.db} format: {ONLY_RECORDS}"
            return f"it reads {'.'.join(p for p in (node.catalog, node.db, node.name) if p)}: {ONLY_RECORDS}"
        if node.name.lower() != RECORDS and node.name.lower() not in ctes:
            return f"it reads {node.name}: {ONLY_RECORDS}"
    if isinstance(node, exp.Func):
        name = _func_name(node)
        if name in REFLECTION:
            return f"it calls {name}(): {NO_REFLECTION}"
    return None


def _func_name(node: exp.Expr) -> str:
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    if isinstance(node, exp.Func):
        return node.sql_name().lower()
    return node.sql(DIALECT)[:120]


def _reflection_token(text: str) -> str | None:
    """A reflection function or IDENTIFIER(...) called by name anywhere, however the name is qualified
    or quoted (`system.builtin.reflect(`, `` `java_method`( ``); the AST check alone would miss a
    form sqlglot reads as something else."""
    tokens = sqlglot.tokenize(text, read=DIALECT)
    for token, after in itertools.pairwise(tokens):
        if after.token_type is not TokenType.L_PAREN or token.token_type is TokenType.STRING:
            continue
        if token.text.lower() in REFLECTION:
            return token.text.lower()
    return None


def _excerpt(text: str, at: int) -> str:
    end = text.find("}", at)
    return text[at : end + 1 if 0 <= end < at + 60 else at + 20]


# ---------------------------------------------------------------------------------------- Spark's reading
def spark_refusal(spark: SparkSession, statement: str) -> str | None:
    """Why `statement` may not run (Spark's own parser, its unresolved plan walked), or None if it may."""
    text = statement.strip().rstrip(";")
    if "${" in text:
        return f"it holds {_excerpt(text, text.index('${'))}: {NO_SUBSTITUTION}"
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    try:
        plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(text)
    except Exception as exc:  # a ParseException through Py4J
        return f"it does not parse as Spark SQL ({_java_message(exc)})"
    walk = _PlanWalk(jvm)
    return walk.plan(plan, root=True)


class _PlanWalk:
    """Walks an unresolved logical plan over Py4J: its nodes, their expressions, CTEs and subqueries."""

    def __init__(self, jvm: Any) -> None:
        logical = "org.apache.spark.sql.catalyst.plans.logical."
        self._command = jvm.java.lang.Class.forName(logical + "Command")
        self._statement = jvm.java.lang.Class.forName(logical + "ParsedStatement")
        self._subquery = jvm.java.lang.Class.forName("org.apache.spark.sql.catalyst.expressions.SubqueryExpression")
        self._ctes: set[str] = set()

    def plan(self, node: Any, root: bool = False) -> str | None:
        kind = str(node.getClass().getSimpleName())
        if self._command.isInstance(node) or self._statement.isInstance(node) or kind == "InsertIntoStatement":
            return f"it is not a query but {node.nodeName()}: {ONE_QUERY}"
        if kind == "UnresolvedWith":
            for relation in _seq(node.cteRelations()):
                self._ctes.add(str(relation._1()).lower())
        if kind == "UnresolvedRelation":
            parts = [str(p) for p in _seq(node.multipartIdentifier())]
            name = ".".join(parts)
            if len(parts) == 2 and parts[0].lower() in FILE_FORMATS:
                return f"it reads the file {parts[1]} through the {parts[0]} format: {ONLY_RECORDS}"
            if len(parts) != 1 or (parts[0].lower() != RECORDS and parts[0].lower() not in self._ctes):
                return f"it reads {name}: {ONLY_RECORDS}"
        if kind in ("UnresolvedTableValuedFunction", "UnresolvedTVFAliases"):
            return f"it reads the table-valued function {'.'.join(str(p) for p in _seq(node.name()))}: {ONLY_RECORDS}"
        if kind == "PlanWithUnresolvedIdentifier":
            return f"it names a relation with IDENTIFIER(...): {ONLY_RECORDS}"
        if kind == "ScriptTransformation":
            return f"it runs the script {str(node.script())!r}: {NO_SCRIPTS}"
        # CTE definitions first, so that the references after them are known.
        children = [*_seq(node.innerChildren()), *_seq(node.children())]
        return _first(self.plan, children) or _first(self.expression, _seq(node.expressions()))

    def expression(self, node: Any) -> str | None:
        kind = str(node.getClass().getSimpleName())
        if kind == "UnresolvedFunction":
            name = str(_seq(node.nameParts())[-1]).lower()
            if name in REFLECTION:
                return f"it calls {name}(): {NO_REFLECTION}"
        if kind == "ExpressionWithUnresolvedIdentifier":
            return f"it names a function or column with IDENTIFIER(...): {ONLY_RECORDS}"
        subquery = [node.plan()] if self._subquery.isInstance(node) else []
        return _first(self.plan, subquery) or _first(self.expression, _seq(node.children()))


def _first(check: Callable[[Any], str | None], nodes: Iterable[Any]) -> str | None:
    """The first reason `check` gives for one of `nodes`, checked in order up to that one; None if none."""
    return next((reason for node in nodes if (reason := check(node))), None)


def _seq(seq: Any) -> list[Any]:
    """A Scala Seq's elements."""
    return [seq.apply(i) for i in range(seq.size())]


def _java_message(exc: Exception) -> str:
    java = getattr(exc, "java_exception", None)
    text = str(java.getMessage()) if java is not None else str(exc)
    return text.strip().splitlines()[0][:200] if text.strip() else type(exc).__name__
