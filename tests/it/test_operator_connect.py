"""The operator end to end: a real kube-apiserver + etcd, real Kafka, and real `sparklink worker`
processes started by `sparklink operator run` (itself a subprocess). One KafkaConnect (Strimzi's example
name, my-connect-cluster) and its one worker are shared by the module; each test deletes what it creates.

Restarts are counted by tests.plugins.CountingConnector, which appends a line per connector or task
start to a file, across the worker's process boundary.
"""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from sparklink.operator.clock import parse_timestamp
from sparklink.platform import ca
from sparklink.platform.kafka import KafkaCluster
from tests.helpers import read_topic, unique, wait_for
from tests.it.operator_fixtures import (
    MINUTE_SECONDS,
    Kube,
    OperatorProcess,
    conditions,
    connector_state,
    is_ready,
    kafka_connect_body,
    task_states,
)
from tests.plugins import file_counts

pytestmark = [pytest.mark.kafka, pytest.mark.kube]

DATA = Path(__file__).parent.parent / "data" / "strimzi"
CONNECT = "my-connect-cluster"  # the name Strimzi's example KafkaConnector points at
RESTART = "strimzi.io/restart"
RESTART_TASK = "strimzi.io/restart-task"
OFFSETS = "strimzi.io/connector-offsets"
STATUS_FIELDS = {"conditions", "observedGeneration", "autoRestart", "connectorStatus", "tasksMax", "topics"}


@pytest.fixture(scope="module")
def connect(kubeobj: Kube, operator_process: OperatorProcess, kafka: KafkaCluster) -> Iterator[str]:
    """The module's KafkaConnect, Ready; yields its workers' REST URL (status.url)."""
    kubeobj.create(kafka_connect_body(CONNECT, kafka.bootstrap_servers))
    obj = kubeobj.wait("KafkaConnect", CONNECT, is_ready, "Ready", timeout=240)
    yield obj["status"]["url"]
    kubeobj.delete("KafkaConnect", CONNECT)


@pytest.fixture(scope="module")
def rest(connect: str, operator_process: OperatorProcess) -> Iterator[httpx.Client]:
    """A client for the group's https REST API with the operator's client certificate (status.url is https)."""
    with operator_process.rest("KafkaConnect", CONNECT) as client:
        yield client


def counting_connector(kubeobj: Kube, name: str, counts: Path, **spec: Any) -> dict[str, Any]:
    config = {
        "topic": f"{name}-out",
        "records.per.second": 1,
        "test.count.file": str(counts),
        **spec.pop("config", {}),
    }
    return kubeobj.create(
        {
            "apiVersion": "kafka.strimzi.io/v1",
            "kind": "KafkaConnector",
            "metadata": {"name": name, "labels": {"strimzi.io/cluster": CONNECT}},
            "spec": {"class": "tests.plugins.CountingConnector", "tasksMax": 1, "config": config, **spec},
        }
    )


def running(obj: dict[str, Any]) -> bool:
    return connector_state(obj) == "RUNNING" and task_states(obj) == ["RUNNING"] and is_ready(obj)


def connect_status(rest: httpx.Client, url: str, name: str) -> dict[str, Any]:
    response = rest.get(f"{url}/connectors/{name}/status", timeout=30)
    response.raise_for_status()
    body: dict[str, Any] = response.json()
    return body


def warning_with(obj: dict[str, Any], text: str) -> dict[str, Any] | None:
    return next((c for c in conditions(obj, "Warning") if text in (c.get("message") or "")), None)


def test_a_healthy_start_logs_no_error_line(kubeobj: Kube, operator_process: OperatorProcess) -> None:
    # The module's operator is the first client of its kinds when this module runs first: the API server
    # builds their watch caches only then, and refuses watches (429) meanwhile. A status written for a
    # resource created after the start proves the watch runs; nothing on the way may be an ERROR.
    name = unique("no-cluster")
    kubeobj.create(
        {
            "apiVersion": "kafka.strimzi.io/v1",
            "kind": "KafkaConnector",
            "metadata": {"name": name},
            "spec": {"class": "tests.plugins.CountingConnector", "tasksMax": 1},
        }
    )
    kubeobj.wait("KafkaConnector", name, lambda o: conditions(o, "NotReady"), "the status of the first reconcile")
    kubeobj.delete("KafkaConnector", name)
    assert [line for line in operator_process.log_since_start() if " ERROR " in line] == []


