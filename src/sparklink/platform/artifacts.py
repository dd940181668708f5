"""Where the JVM jars fetched by scripts/bootstrap.sh live, and a clear error when they are missing.

Callers: the local Kafka cluster (broker classpath), the Spark session (Kafka connector jars) and the
reference Apache Connect/MM2 peers of the tests and benchmarks (`kafka-peers`).
"""

from __future__ import annotations

import os
from pathlib import Path

# Jar sets that only tests and benchmarks use (scripts/test-deps.sh fetches them; scripts/bootstrap.sh the rest).
TEST_ONLY = frozenset({"kafka-peers"})


class ArtifactsMissingError(RuntimeError):
    """The bootstrap has not fetched a jar set yet."""


def project_root() -> Path:
    """The source checkout (holding jvm/ and .cache/), or SPARKLINK_HOME when set."""
    env = os.environ.get("SPARKLINK_HOME")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3]


def jars_dir(jar_set: str) -> Path:
    """The directory of one jar set (`kafka`, `spark-kafka`, `agents`, `jdbc`, `kafka-peers`), checked to be
    populated."""
    override = os.environ.get("SPARKLINK_JARS")
    base = Path(override) if override else project_root() / ".cache" / "jars"
    path = base / jar_set
    if not path.is_dir() or not any(path.glob("*.jar")):
        # The reference Apache peers are for tests and benchmarks only, fetched with the other test needs.
        if jar_set in TEST_ONLY:
            command = "`bash scripts/test-deps.sh` (or `make test`)"
        else:
            command = "`bash scripts/bootstrap.sh` (or `make demo`)"
        raise ArtifactsMissingError(f"no jars in {path}: run {command} to fetch them from Maven Central")
    return path


def classpath(jar_set: str) -> str:
    """A Java classpath of every jar in the set, sorted for a stable order."""
    return os.pathsep.join(str(p) for p in sorted(jars_dir(jar_set).glob("*.jar")))


def jar_list(jar_set: str) -> list[str]:
    return [str(p) for p in sorted(jars_dir(jar_set).glob("*.jar"))]


def jolokia_agent() -> Path:
    return next(jars_dir("agents").glob("jolokia-agent-jvm-*-javaagent.jar"))
