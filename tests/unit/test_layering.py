"""The plugin SPI imports without Spark, FastAPI or the runtime; connectors list without importing Spark."""

from __future__ import annotations

import json
import subprocess
import sys


def imported_after(statement: str) -> set[str]:
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return {m.split(".")[0] for m in json.loads(out)} | set(json.loads(out))


def test_api_imports_without_spark_fastapi_or_runtime() -> None:
    modules = imported_after("import sparklink.api")
    assert not modules & {"pyspark", "fastapi", "uvicorn", "confluent_kafka"}
    assert not any(
        m.startswith(("sparklink.worker.herder", "sparklink.worker.rest", "sparklink.worker.execution"))
        for m in modules
    )


def test_listing_plugins_does_not_start_or_import_spark() -> None:
    modules = imported_after("from sparklink.worker.plugins import Plugins\nPlugins().all()")
    assert "pyspark" not in modules