def test_strimzi_example_manifests_apply_unchanged_and_the_image_file_source_is_refused_naming_where_files_go(
    kubeobj: Kube, connect: str, operator_process: OperatorProcess, rest: httpx.Client
) -> None:
    # The KafkaConnect example names a Kafka cluster that does not exist here (and this module's own
    # KafkaConnect has its name): the API server validating it, in a namespace of its own (a server-side
    # dry run with strict field validation), is what "applies unchanged" means for it.
    example_connect = yaml.safe_load((DATA / "kafka-connect.yaml").read_text())
    dry = unique("examples")
    kubeobj.core.create_namespace({"metadata": {"name": dry}})
    try:
        kubeobj.custom.create_namespaced_custom_object(
            "kafka.strimzi.io", "v1", dry, "kafkaconnects", example_connect, dry_run="All", field_validation="Strict"
        )
    finally:
        kubeobj.core.delete_namespace(dry)
    # The connector example reads /opt/kafka/LICENSE from Strimzi's container image. A local worker runs as the
    # operator's user, so its file connectors use only the group's files directory: the connector is refused
    # with a message that names the file and that directory, and nothing is created on the workers. (The chain
    # with the file placed there runs in test_operator_kafka_security's quick-start test.)
    files = operator_process.files_dir("KafkaConnect", CONNECT)
    connector = yaml.safe_load((DATA / "source-connector.yaml").read_text())
    kubeobj.create(connector)

    def refused(o: dict[str, Any]) -> bool:
        text = " ".join(c.get("message", "") for c in conditions(o, "NotReady"))
        return "/opt/kafka/LICENSE" in text and str(files) in text

    kubeobj.wait("KafkaConnector", "my-source-connector", refused, "refused, naming the allowed directory")
    assert "my-source-connector" not in rest.get(f"{connect}/connectors").json()
    kubeobj.delete("KafkaConnector", "my-source-connector")
    wait_for(lambda: "my-source-connector" not in rest.get(f"{connect}/connectors").json(), 60, "the connector deleted")


def test_workers_refuse_a_caller_without_the_operators_certificate_at_tls_while_the_operator_runs_connectors(
    kubeobj: Kube, connect: str, rest: httpx.Client, operator_process: OperatorProcess, tmp_path: Path
) -> None:
    # status.url is https, and only the operator (and the group's own workers) may call it.
    assert connect.startswith("https://127.0.0.1:")
    name = unique("mtls")
    counting_connector(kubeobj, name, tmp_path / "starts")
    group = operator_process.state_dir / "workers" / kubeobj.ns / "KafkaConnect" / CONNECT / "rest-tls"
    # A caller that trusts the group's CA but has no certificate is refused in the handshake, as is one whose
    # certificate another CA signed (e.g. another group's), and plain http gets no Connect answer either.
    # Over TLS 1.2 the server checks the client's certificate inside the handshake, which fails (the client's
    # connect raises an SSL error); over TLS 1.3 it does so after the client's side finished, and the connection
    # closes without an HTTP answer.
    stranger = ca.issue(ca.new_ca("not the operator"), "sparklink-operator", client=True)
    stranger_pem = tmp_path / "stranger.pem"
    ca.write_private(stranger_pem, stranger.key_pem + stranger.cert_pem)
    for cert in (None, stranger_pem):
        for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            context = ssl.create_default_context(cafile=str(group / "ca.crt"))
            context.maximum_version = version
            if cert is not None:
                context.load_cert_chain(str(cert))
            with httpx.Client(verify=context, timeout=10) as client, pytest.raises(httpx.TransportError) as refused:
                client.get(f"{connect}/connectors")
            if version is ssl.TLSVersion.TLSv1_2:  # refused while connecting: the TLS handshake failed
                assert isinstance(refused.value, httpx.ConnectError) and "[SSL:" in str(refused.value), refused.value
    with pytest.raises(httpx.TransportError):
        httpx.get(connect.replace("https://", "http://") + "/connectors", timeout=10)
    # Meanwhile the operator, with its certificate, drives the connector to RUNNING through the same workers.
    kubeobj.wait("KafkaConnector", name, running, "RUNNING")
    assert connect_status(rest, connect, name)["connector"]["state"] == "RUNNING"
    kubeobj.delete("KafkaConnector", name)
    wait_for(lambda: name not in rest.get(f"{connect}/connectors").json(), 60, "the connector deleted")


