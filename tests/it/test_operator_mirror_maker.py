"""KafkaMirrorMaker2 end to end: the operator runs a worker group on the target cluster and MirrorMaker 2's
source and checkpoint connectors, from Strimzi's own example manifest (real API server, real Kafka
clusters, real `sparklink worker` started by `sparklink operator run`).

Restarts are counted on both sides of the REST API: the operator's log names every restart it issues
with its flags, and the worker's log names every task start.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from sparklink.platform.kafka import KafkaCluster
from tests.helpers import unique, wait_for
from tests.it.mirror_fixtures import create_topic, produce
from tests.it.operator_fixtures import TEST_WORKER_CONFIG, Kube, OperatorProcess, conditions, is_ready

pytestmark = [pytest.mark.kafka, pytest.mark.kube]

DATA = Path(__file__).parent.parent / "data" / "strimzi"
MM2 = "my-mirror-maker-2"
SOURCE = "cluster-a->cluster-b.MirrorSourceConnector"
CHECKPOINT = "cluster-a->cluster-b.MirrorCheckpointConnector"
RESTART = "strimzi.io/restart-connector"
RESTART_TASK = "strimzi.io/restart-connector-task"
OFFSETS = "strimzi.io/connector-offsets"
TARGET_CONNECTOR = "strimzi.io/mirrormaker-connector"


@pytest.fixture(scope="module")
def topic(kafka: KafkaCluster) -> str:
    name = unique("mm2op")
    create_topic(kafka, name, 1)
    produce(kafka, name, [{"value": f"v{i}".encode()} for i in range(5)])
    return name


@pytest.fixture(scope="module")
def mirror(
    kubeobj: Kube, operator_process: OperatorProcess, kafka: KafkaCluster, target_kafka: KafkaCluster, topic: str
) -> Iterator[str]:
    """Strimzi's MM2 example, applied unchanged (server-side dry run) and then for real with the only
    edits a user makes: the two clusters' addresses, and a topic pattern that spares the shared test
    cluster's other topics. Yields the workers' REST URL."""
    example = yaml.safe_load((DATA / "kafka-mirror-maker-2.yaml").read_text())
    kubeobj.custom.create_namespaced_custom_object(
        "kafka.strimzi.io", "v1", kubeobj.ns, "kafkamirrormaker2s", example, dry_run="All", field_validation="Strict"
    )
    body = copy.deepcopy(example)
    body["spec"]["target"]["bootstrapServers"] = target_kafka.bootstrap_servers
    body["spec"]["target"]["config"].update(TEST_WORKER_CONFIG)
    mirror_spec = body["spec"]["mirrors"][0]
    mirror_spec["source"]["bootstrapServers"] = kafka.bootstrap_servers
    mirror_spec["topicsPattern"] = topic
    mirror_spec["groupsPattern"] = "none-here"
    mirror_spec["sourceConnector"]["listOffsets"] = {"toConfigMap": {"name": "mm2-offsets"}}
    mirror_spec["sourceConnector"]["alterOffsets"] = {"fromConfigMap": {"name": "mm2-offsets"}}
    kubeobj.create(body)
    obj = kubeobj.wait(
        "KafkaMirrorMaker2",
        MM2,
        lambda o: is_ready(o) and len(o["status"].get("connectors", [])) == 2,
        "Ready",
        timeout=300,
    )
    yield obj["status"]["url"]
    kubeobj.delete("KafkaMirrorMaker2", MM2)


@pytest.fixture(scope="module")
def rest(mirror: str, operator_process: OperatorProcess) -> Iterator[httpx.Client]:
    """A client for the group's https REST API with the operator's client certificate (status.url is https)."""
    with operator_process.rest("KafkaMirrorMaker2", MM2) as client:
        yield client


def test_the_example_reaches_ready_with_both_connectors_running(
    kubeobj: Kube, mirror: str, target_kafka: KafkaCluster, topic: str, rest: httpx.Client
) -> None:
    obj = kubeobj.get("KafkaMirrorMaker2", MM2)
    names = [c["name"] for c in obj["status"]["connectors"]]
    assert names == sorted([SOURCE, CHECKPOINT])
    assert all(c["connector"]["state"] == "RUNNING" for c in obj["status"]["connectors"])
    assert obj["status"]["url"] == mirror and obj["status"]["replicas"] == 1
    assert sorted(rest.get(f"{mirror}/connectors").json()) == sorted([SOURCE, CHECKPOINT])


def _restarts(proc: OperatorProcess) -> list[tuple[str, str, str]]:
    pattern = re.compile(r"restarting connector (\S+), includeTasks (\w+), onlyFailed (\w+)")
    return pattern.findall(proc.log.read_text())


def _task_starts(proc: OperatorProcess, connector: str) -> int:
    log = proc.worker_log("KafkaMirrorMaker2", MM2)
    return log.read_text().count(f"started task {connector}-0 ")


def test_restart_connector_annotation_table(kubeobj: Kube, mirror: str, operator_process: OperatorProcess) -> None:
    valid = [
        (SOURCE, "False", "False"),
        (SOURCE + ":includeTasks,onlyFailed", "True", "True"),
        (SOURCE + ":onlyFailed,includeTasks", "True", "True"),
        (SOURCE + ":    onlyFailed   ,   includeTasks   ", "True", "True"),
        (SOURCE + ":includeTasks", "True", "False"),
        (SOURCE + ":onlyFailed", "False", "True"),
        (SOURCE + ":   onlyFailed   ", "False", "True"),
        (SOURCE + ":    includeTasks   ", "True", "False"),
    ]
    for value, include_tasks, only_failed in valid:
        issued = len(_restarts(operator_process))
        tasks = _task_starts(operator_process, SOURCE)
        kubeobj.annotate("KafkaMirrorMaker2", MM2, **{RESTART: value})
        kubeobj.wait(
            "KafkaMirrorMaker2", MM2, lambda o: RESTART not in o["metadata"].get("annotations", {}), f"{value!r} done"
        )
        assert _restarts(operator_process)[issued:] == [(SOURCE, include_tasks, only_failed)], value
        expected_tasks = tasks + (1 if include_tasks == "True" and only_failed == "False" else 0)
        wait_for(
            lambda e=expected_tasks: _task_starts(operator_process, SOURCE) == e,
            60,
            f"{value!r}: task starts {expected_tasks}",
        )  # type: ignore[misc]

    rows = [("    " + SOURCE + ":    includeTasks   ", "Invalid annotation format"), ("", "names no connector"),
            ("     ", "names no connector"), ("   b  ", "names no connector")]  # fmt: skip
    for n, (value, message) in enumerate(rows):
        issued = len(_restarts(operator_process))
        marker = f"{SOURCE}:seen{n}"
        kubeobj.annotate("KafkaMirrorMaker2", MM2, **{RESTART: value, RESTART_TASK: marker})
        obj = kubeobj.wait(
            "KafkaMirrorMaker2",
            MM2,
            lambda o, m=marker: any(m in c.get("message", "") for c in conditions(o, "Warning")),
            f"{value!r} seen",  # type: ignore[misc]
        )
        warned = [c for c in conditions(obj, "Warning") if c["reason"] == "RestartConnector"]
        assert warned and message in warned[0]["message"], (value, warned)
        assert obj["metadata"]["annotations"][RESTART] == value
        assert _restarts(operator_process)[issued:] == [], f"{value!r} restarted something"
    kubeobj.annotate("KafkaMirrorMaker2", MM2, **{RESTART: None, RESTART_TASK: None})

    tasks = _task_starts(operator_process, SOURCE)
    kubeobj.annotate("KafkaMirrorMaker2", MM2, **{RESTART_TASK: f"{SOURCE}:0"})
    kubeobj.wait(
        "KafkaMirrorMaker2", MM2, lambda o: RESTART_TASK not in o["metadata"].get("annotations", {}), "task restart"
    )
    wait_for(lambda: _task_starts(operator_process, SOURCE) == tasks + 1, 60, "the source task restart")


def _set_source_state(kubeobj: Kube, state: str) -> None:
    mirrors = kubeobj.get("KafkaMirrorMaker2", MM2)["spec"]["mirrors"]
    mirrors[0]["sourceConnector"]["state"] = state
    kubeobj.spec("KafkaMirrorMaker2", MM2, mirrors=mirrors)


def test_mirror_source_offsets_through_config_maps(kubeobj: Kube, mirror: str, topic: str, rest: httpx.Client) -> None:
    key = "cluster-a--cluster-b.MirrorSourceConnector.json"

    def offsets() -> Any:
        return rest.get(f"{mirror}/connectors/{SOURCE}/offsets", timeout=30).json()

    wait_for(lambda: offsets()["offsets"], 120, "the source connector to record offsets")
    kubeobj.annotate("KafkaMirrorMaker2", MM2, **{OFFSETS: "list"})

    # An earlier test's restart Warning may still be listed, so the pairing warning is looked up by its reason.
    def pairing_warnings(o: dict[str, Any]) -> list[dict[str, Any]]:
        return [c for c in conditions(o, "Warning") if c.get("reason") == "ManageOffsets"]

    obj = kubeobj.wait("KafkaMirrorMaker2", MM2, pairing_warnings, "the pairing warning")
    assert [c["message"] for c in pairing_warnings(obj)] == [
        "Encountered error getting connector offsets annotation. KafkaMirrorMaker2 resource "
        f"{kubeobj.ns}/{MM2} is missing annotation strimzi.io/mirrormaker-connector"
    ]
    assert kubeobj.config_map("mm2-offsets") is None

    kubeobj.annotate("KafkaMirrorMaker2", MM2, **{TARGET_CONNECTOR: SOURCE})
    kubeobj.wait("KafkaMirrorMaker2", MM2, lambda o: OFFSETS not in o["metadata"].get("annotations", {}), "listed")
    listed = kubeobj.config_map("mm2-offsets")
    assert listed is not None and json.loads(listed.data[key]) == offsets()
    assert TARGET_CONNECTOR not in kubeobj.get("KafkaMirrorMaker2", MM2)["metadata"].get("annotations", {})

    _set_source_state(kubeobj, "stopped")
    kubeobj.wait(
        "KafkaMirrorMaker2",
        MM2,
        lambda o: any(c["name"] == SOURCE and c["connector"]["state"] == "STOPPED" for c in o["status"]["connectors"]),
        "stopped",
    )
    wanted = json.loads(listed.data[key])
    for entry in wanted["offsets"]:
        entry["offset"]["offset"] = 1
    kubeobj.core.patch_namespaced_config_map("mm2-offsets", kubeobj.ns, {"data": {key: json.dumps(wanted)}})
    kubeobj.annotate("KafkaMirrorMaker2", MM2, **{OFFSETS: "alter", TARGET_CONNECTOR: SOURCE})
    kubeobj.wait("KafkaMirrorMaker2", MM2, lambda o: OFFSETS not in o["metadata"].get("annotations", {}), "altered")
    assert offsets() == wanted

    kubeobj.annotate("KafkaMirrorMaker2", MM2, **{OFFSETS: "reset", TARGET_CONNECTOR: SOURCE})
    kubeobj.wait("KafkaMirrorMaker2", MM2, lambda o: OFFSETS not in o["metadata"].get("annotations", {}), "reset")
    assert offsets() == {"offsets": []}
    _set_source_state(kubeobj, "running")
    kubeobj.wait("KafkaMirrorMaker2", MM2, is_ready, "running again")
