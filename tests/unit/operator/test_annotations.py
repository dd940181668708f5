"""Strimzi's restart-annotation validation tables (KafkaConnectAssemblyOperatorConnectorRestartTest and
KafkaMirrorMaker2AssemblyOperatorConnectorRestartTest.annotationValues), plus our deliberate departures."""

from __future__ import annotations

import pytest

from sparklink.operator.model import annotations as anno
from sparklink.operator.model.annotations import Invalid, Offsets, Restart, TaskRestart

# (value, triggers a restart, valid) exactly as in Strimzi's table
CONNECTOR_TABLE = [
    ("true", True, True),
    ("includeTasks,onlyFailed", True, True),
    ("onlyFailed,includeTasks", True, True),
    ("    onlyFailed   ,   includeTasks   ", True, True),
    ("includeTasks", True, True),
    ("onlyFailed", True, True),
    ("   onlyFailed   ", True, True),
    ("    includeTasks   ", True, True),
    ("false", False, False),
    ("true,includeTasks", True, False),
    ("true,includeTasks,onlyFailed", True, False),
    ("true,onlyFailed", True, False),
    ("true,invalidArg,onlyFailed", True, False),
    ("invalidArg,onlyFailed", True, False),
    ("onlyFailed,invalidArg", True, False),
    ("includeTasks,invalidArg", True, False),
    ("invalidArg,includeTasks", True, False),
    ("", False, False),
    ("     ", False, False),
    ("   b  ", True, False),
]


@pytest.mark.parametrize(("value", "triggers", "valid"), CONNECTOR_TABLE)
def test_kafka_connector_restart_values_follow_strimzis_table(value: str, triggers: bool, valid: bool) -> None:
    parsed = anno.connector_restart(value)
    assert (parsed is not None) == triggers
    assert isinstance(parsed, Restart) == valid
    if triggers and not valid:
        assert parsed == Invalid("RestartConnector", "Invalid annotation format")


@pytest.mark.parametrize(
    ("value", "include_tasks", "only_failed"),
    [
        ("true", False, False),
        ("includeTasks", True, False),
        ("onlyFailed", False, True),
        ("onlyFailed,includeTasks", True, True),
    ],
)
def test_valid_restart_values_ask_for_exactly_what_they_say(value: str, include_tasks: bool, only_failed: bool) -> None:
    assert anno.connector_restart(value) == Restart(include_tasks, only_failed)


def test_restart_arguments_are_read_case_insensitively_unlike_strimzi() -> None:
    assert anno.connector_restart("INCLUDETASKS") == Restart(include_tasks=True, only_failed=False)


MM2 = "my-connector"
MIRROR_TABLE = [
    (MM2, True, True),
    (MM2 + ":includeTasks,onlyFailed", True, True),
    (MM2 + ":onlyFailed,includeTasks", True, True),
    (MM2 + ":    onlyFailed   ,   includeTasks   ", True, True),
    (MM2 + ":includeTasks", True, True),
    (MM2 + ":onlyFailed", True, True),
    (MM2 + ":   onlyFailed   ", True, True),
    (MM2 + ":    includeTasks   ", True, True),
    ("    " + MM2 + ":    includeTasks   ", True, False),
    ("", False, False),
    ("     ", False, False),
    ("   b  ", False, False),
]


@pytest.mark.parametrize(("value", "triggers", "valid"), MIRROR_TABLE)
def test_mirror_maker_restart_values_follow_strimzis_table(value: str, triggers: bool, valid: bool) -> None:
    parsed = anno.mirror_restart(value, MM2)
    assert (parsed is not None) == triggers
    assert isinstance(parsed, Restart) == valid


def test_mirror_maker_restart_names_one_connector() -> None:
    source, checkpoint = "a->b.MirrorSourceConnector", "a->b.MirrorCheckpointConnector"
    value = f"{source}:includeTasks"
    assert anno.mirror_restart(value, source) == Restart(True, False)
    assert anno.mirror_restart(value, checkpoint) is None
    assert anno.mirror_restart(f"{source}:wrong", source) == Invalid("RestartConnector", "Invalid annotation format")


def test_restart_task_numbers_and_bad_values() -> None:
    assert anno.connector_task_restart("2") == TaskRestart(2)
    assert anno.connector_task_restart(None) is None
    for bad in ("abc", "-1", ""):
        parsed = anno.connector_task_restart(bad)
        assert isinstance(parsed, Invalid) and parsed.reason == "RestartConnectorTask"


def test_mirror_restart_task_matches_strimzis_pattern() -> None:
    name = "a->b.MirrorSourceConnector"
    assert anno.mirror_task_restart(f"{name}:0", name) == TaskRestart(0)
    assert anno.mirror_task_restart(f" {name}:3 ", name) == TaskRestart(3)
    assert anno.mirror_task_restart("a->b.MirrorCheckpointConnector:0", name) is None
    bad = anno.mirror_task_restart(f"{name}:x", name)
    assert isinstance(bad, Invalid) and bad.reason == "RestartConnectorTask"


def test_offsets_values_and_the_empty_value_is_a_warning_not_a_failure() -> None:
    assert anno.connector_offsets("list") == Offsets("list")
    assert anno.connector_offsets(None) is None
    for bad in ("", "List", "delete"):
        parsed = anno.connector_offsets(bad)
        assert isinstance(parsed, Invalid) and parsed.reason == "ManageOffsets"


def test_mirror_maker_offsets_annotations_come_in_pairs() -> None:
    name = "a->b.MirrorSourceConnector"
    only_offsets = anno.mirror_offsets({anno.CONNECTOR_OFFSETS: "list"}, name, "ns", "mm2")
    assert only_offsets == Invalid(
        "ManageOffsets",
        "Encountered error getting connector offsets annotation. "
        "KafkaMirrorMaker2 resource ns/mm2 is missing annotation strimzi.io/mirrormaker-connector",
    )
    only_connector = anno.mirror_offsets({anno.MIRRORMAKER_CONNECTOR: name}, name, "ns", "mm2")
    assert isinstance(only_connector, Invalid) and only_connector.message.endswith("strimzi.io/connector-offsets")
    both = {anno.CONNECTOR_OFFSETS: "reset", anno.MIRRORMAKER_CONNECTOR: name}
    assert anno.mirror_offsets(both, name, "ns", "mm2") == Offsets("reset")
    assert anno.mirror_offsets(both, "a->b.MirrorCheckpointConnector", "ns", "mm2") is None


def test_offsets_config_map_keys() -> None:
    assert anno.offsets_config_map_key("KafkaConnector", "my-connector") == "offsets.json"
    assert anno.offsets_config_map_key("KafkaMirrorMaker2", "east->west.MirrorSourceConnector") == (
        "east--west.MirrorSourceConnector.json"
    )