def test_restart_annotation_table_on_a_kafka_connector(
    kubeobj: Kube, connect: str, tmp_path: Path, rest: httpx.Client
) -> None:
    name = unique("restart")
    counts = tmp_path / "starts"
    counting_connector(kubeobj, name, counts)
    kubeobj.wait("KafkaConnector", name, running, "RUNNING")

    def starts() -> tuple[int, int]:
        c = file_counts(counts)
        return c[f"connector {name}"], c[f"task {name} 0"]

    wait_for(lambda: starts() == (1, 1), 60, "the first connector and task start")

    def settled(expect: tuple[int, int]) -> bool:
        s = connect_status(rest, connect, name)
        healthy = s["connector"]["state"] == "RUNNING" and [t["state"] for t in s["tasks"]] == ["RUNNING"]
        return healthy and starts() == expect

    # Valid values on a healthy connector: (value, connector restarts, task restarts)
    valid = [
        ("true", 1, 0),
        ("includeTasks", 1, 1),
        ("    includeTasks   ", 1, 1),
        ("onlyFailed", 0, 0),
        ("   onlyFailed   ", 0, 0),
        ("includeTasks,onlyFailed", 0, 0),
        ("onlyFailed,includeTasks", 0, 0),
        ("    onlyFailed   ,   includeTasks   ", 0, 0),
    ]
    for value, connector_restarts, task_restarts in valid:
        c0, t0 = starts()
        kubeobj.annotate("KafkaConnector", name, **{RESTART: value})
        kubeobj.wait(
            "KafkaConnector", name, lambda o: RESTART not in o["metadata"].get("annotations", {}), f"{value!r} removed"
        )
        expect = (c0 + connector_restarts, t0 + task_restarts)
        wait_for(lambda e=expect: settled(e), 90, f"{value!r} to restart exactly {expect}")  # type: ignore[misc]

    # Invalid values and values that ask for nothing: the annotation stays, nothing restarts, and only the
    # invalid ones warn. A marker in strimzi.io/restart-task proves the operator saw each value.
    rows = [(v, True) for v in ("true,includeTasks", "true,includeTasks,onlyFailed", "true,onlyFailed",
            "true,invalidArg,onlyFailed", "invalidArg,onlyFailed", "onlyFailed,invalidArg",
            "includeTasks,invalidArg", "invalidArg,includeTasks", "   b  ")]  # fmt: skip
    rows += [(v, False) for v in ("false", "", "     ")]
    for n, (value, warns) in enumerate(rows):
        before = starts()
        marker = f"seen-{n}"
        kubeobj.annotate("KafkaConnector", name, **{RESTART: value, RESTART_TASK: marker})
        obj = kubeobj.wait(
            "KafkaConnector", name, lambda o, m=marker: warning_with(o, m), f"the operator to see {value!r}"
        )  # type: ignore[misc]
        restart_warnings = [c for c in conditions(obj, "Warning") if c["reason"] == "RestartConnector"]
        assert [c["message"] for c in restart_warnings] == (["Invalid annotation format"] if warns else []), value
        assert obj["metadata"]["annotations"][RESTART] == value
        assert starts() == before and settled(before), f"{value!r} restarted something"
    kubeobj.annotate("KafkaConnector", name, **{RESTART: None, RESTART_TASK: None})

    # onlyFailed restarts only what failed: make the task fail (datagen's fault injection), then restart.
    kubeobj.spec("KafkaConnector", name, config={"fail.after.records": 0})
    kubeobj.wait("KafkaConnector", name, lambda o: task_states(o) == ["FAILED"], "the task FAILED")
    c0, t0 = starts()
    kubeobj.annotate("KafkaConnector", name, **{RESTART: "includeTasks,onlyFailed"})
    kubeobj.wait("KafkaConnector", name, lambda o: RESTART not in o["metadata"].get("annotations", {}), "removed")
    wait_for(lambda: starts() == (c0, t0 + 1), 90, "only the failed task to restart")
    kubeobj.delete("KafkaConnector", name)


