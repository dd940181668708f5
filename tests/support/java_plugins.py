"""Java plugins for the tests: the published ones the bootstrap fetched into `.cache/plugins` (Debezium's
PostgreSQL connector, Apache's connect-file), and small ones compiled here with javac from source in the
test (a failing sink, broken plugins), each in a plugin location of its own.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from sparklink.platform import artifacts

if TYPE_CHECKING:
    from tests.it.postgres import Postgres

DEBEZIUM_POSTGRES = "io.debezium.connector.postgresql.PostgresConnector"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"


def plugins_root() -> Path:
    return artifacts.project_root() / ".cache" / "plugins"


def plugin_dir(name: str) -> Path:
    """A published plugin's location under `.cache/plugins` (`debezium-connector-postgres`, `connect-file`)."""
    path = plugins_root() / name
    if not path.is_dir():
        pytest.fail(f"no plugin {name} in {plugins_root()}: run `bash scripts/test-deps.sh` (it fetches them)")
    return path


def connect_api_classpath() -> str:
    """What a plugin compiles against: Connect's API, the Kafka clients of the host's runtime and SLF4J's API."""
    names = ("connect-api-", "kafka-clients-", "slf4j-api-")
    jars = [j for j in artifacts.jar_list("connect") if Path(j).name.startswith(names)]
    return ":".join(jars)


def compile_plugin(
    location: Path,
    sources: dict[str, str],
    services: dict[str, list[str]] | None = None,
    omit: tuple[str, ...] = (),
) -> Path:
    """Compile Java `sources` ({"pkg/Cls.java": text}) into `location/plugin.jar`, with service manifests
    (`services`: interface -> implementations) when given, leaving out the compiled classes `omit` names
    ("pkg/Cls.class": a dependency the plugin's classes need but the jar lacks); returns the jar."""
    work = Path(tempfile.mkdtemp(prefix="sparklink-javac-"))
    try:
        files = []
        for name, text in sources.items():
            path = work / "src" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            files.append(str(path))
        classes = work / "classes"
        subprocess.run(
            ["javac", "--release", "17", "-nowarn", "-cp", connect_api_classpath(), "-d", str(classes), *files],
            check=True,
            capture_output=True,
        )
        for missing in omit:
            (classes / missing).unlink()
        for interface, implementations in (services or {}).items():
            manifest = classes / "META-INF" / "services" / interface
            manifest.parent.mkdir(parents=True, exist_ok=True)
            manifest.write_text("".join(f"{i}\n" for i in implementations))
        location.mkdir(parents=True, exist_ok=True)
        jar = location / "plugin.jar"
        archive = ["jar", "--create", "--file", str(jar), "-C", str(classes), "."]
        subprocess.run(archive, check=True, capture_output=True)
        return jar
    finally:
        shutil.rmtree(work, ignore_errors=True)


def debezium_postgres_config(
    postgres: Postgres, prefix: str, table: str, *, slot: str, schemas: bool = False
) -> dict[str, str]:
    """A Debezium PostgreSQL connector config for one table of the test database over `pgoutput`, with
    JsonConverter keys and values (`schemas` on or off); `slot` names its replication slot and its publication,
    which must differ between connectors reading the same database at the same time."""
    enabled = "true" if schemas else "false"
    return {
        "connector.class": DEBEZIUM_POSTGRES,
        "database.hostname": postgres.host,
        "database.port": str(postgres.port),
        "database.user": postgres.user,
        "database.password": postgres.password,
        "database.dbname": postgres.dbname,
        "topic.prefix": prefix,
        "table.include.list": f"public.{table}",
        "plugin.name": "pgoutput",
        "slot.name": slot,
        "publication.name": slot,
        "publication.autocreate.mode": "filtered",
        "snapshot.mode": "initial",
        "key.converter": JSON_CONVERTER,
        "key.converter.schemas.enable": enabled,
        "value.converter": JSON_CONVERTER,
        "value.converter.schemas.enable": enabled,
        "tasks.max": "1",
    }
