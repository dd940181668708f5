"""Python's side of the Connect host: Apache Kafka Connect's runtime inside the Spark JVMs, where Java
plugins run. Callers: the Java plugins of the worker's registry (plugins/java.py) and the Java task runs
(sparklink.worker.execution).

The host (jvm/connect-host) lives in a class loader of its own beside Spark's, built by the bridge
(jvm/connect-bridge) that Spark loads from spark.jars; Python reaches both over Py4J.

Configs and answers cross as JSON text; a Java exception becomes a `JavaError` that carries its Java
trace (a connector's FAILED status shows it). Callbacks from Java (a connector's context) reach Python
through PySpark's Py4J callback server, started on first use.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from sparklink.worker.plugins.desc import JavaError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["ConnectHost", "JavaError", "java_call", "to_json"]

T = TypeVar("T")


def java_call(action: Callable[[], T]) -> T:
    """Run a Py4J call; a Java exception is re-raised as a JavaError with the Java trace."""
    from py4j.protocol import Py4JJavaError

    try:
        return action()
    except Py4JJavaError as exc:
        trace = _java_trace(exc)
        raise JavaError(trace.splitlines()[0] if trace else str(exc), trace) from None


def _java_trace(exc: Any) -> str:
    text = str(exc)
    _, sep, trace = text.partition("\n: ")
    return trace.strip() if sep else text.strip()


def to_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


class ConnectHost:
    """The Connect host of the Spark driver's JVM (one per JVM and class path; workers sharing a JVM share it)."""

    def __init__(self, spark: SparkSession, classpath: str, callbacks: Callable[[], None]) -> None:
        """`classpath`: the host loader's jars, as every JVM that runs it opens them; `callbacks`: starts
        PySpark's Py4J callback server (Java calls Python back: a connector's context)."""
        jvm = spark._jvm
        assert jvm is not None, "the Connect host needs a running SparkSession"
        self.spark = spark
        self.classpath = classpath
        self.callbacks = callbacks
        self._bridge = jvm.io.sparklink.connect.bridge.Bridge
        self._host = java_call(lambda: self._bridge.host(self.classpath))
        self.kafka_version = str(self._host.kafkaVersion())

    def plugins(self, plugin_path: str, discovery: str) -> Any:
        """The host's PluginCalls for a plugin.path (scanned once per JVM)."""
        return java_call(lambda: self._host.plugins(plugin_path, discovery))

    def start_source(self, spec: Mapping[str, Any], name: str) -> Any:
        """Start a source task's Spark job (the bridge's SourceJob); returns at once."""
        sc = self.spark.sparkContext._jsc.sc()  # type: ignore[union-attr]
        return java_call(lambda: self._bridge.startSource(sc, self.classpath, to_json(spec), name))

    def sink_task(self, spec: Mapping[str, Any]) -> Any:
        return java_call(lambda: self._host.sinkTask(to_json(spec)))

    def put_batch(self, batch_jdf: Any, sink: Any) -> dict[str, Any]:
        answer: dict[str, Any] = json.loads(java_call(lambda: self._bridge.putBatch(batch_jdf, sink)))
        return answer