def test_restart_task_annotation_and_a_non_numeric_value_is_a_warning(
    kubeobj: Kube, connect: str, tmp_path: Path
) -> None:
    name = unique("task")
    counts = tmp_path / "starts"
    counting_connector(kubeobj, name, counts)
    kubeobj.wait("KafkaConnector", name, running, "RUNNING")
    wait_for(lambda: file_counts(counts)[f"task {name} 0"] == 1, 60, "the task start")

    kubeobj.annotate("KafkaConnector", name, **{RESTART_TASK: "abc"})
    obj = kubeobj.wait("KafkaConnector", name, lambda o: warning_with(o, "abc"), "the Warning")
    assert warning_with(obj, "abc")["reason"] == "RestartConnectorTask"  # type: ignore[index]
    assert conditions(obj, "Ready"), "a non-numeric restart-task does not fail the reconcile"
    assert obj["metadata"]["annotations"][RESTART_TASK] == "abc"

    kubeobj.annotate("KafkaConnector", name, **{RESTART_TASK: "0"})
    kubeobj.wait("KafkaConnector", name, lambda o: RESTART_TASK not in o["metadata"].get("annotations", {}), "removed")
    wait_for(lambda: file_counts(counts)[f"task {name} 0"] == 2, 60, "the task restart")
    assert file_counts(counts)[f"connector {name}"] == 1, "a task restart leaves the connector alone"
    kubeobj.delete("KafkaConnector", name)


def test_state_transitions_including_failed_to_stopped_and_failed_to_paused(
    kubeobj: Kube, connect: str, tmp_path: Path, rest: httpx.Client
) -> None:
    name = unique("state")
    counting_connector(kubeobj, name, tmp_path / "starts", state="stopped")
    obj = kubeobj.wait("KafkaConnector", name, lambda o: connector_state(o) == "STOPPED" and is_ready(o), "STOPPED")
    assert not file_counts(tmp_path / "starts"), "created stopped (initial_state): it never started"
    for target, state in (("running", "RUNNING"), ("paused", "PAUSED"), ("stopped", "STOPPED"), ("paused", "PAUSED")):
        kubeobj.spec("KafkaConnector", name, state=target)
        kubeobj.wait("KafkaConnector", name, lambda o, s=state: connector_state(o) == s and is_ready(o), state)  # type: ignore[misc]
        assert connect_status(rest, connect, name)["connector"]["state"] == state

    failing = unique("failing")
    counting_connector(kubeobj, failing, tmp_path / "failing", config={"test.fail.starts": 1})
    obj = kubeobj.wait("KafkaConnector", failing, lambda o: connector_state(o) == "FAILED", "FAILED")
    assert conditions(obj, "NotReady")[0]["message"] == "Connector has failed, see connectorStatus for more details."
    kubeobj.spec("KafkaConnector", failing, state="paused")
    refused = f"Connector {failing} cannot be paused since it is in failed state."
    obj = kubeobj.wait(
        "KafkaConnector",
        failing,
        lambda o: any(c.get("message") == refused for c in conditions(o, "NotReady")),
        "refusal",
    )
    assert connect_status(rest, connect, failing)["connector"]["state"] == "FAILED"
    kubeobj.spec("KafkaConnector", failing, state="stopped")
    kubeobj.wait(
        "KafkaConnector", failing, lambda o: connector_state(o) == "STOPPED" and is_ready(o), "FAILED -> STOPPED"
    )
    kubeobj.delete("KafkaConnector", name)
    kubeobj.delete("KafkaConnector", failing)


