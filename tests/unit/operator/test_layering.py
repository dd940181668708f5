"""The operator's layers, until an import-linter contract checks them in `make lint`:

    sparklink.operator.kube       -> reconcile, runtime, model, connect_client   (kopf, kubernetes here)
    sparklink.operator.hosting    -> model, connect_client, sparklink.platform, sparklink.roller
    sparklink.operator.reconcile  -> model, connect_client                       (no kopf, no kubernetes)
    sparklink.operator.model      -> nothing outside the standard library
and nothing in sparklink.operator imports the worker's own packages (herder, execution, storage, rest):
it knows workers only through the Connect REST API.
"""

from __future__ import annotations

import json
import subprocess
import sys

WORKER_PACKAGES = (
    "sparklink.worker.herder",
    "sparklink.worker.execution",
    "sparklink.worker.storage",
    "sparklink.worker.rest",
    "sparklink.worker.assembly",
)


def imported_after(statement: str) -> set[str]:
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out))


def test_the_operator_imports_nothing_of_the_worker_runtime() -> None:
    modules = imported_after("import sparklink.operator.kube.loop, sparklink.cli.operator")
    assert not [m for m in modules if m.startswith(WORKER_PACKAGES)]
    assert "pyspark" not in modules


def test_the_model_is_pure_and_the_reconcilers_know_no_kubernetes() -> None:
    model = imported_after("import sparklink.operator.model.annotations, sparklink.operator.model.connectors, "
                           "sparklink.operator.model.workers, sparklink.operator.model.conditions, "
                           "sparklink.operator.model.kafka, sparklink.operator.model.kafka_changes, "
                           "sparklink.operator.model.kafka_config, sparklink.operator.model.bootstrap")  # fmt: skip
    assert not {m.split(".")[0] for m in model} & {"httpx", "kopf", "kubernetes", "yaml", "pydantic"}
    reconcile = imported_after(
        "import sparklink.operator.reconcile.kafka_connect, sparklink.operator.reconcile.kafka_connector, "
        "sparklink.operator.reconcile.mirror_maker_2, sparklink.operator.reconcile.kafka, "
        "sparklink.operator.reconcile.kafka_node_pool"
    )
    assert not {m.split(".")[0] for m in reconcile} & {"kopf", "kubernetes"}
