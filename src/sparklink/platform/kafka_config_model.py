"""The broker configuration model of the Kafka jars the bootstrap fetched: each option's type, whether a
running broker can change it, and what its validator allows.

Caller: the operator, which validates `spec.kafka.config` and decides dynamic update vs. restart with it
(`sparklink.operator.model.kafka_config`). Strimzi generates the same facts when it is built; here
`jvm/KafkaConfigModel.java` reads them from Kafka's own ConfigDef and DynamicBrokerConfig, once per jar set
(a JVM start, ~5 s), and the JSON is cached next to the jars.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

from sparklink.platform import artifacts

SOURCE = Path(__file__).with_name("jvm") / "KafkaConfigModel.java"

_lock = threading.Lock()
_loaded: dict[Path, dict[str, Any]] = {}


class ConfigModelError(RuntimeError):
    """The model could not be generated; the message says why and what to do."""


def _cache_dir() -> Path:
    base = os.environ.get("SPARKLINK_JARS")
    target = (Path(base) if base else artifacts.project_root() / ".cache" / "jars") / "kafka-config-model"
    try:
        target.mkdir(parents=True, exist_ok=True)
        return target
    except OSError:  # read-only install: the user's temp space
        fallback = Path(tempfile.gettempdir()) / "sparklink-kafka-config-model"
        fallback.mkdir(parents=True, exist_ok=True)
        return fallback


def model_path() -> Path:
    """Where the model of the current jar set is (or will be) cached."""
    jars = "\n".join(Path(j).name for j in artifacts.jar_list("kafka"))
    digest = hashlib.sha256(SOURCE.read_bytes() + jars.encode()).hexdigest()[:16]
    return _cache_dir() / f"kafka-config-model-{digest}.json"


def load(timeout: float = 300.0) -> dict[str, Any]:
    """`{"version": "4.4.0", "configs": {name: {"type", "dynamic", "min"?, "max"?, "values"?, ...}}}`."""
    path = model_path()
    with _lock:
        if path in _loaded:
            return _loaded[path]
        if not path.exists():
            _generate(path, timeout)
        model: dict[str, Any] = json.loads(path.read_text())
        _loaded[path] = model
        return model


def _generate(path: Path, timeout: float) -> None:
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    cmd = ["java", "-Xmx256m", "-cp", artifacts.classpath("kafka"), str(SOURCE), str(partial)]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigModelError(f"could not run java to read Kafka's configuration model: {exc}") from exc
    if result.returncode != 0:
        raise ConfigModelError(
            f"reading Kafka's configuration model from the jars failed (is `java` a JDK 17+?):\n"
            f"{result.stdout}{result.stderr}"
        )
    os.replace(partial, path)  # another process may be writing it too: the rename is atomic