def test_auto_restart_schedule_max_restarts_config_change_and_reset(
    kubeobj: Kube, connect: str, operator_process: OperatorProcess, tmp_path: Path
) -> None:
    name = unique("auto")
    counts, heal = tmp_path / "starts", tmp_path / "healed"
    counting_connector(
        kubeobj,
        name,
        counts,
        config={"test.fail.task": "true", "test.heal.file": str(heal)},
        autoRestart={"maxRestarts": 4},
    )

    def auto(o: dict[str, Any]) -> dict[str, Any] | None:
        return (o.get("status") or {}).get("autoRestart")

    # A config change clears the history (Strimzi: the status is rebuilt without it).
    obj = kubeobj.wait("KafkaConnector", name, lambda o: (auto(o) or {}).get("count") == 2, "2 automatic restarts")
    generation = kubeobj.spec("KafkaConnector", name, config={"records.per.second": 2})["metadata"]["generation"]
    changed_at = time.time()
    obj = kubeobj.wait(
        "KafkaConnector", name, lambda o: o["status"].get("observedGeneration") == generation, "the change"
    )
    after = auto(obj)
    assert after is None or (
        after["count"] == 1 and parse_timestamp(after["lastRestartTimestamp"]).timestamp() >= changed_at - 1  # type: ignore[union-attr]
    ), f"the config change did not clear the auto-restart status: {after}"

    # The schedule: restarts 0, 2, 6, 12 minutes apart, then none after maxRestarts.
    seen: dict[int, float] = {}

    def record(o: dict[str, Any]) -> bool:
        status = auto(o)
        if status:
            seen.setdefault(status["count"], parse_timestamp(status["lastRestartTimestamp"]).timestamp())  # type: ignore[union-attr]
        return bool(status) and status["count"] == 4

    obj = kubeobj.wait("KafkaConnector", name, record, "4 automatic restarts", timeout=240)
    assert sorted(seen) == [1, 2, 3, 4], seen
    for count, gap in ((1, 2), (2, 6), (3, 12)):
        assert seen[count + 1] - seen[count] >= gap * MINUTE_SECONDS, (count, seen)
    assert (
        f'strimzi_auto_restarts_total{{kind="KafkaConnector",namespace="{kubeobj.ns}",selector=""}}'
        in operator_process.metrics()
    )

    # maxRestarts: once the next restart would be due, a reconcile restarts nothing more.
    due = seen[4] + 20 * MINUTE_SECONDS
    wait_for(lambda: time.time() > due + MINUTE_SECONDS, 60, "the moment a 5th restart would be due")
    task_starts = file_counts(counts)[f"task {name} 0"]
    kubeobj.annotate("KafkaConnector", name, **{RESTART_TASK: "poke"})
    obj = kubeobj.wait("KafkaConnector", name, lambda o: warning_with(o, "poke"), "a reconcile after the due time")
    assert auto(obj)["count"] == 4 and task_states(obj) == ["FAILED"]  # type: ignore[index]
    assert file_counts(counts)[f"task {name} 0"] == task_starts, "no restart after maxRestarts"

    # Healthy for longer than the back-off interval: the count resets (the user restarted it by hand).
    heal.touch()
    kubeobj.annotate("KafkaConnector", name, **{RESTART_TASK: None, RESTART: "includeTasks,onlyFailed"})
    obj = kubeobj.wait(
        "KafkaConnector", name, lambda o: running(o) and auto(o) is None, "healthy and reset", timeout=120
    )
    assert set(obj["status"]) <= STATUS_FIELDS
    kubeobj.delete("KafkaConnector", name)


