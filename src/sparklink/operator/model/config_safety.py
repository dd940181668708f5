"""What a resource's `config` may hand to the processes the operator starts, on top of Strimzi's forbidden
prefixes (which `model.workers` and `model.kafka_config` apply).

1. No key or value holds a line break or another control character (Java's `Character.isISOControl`, and
   the Unicode line and paragraph separators). Settings become lines of a properties file
   (worker.properties, the workers' ConfigMap, server.properties): a line break would start a setting of
   the resource's choosing, past every forbidden prefix. Such a resource is refused as a whole
   (`UnsafeConfig`): nothing of it is written and what runs keeps its settings; the reconciler turns the
   refusal into a Warning condition that names each key and says what to do. Values are never quoted back:
   they may be secrets.
2. Of Spark's settings (`spark.*`), which a worker hands to the JVM it launches, only sizing and tuning
   keys pass (`SPARK_ALLOWED`). JVM options, jars, packages, plugins, class paths, listeners, the UI, proxies,
   ACLs and extensions would run code or open ports as the operator's user; they are dropped, each with a
   Warning, as Strimzi drops its forbidden options.
Callers: `model.workers` (KafkaConnect, KafkaMirrorMaker2) and `model.kafka` (Kafka, KafkaNodePool).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sparklink.operator.model.conditions import REASON_INVALID_RESOURCE, Condition, ReconcileFailure, warning
from sparklink.operator.model.resources import config_value

REASON_UNSAFE = "UnsafeConfigOption"
REASON_SPARK = "ForbiddenSparkOption"

SPARK_PREFIX = "spark."
# Sizing and tuning only: how much memory and how many cores, how many partitions, how long to wait.
SPARK_ALLOWED = frozenset(
    {
        "spark.driver.cores", "spark.driver.memory", "spark.driver.memoryOverhead", "spark.driver.maxResultSize",
        "spark.executor.cores", "spark.executor.instances", "spark.executor.memory",
        "spark.executor.memoryOverhead", "spark.executor.pyspark.memory", "spark.executor.heartbeatInterval",
        "spark.cores.max", "spark.task.cpus", "spark.default.parallelism", "spark.sql.shuffle.partitions",
        "spark.sql.files.maxPartitionBytes", "spark.memory.fraction", "spark.memory.storageFraction",
        "spark.memory.offHeap.enabled", "spark.memory.offHeap.size", "spark.python.worker.memory",
        "spark.python.worker.reuse", "spark.dynamicAllocation.enabled", "spark.dynamicAllocation.minExecutors",
        "spark.dynamicAllocation.maxExecutors", "spark.dynamicAllocation.initialExecutors",
        "spark.dynamicAllocation.executorIdleTimeout", "spark.locality.wait", "spark.network.timeout",
    }
)  # fmt: skip
_SEPARATORS = ("\u2028", "\u2029")  # line breaks to Unicode readers (Python's splitlines among them)
_NAMES = {"\n": "a line break (\\n)", "\r": "a carriage return (\\r)", "\t": "a tab (\\t)", "\x00": "a NUL byte"}


class UnsafeConfig(ReconcileFailure):
    """Keys or values a properties file cannot hold safely; `problems` name each one (never a value)."""

    def __init__(self, owner: str, problems: list[str], kept: str) -> None:
        self.problems = problems
        message = (
            f"{owner}: {'; '.join(problems)}. A configuration key or value may not contain line breaks or other "
            f"control characters: write each option on one line, without control characters. Nothing of this "
            f"change was applied; {kept}."
        )
        super().__init__(message, REASON_INVALID_RESOURCE)

    def condition(self) -> Condition:
        return warning(REASON_UNSAFE, self.message)


def is_control(char: str) -> bool:
    """Java's Character.isISOControl (U+0000-U+001F, U+007F-U+009F), and U+2028/U+2029."""
    return ord(char) <= 0x1F or 0x7F <= ord(char) <= 0x9F or char in _SEPARATORS


def shown(text: str) -> str:
    """`text` quoted, its control characters escaped, so a message shows a key without breaking a line."""
    return '"' + "".join(f"\\u{ord(c):04x}" if is_control(c) else c for c in text) + '"'


def problems_in(raw: Any, where: str) -> list[str]:
    """Each key of the mapping `raw` (`config` at `where`) whose key or written value holds a control
    character, as a phrase for a message ("spec.config option "a\\u000ab" has a line break (\\n) in its key")."""
    out = []
    for key, value in raw.items() if isinstance(raw, Mapping) else ():
        text_key = str(key)
        for part, text in (("key", text_key), ("value", "" if value is None else config_value(value))):
            found = next((c for c in text if is_control(c)), None)
            if found is not None:
                what = _NAMES.get(found, f"the control character U+{ord(found):04X}")
                out.append(f"{where} option {shown(text_key)} has {what} in its {part}")
    return out


def field_problems(fields: Iterable[tuple[str, Any]]) -> list[str]:
    """The same for single fields written into settings (bootstrapServers, groupId, topic names, ...)."""
    out = []
    for where, value in fields:
        found = next((c for c in str(value) if is_control(c)), None) if value is not None else None
        if found is not None:
            out.append(f"{where} has {_NAMES.get(found, f'the control character U+{ord(found):04X}')}")
    return out


def spark_forbidden(key: str) -> bool:
    """A Spark setting a resource may not set (any `spark.*` key not in `SPARK_ALLOWED`)."""
    return key.lower().startswith(SPARK_PREFIX) and key not in SPARK_ALLOWED


def spark_warnings(options: Iterable[str]) -> tuple[Condition, ...]:
    return tuple(
        warning(
            REASON_SPARK,
            f'Configuration option "{option}" is not a Spark setting a resource may set and was ignored: only '
            "sizing and tuning options pass (spark.executor.memory, spark.executor.cores, spark.driver.memory, "
            "spark.sql.shuffle.partitions, spark.default.parallelism, ...; the README lists them). JVM options, "
            "jars, packages, plugins and class paths belong to the worker's image, not to a resource.",
        )
        for option in options
    )
