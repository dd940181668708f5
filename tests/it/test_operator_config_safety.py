"""Nothing in a resource can inject settings or code (issue 29): on the real API server, with
`sparklink operator run` and the real `sparklink worker` it starts, a KafkaConnect whose config smuggles a
setting in through a line break is refused with a Warning and its running worker is left exactly as it
was (same process, same worker.properties); Spark options that would reach the JVM launch are dropped
with a Warning and never written.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import javaproperties
import pytest

from sparklink.platform import process
from sparklink.platform.kafka import KafkaCluster
from tests.it.operator_fixtures import Kube, OperatorProcess, conditions, is_ready, kafka_connect_body

pytestmark = [pytest.mark.kafka, pytest.mark.kube]

NAME = "safety-connect"
INJECTION = "1\nrest.host.name=0.0.0.0"


@pytest.fixture(scope="module")
def connect(kubeobj: Kube, operator_process: OperatorProcess, kafka: KafkaCluster) -> Iterator[dict[str, Any]]:
    """The module's KafkaConnect, Ready with its one worker."""
    kubeobj.create(kafka_connect_body(NAME, kafka.bootstrap_servers))
    yield kubeobj.wait("KafkaConnect", NAME, is_ready, "Ready", timeout=240)
    kubeobj.delete("KafkaConnect", NAME)


def worker_dir(operator_process: OperatorProcess) -> Path:
    return operator_process.state_dir / "workers" / operator_process.namespace / "KafkaConnect" / NAME


def reconciled_with(kubeobj: Kube, generation: int, reason: str) -> dict[str, Any]:
    """The resource once the operator has reconciled `generation` and written a Warning with `reason`."""

    def done(obj: dict[str, Any]) -> bool:
        observed = (obj.get("status") or {}).get("observedGeneration")
        return observed == generation and any(c.get("reason") == reason for c in conditions(obj, "Warning"))

    return kubeobj.wait("KafkaConnect", NAME, done, f"generation {generation} with a {reason} Warning")


def test_a_line_break_in_config_is_refused_and_the_running_worker_keeps_its_settings(
    kubeobj: Kube, operator_process: OperatorProcess, connect: dict[str, Any]
) -> None:
    base = worker_dir(operator_process)
    properties = (base / "worker.properties").read_bytes()
    record = json.loads((base / "worker.json").read_text())
    url = connect["status"]["url"]

    patched = kubeobj.spec("KafkaConnect", NAME, config={"consumer.max.poll.records": INJECTION})
    obj = reconciled_with(kubeobj, patched["metadata"]["generation"], "UnsafeConfigOption")

    [refusal] = [c for c in conditions(obj, "Warning") if c["reason"] == "UnsafeConfigOption"]
    assert 'option "consumer.max.poll.records" has a line break (\\n) in its value' in refusal["message"]
    assert "write each option on one line" in refusal["message"]
    assert "0.0.0.0" not in refusal["message"]  # values are never quoted back
    # Nothing written, nothing restarted: the worker serves on as it was, on loopback only.
    assert (base / "worker.properties").read_bytes() == properties
    assert json.loads((base / "worker.json").read_text()) == record and process.alive(record["pid"])
    assert conditions(obj, "Ready") and obj["status"]["url"] == url
    with operator_process.rest("KafkaConnect", NAME) as rest:
        assert rest.get(url, timeout=10).status_code == 200
    listener = javaproperties.loads(properties.decode())["listeners"]
    assert listener.startswith("https://127.0.0.1:") and url == listener
    assert not [line for line in operator_process.log_since_start() if NAME in line and "stopping worker" in line]

    # Taking the line break out makes the resource acceptable again, with the worker untouched.
    fixed = kubeobj.spec("KafkaConnect", NAME, config={"consumer.max.poll.records": None})
    generation = fixed["metadata"]["generation"]
    obj = kubeobj.wait(
        "KafkaConnect",
        NAME,
        lambda o: is_ready(o) and o["status"]["observedGeneration"] == generation and not conditions(o, "Warning"),
        "Ready without the Warning",
    )
    assert json.loads((base / "worker.json").read_text()) == record


def test_spark_options_that_reach_the_jvm_launch_are_dropped_with_a_warning_and_never_written(
    kubeobj: Kube, operator_process: OperatorProcess, connect: dict[str, Any]
) -> None:
    base = worker_dir(operator_process)
    properties = (base / "worker.properties").read_bytes()
    record = json.loads((base / "worker.json").read_text())
    dangerous = {
        "spark.driver.extraJavaOptions": "-javaagent:/tmp/not-there.jar",
        "spark.jars.packages": "org.example:evil:1.0",
        "spark.plugins": "org.example.EvilPlugin",
    }
    patched = kubeobj.spec("KafkaConnect", NAME, config=dangerous)
    obj = reconciled_with(kubeobj, patched["metadata"]["generation"], "ForbiddenSparkOption")

    warned = sorted(
        c["message"].split('"')[1] for c in conditions(obj, "Warning") if c["reason"] == "ForbiddenSparkOption"
    )
    assert warned == sorted(dangerous)
    assert conditions(obj, "Ready")
    # The options were dropped, so the worker's settings are the same and it was not restarted.
    assert (base / "worker.properties").read_bytes() == properties
    assert "org.example" not in properties.decode()
    assert json.loads((base / "worker.json").read_text()) == record and process.alive(record["pid"])
    kubeobj.spec("KafkaConnect", NAME, config=dict.fromkeys(dangerous))