def test_offsets_list_alter_reset_for_a_source_and_a_sink_with_every_bad_input_harmless(
    kubeobj: Kube,
    connect: str,
    kafka: KafkaCluster,
    operator_process: OperatorProcess,
    tmp_path: Path,
    rest: httpx.Client,
) -> None:
    name = unique("offsets")
    topic = f"{name}-out"
    counting_connector(
        kubeobj,
        name,
        tmp_path / "starts",
        config={"records.per.second": 2, "key.shape": "seq"},
        listOffsets={"toConfigMap": {"name": f"{name}-listed"}},
        alterOffsets={"fromConfigMap": {"name": f"{name}-wanted"}},
    )
    kubeobj.wait("KafkaConnector", name, running, "RUNNING")
    wanted = {"offsets": [{"partition": {"task": 0}, "offset": {"position": 1000}}]}
    kubeobj.core.create_namespaced_config_map(
        kubeobj.ns, {"metadata": {"name": f"{name}-wanted"}, "data": {"offsets.json": json.dumps(wanted)}}
    )

    def offsets() -> Any:
        return rest.get(f"{connect}/connectors/{name}/offsets", timeout=30).json()

    wait_for(lambda: offsets()["offsets"], 180, "the connector to write its first records and offsets")

    def harmless(value: str, message: str, state: str) -> None:
        cm = kubeobj.config_map(f"{name}-wanted")
        stored = offsets() if state == "STOPPED" else None
        kubeobj.annotate("KafkaConnector", name, **{OFFSETS: value})
        obj = kubeobj.wait("KafkaConnector", name, lambda o: warning_with(o, message), f"the warning for {value!r}")
        assert obj["metadata"]["annotations"][OFFSETS] == value, "the annotation stays"
        assert connector_state(obj) == state and connect_status(rest, connect, name)["connector"]["state"] == state
        if stored is not None:
            assert offsets() == stored, "stored offsets untouched"
        after = kubeobj.config_map(f"{name}-wanted")
        assert (after is None) == (cm is None) and (
            cm is None or after.metadata.resource_version == cm.metadata.resource_version
        )  # type: ignore[union-attr]

    harmless("alter", "Encountered error altering connector offsets. Connector is not in STOPPED state", "RUNNING")
    assert all(o["offset"]["position"] < 1000 for o in offsets()["offsets"]), "a running connector is not altered"
    harmless("lists", "Invalid value 'lists' of annotation strimzi.io/connector-offsets", "RUNNING")

    kubeobj.annotate("KafkaConnector", name, **{OFFSETS: None})
    kubeobj.spec("KafkaConnector", name, state="stopped")
    kubeobj.wait("KafkaConnector", name, lambda o: connector_state(o) == "STOPPED", "STOPPED")
    harmless("", "Invalid value '' of annotation strimzi.io/connector-offsets", "STOPPED")
    kubeobj.core.patch_namespaced_config_map(f"{name}-wanted", kubeobj.ns, {"data": {"offsets.json": "{not json"}})
    harmless("alter", "Failed to parse contents of offsets.json as JSON", "STOPPED")
    kubeobj.core.patch_namespaced_config_map(f"{name}-wanted", kubeobj.ns, {"data": {"offsets.json": None, "x": "1"}})
    harmless(
        "alter",
        "Encountered error fetching offsets to use in alter operation. Data field offsets.json is missing.",
        "STOPPED",
    )
    kubeobj.core.delete_namespaced_config_map(f"{name}-wanted", kubeobj.ns)
    harmless("alter", f"ConfigMap {kubeobj.ns}/{name}-wanted does not exist.", "STOPPED")
    kubeobj.patch("KafkaConnector", name, {"spec": {"alterOffsets": None, "listOffsets": None}})
    harmless(
        "alter",
        "Failed to alter the connector offsets due to missing property alterOffsets in KafkaConnector CR.",
        "STOPPED",
    )
    harmless(
        "list",
        "Failed to list the connector offsets due to missing property listOffsets in KafkaConnector CR.",
        "STOPPED",
    )

    # list: into a ConfigMap that already holds another key, which is kept; we become an owner.
    kubeobj.core.create_namespaced_config_map(
        kubeobj.ns, {"metadata": {"name": f"{name}-listed"}, "data": {"keep": "me"}}
    )
    kubeobj.core.create_namespaced_config_map(
        kubeobj.ns, {"metadata": {"name": f"{name}-wanted"}, "data": {"offsets.json": json.dumps(wanted)}}
    )
    kubeobj.spec(
        "KafkaConnector",
        name,
        listOffsets={"toConfigMap": {"name": f"{name}-listed"}},
        alterOffsets={"fromConfigMap": {"name": f"{name}-wanted"}},
    )
    kubeobj.annotate("KafkaConnector", name, **{OFFSETS: "list"})
    kubeobj.wait("KafkaConnector", name, lambda o: OFFSETS not in o["metadata"].get("annotations", {}), "list done")
    listed = kubeobj.config_map(f"{name}-listed")
    assert listed is not None and listed.data["keep"] == "me"
    assert json.loads(listed.data["offsets.json"]) == offsets()
    assert [(r.kind, r.name, r.controller) for r in listed.metadata.owner_references] == [
        ("KafkaConnector", name, False)
    ]

    # alter, then running resumes from the altered offsets.
    kubeobj.annotate("KafkaConnector", name, **{OFFSETS: "alter"})
    kubeobj.wait("KafkaConnector", name, lambda o: OFFSETS not in o["metadata"].get("annotations", {}), "alter done")
    assert offsets() == wanted
    before = len(read_topic(kafka.bootstrap_servers, topic, 1))
    kubeobj.spec("KafkaConnector", name, state="running")
    records = read_topic(kafka.bootstrap_servers, topic, before + 2, timeout=120)
    # The KafkaConnect keeps Strimzi's default converters (JsonConverter, schemas.enable=true), so each
    # value is Connect's {"schema": ..., "payload": ...} envelope, as Apache Connect would write it.
    envelopes = [json.loads(m.value()) for m in records[before:]]
    assert all(set(e) == {"schema", "payload"} for e in envelopes), envelopes[:1]
    resumed = [e["payload"]["seq"] for e in envelopes]
    assert resumed[0] == 1000 and resumed == sorted(resumed), resumed[:5]

    # reset (while STOPPED), and list shows nothing stored.
    kubeobj.spec("KafkaConnector", name, state="stopped")
    kubeobj.wait("KafkaConnector", name, lambda o: connector_state(o) == "STOPPED", "STOPPED again")
    kubeobj.annotate("KafkaConnector", name, **{OFFSETS: "reset"})
    kubeobj.wait("KafkaConnector", name, lambda o: OFFSETS not in o["metadata"].get("annotations", {}), "reset done")
    assert offsets() == {"offsets": []}
    kubeobj.delete("KafkaConnector", name)

    # A sink: its offsets are its consumer group's. It writes into the group's files directory, the only one
    # the local runtime lets file connectors use.
    sink = unique("sink")
    sink_file = operator_process.files_dir("KafkaConnect", CONNECT) / "sink.txt"
    kubeobj.create(
        {
            "apiVersion": "kafka.strimzi.io/v1",
            "kind": "KafkaConnector",
            "metadata": {"name": sink, "labels": {"strimzi.io/cluster": CONNECT}},
            "spec": {
                "class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
                "tasksMax": 1,
                "config": {"topics": topic, "file": str(sink_file)},
                "listOffsets": {"toConfigMap": {"name": f"{sink}-offsets"}},
                "alterOffsets": {"fromConfigMap": {"name": f"{sink}-offsets"}},
            },
        }
    )
    wait_for(
        lambda: sink_file.exists() and len(sink_file.read_text().splitlines()) >= 3,
        120,
        "the sink to write",
    )
    kubeobj.spec("KafkaConnector", sink, state="stopped")
    kubeobj.wait("KafkaConnector", sink, lambda o: connector_state(o) == "STOPPED", "sink STOPPED")
    kubeobj.annotate("KafkaConnector", sink, **{OFFSETS: "list"})
    kubeobj.wait("KafkaConnector", sink, lambda o: OFFSETS not in o["metadata"].get("annotations", {}), "sink list")
    listed_sink = json.loads(kubeobj.config_map(f"{sink}-offsets").data["offsets.json"])  # type: ignore[union-attr]
    assert listed_sink["offsets"][0]["partition"] == {"kafka_topic": topic, "kafka_partition": 0}
    altered = {"offsets": [{"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": 1}}]}
    kubeobj.core.patch_namespaced_config_map(
        f"{sink}-offsets", kubeobj.ns, {"data": {"offsets.json": json.dumps(altered)}}
    )
    kubeobj.annotate("KafkaConnector", sink, **{OFFSETS: "alter"})
    kubeobj.wait("KafkaConnector", sink, lambda o: OFFSETS not in o["metadata"].get("annotations", {}), "sink alter")
    assert rest.get(f"{connect}/connectors/{sink}/offsets").json() == altered
    kubeobj.annotate("KafkaConnector", sink, **{OFFSETS: "reset"})
    kubeobj.wait("KafkaConnector", sink, lambda o: OFFSETS not in o["metadata"].get("annotations", {}), "sink reset")
    assert rest.get(f"{connect}/connectors/{sink}/offsets").json() == {"offsets": []}
    kubeobj.delete("KafkaConnector", sink)


def test_more_replicas_than_one_run_one_group_of_workers_that_share_the_tasks(
    kubeobj: Kube, connect: str, rest: httpx.Client, operator_process: OperatorProcess
) -> None:
    def scaled_to(replicas: int) -> Any:
        return lambda o: (
            is_ready(o)
            and o["status"].get("replicas") == replicas
            and o["status"].get("observedGeneration") == o["metadata"]["generation"]
        )

    first_worker = operator_process.worker_pid("KafkaConnect", CONNECT)
    assert first_worker, "the group's first worker runs"
    obj = kubeobj.spec("KafkaConnect", CONNECT, replicas=2)
    obj = kubeobj.wait("KafkaConnect", CONNECT, scaled_to(2), "two workers", timeout=300)
    # Scaling starts a worker beside the first and leaves the first running (a single worker is a group too).
    assert operator_process.worker_pid("KafkaConnect", CONNECT) == first_worker
    assert not conditions(obj, "Warning")
    assert obj["status"]["url"] == connect
    name = unique("spread")
    kubeobj.create(
        {
            "apiVersion": "kafka.strimzi.io/v1",
            "kind": "KafkaConnector",
            "metadata": {"name": name, "labels": {"strimzi.io/cluster": CONNECT}},
            "spec": {"class": "datagen", "tasksMax": 4, "config": {"topic": f"{name}-out", "records.per.second": 4}},
        }
    )

    def owners() -> set[str] | None:
        try:
            body = connect_status(rest, connect, name)
        except httpx.HTTPError:
            return None
        states = {body["connector"]["state"], *(t["state"] for t in body["tasks"])}
        return {t["worker_id"] for t in body["tasks"]} if len(body["tasks"]) == 4 and states == {"RUNNING"} else None

    # One group: the tasks of one connector run on both workers.
    assert len(wait_for(lambda: (o := owners()) and len(o) == 2 and o, 300, "tasks on both workers")) == 2
    kubeobj.delete("KafkaConnector", name)
    wait_for(lambda: rest.get(f"{connect}/connectors/{name}", timeout=30).status_code == 404, 120, "deleted")
    kubeobj.spec("KafkaConnect", CONNECT, replicas=1)
    kubeobj.wait("KafkaConnect", CONNECT, scaled_to(1), "back to one worker", timeout=300)
    assert operator_process.worker_pid("KafkaConnect", CONNECT) == first_worker


def test_the_operator_adds_nothing_strimzi_would_not(
    kubeobj: Kube, connect: str, operator_process: OperatorProcess, tmp_path: Path, rest: httpx.Client
) -> None:
    name = unique("plain")
    counting_connector(kubeobj, name, tmp_path / "starts")
    kubeobj.wait("KafkaConnector", name, running, "RUNNING")
    for kind, name_ in (("KafkaConnector", name), ("KafkaConnect", CONNECT)):
        obj = kubeobj.get(kind, name_)
        meta = obj["metadata"]
        assert not meta.get("finalizers"), meta.get("finalizers")
        assert not [a for a in meta.get("annotations", {}) if not a.startswith("strimzi.io/")], meta["annotations"]
        assert "kopf" not in json.dumps(obj)
    metrics = operator_process.metrics()
    for kind in ("KafkaConnect", "KafkaConnector"):
        assert f'strimzi_reconciliations_total{{kind="{kind}",namespace="{kubeobj.ns}",selector=""}}' in metrics
    kubeobj.delete("KafkaConnector", name)
    wait_for(lambda: name not in rest.get(f"{connect}/connectors").json(), 60, "the connector deleted from Connect")


def test_kill_9_mid_reconcile_loses_no_annotation_and_keeps_auto_restart_counts(
    kubeobj: Kube, connect: str, operator_process: OperatorProcess, tmp_path: Path
) -> None:
    names = [unique("crash") for _ in range(3)]
    for n in names:
        counting_connector(kubeobj, n, tmp_path / n)
    failing = unique("crashauto")
    counting_connector(kubeobj, failing, tmp_path / failing, config={"test.fail.task": "true"}, autoRestart={})
    for n in names:
        kubeobj.wait("KafkaConnector", n, running, "RUNNING")
    counted = kubeobj.wait(
        "KafkaConnector",
        failing,
        lambda o: ((o.get("status") or {}).get("autoRestart") or {}).get("count", 0) >= 2,
        "2 auto-restarts",
    )
    count_before = counted["status"]["autoRestart"]["count"]
    worker_pid = json.loads(
        next((operator_process.state_dir / "workers").glob("*/KafkaConnect/*/worker.json")).read_text()
    )["pid"]

    for n in names:
        kubeobj.annotate("KafkaConnector", n, **{RESTART: "true"})
    operator_process.kill9()
    handled = {n for n in names if RESTART not in kubeobj.get("KafkaConnector", n)["metadata"].get("annotations", {})}
    operator_process.start()

    for n in names:
        kubeobj.wait(
            "KafkaConnector",
            n,
            lambda o: RESTART not in o["metadata"].get("annotations", {}),
            f"{n}'s annotation handled",
        )
    for n in names:
        restarts = file_counts(tmp_path / n)[f"connector {n}"] - 1
        assert restarts == 1 if n in handled else restarts >= 1, (n, restarts, handled)
    later = kubeobj.wait(
        "KafkaConnector",
        failing,
        lambda o: (o["status"].get("autoRestart") or {}).get("count", 0) > count_before,
        "the count to continue",
        timeout=120,
    )
    assert later["status"]["autoRestart"]["count"] == count_before + 1, "the count continued from the status"
    pid_after = json.loads(
        next((operator_process.state_dir / "workers").glob("*/KafkaConnect/*/worker.json")).read_text()
    )["pid"]
    assert pid_after == worker_pid, "the new operator adopted the running worker"
    for n in [*names, failing]:
        kubeobj.delete("KafkaConnector", n)
