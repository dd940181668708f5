"""The checks only a worker of a group makes (Connect's DistributedHerder#validateSinkConnectorGroupId and
#validateSourceConnectorExactlyOnceSupport, Kafka 4.3.1), through validation as the herders call it: a sink
whose consumer group is the workers' own group is refused on the key it came from, and
`exactly.once.support=required` is refused (this worker has no exactly-once source mode) together with the
connector's own answer; a standalone worker makes neither check, as in Connect."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from sparklink.api.errors import ConfigValidationError
from sparklink.worker.herder import validation
from sparklink.worker.herder.group_checks import NO_EXACTLY_ONCE_WORKER, NO_PREFLIGHT, UNSUPPORTED, GroupChecks
from sparklink.worker.plugins import Plugins
from sparklink.worker.plugins.desc import PythonPlugin
from tests.unit.test_client_override_validation import herder_with

GROUP = "connect-cluster"
CHECKS = GroupChecks(GROUP)
SINK = {"connector.class": "FileStreamSink", "topics": "t", "file": "/tmp/out.txt"}
SOURCE = {"connector.class": "datagen", "topic": "t", "name": "gen"}


def errors(config: Mapping[str, str], group: GroupChecks | None = CHECKS) -> dict[str, list[str]]:
    found = validation.validate(Plugins(), dict(config), 8, group=group)
    return {key: errs for key, errs in found.items() if errs}


def test_a_sink_named_so_its_group_is_the_workers_is_refused_on_its_name() -> None:
    found = errors({**SINK, "name": "cluster"})
    assert found == {
        "name": [f"Consumer group for sink connector named cluster conflicts with Connect worker group {GROUP}"]
    }
    assert errors({**SINK, "name": "other"}) == {}


def test_a_sink_whose_group_override_is_the_workers_is_refused_on_the_override() -> None:
    found = errors({**SINK, "name": "s", "consumer.override.group.id": GROUP})
    assert found == {
        "consumer.override.group.id": [f"Consumer group {GROUP} conflicts with Connect worker group {GROUP}"]
    }
    assert errors({**SINK, "name": "cluster", "consumer.override.group.id": "mine"}) == {}  # the override wins


def test_exactly_once_required_is_refused_with_the_connectors_own_answer() -> None:
    # datagen does not say whether it could (no exactlyOnceSupport): Connect's preflight message too.
    assert errors({**SOURCE, "exactly.once.support": "REQUIRED"}) == {
        "exactly.once.support": [NO_EXACTLY_ONCE_WORKER, NO_PREFLIGHT]
    }
    assert errors({**SOURCE, "exactly.once.support": "requested"}) == {}
    assert errors(SOURCE) == {}


class _Answering(PythonPlugin):
    def __init__(self, answer: str | Exception | None) -> None:
        desc = Plugins().resolve("datagen")
        assert isinstance(desc, PythonPlugin)
        super().__init__(desc.cls)
        self.answer = answer

    def exactly_once_support(self, config: Mapping[str, str]) -> str | None:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("SUPPORTED", [NO_EXACTLY_ONCE_WORKER]),
        ("UNSUPPORTED", [NO_EXACTLY_ONCE_WORKER, UNSUPPORTED]),
        (None, [NO_EXACTLY_ONCE_WORKER, NO_PREFLIGHT]),
        (
            RuntimeError("no database"),
            [NO_EXACTLY_ONCE_WORKER, "An unexpected error occurred during validation: no database"],
        ),
    ],
)
def test_the_connectors_exactly_once_answer_is_reported_as_connect_reports_it(
    answer: str | Exception | None, expected: list[str]
) -> None:
    found: dict[str, list[str]] = {}
    GroupChecks(GROUP).add_errors(_Answering(answer), {**SOURCE, "exactly.once.support": "required"}, found)
    assert found == {"exactly.once.support": expected}


def test_a_standalone_worker_checks_neither() -> None:
    assert errors({**SINK, "name": "cluster"}, group=None) == {}
    assert errors({**SOURCE, "exactly.once.support": "required"}, group=None) == {}
    herder = herder_with(**{"group.id": GROUP})
    herder.put_connector_config("cluster", {**SINK, "name": "cluster"})  # accepted: Connect's standalone does too


def test_a_worker_of_a_group_refuses_them_at_create_with_connects_400() -> None:
    with pytest.raises(ConfigValidationError) as refused:
        validation.validated(validation.Checks(Plugins(), 8, group=GroupChecks(GROUP)), "cluster", dict(SINK))
    assert "conflicts with Connect worker group" in str(refused.value)
    infos = validation.config_infos(
        validation.Checks(Plugins(), 8, group=GroupChecks(GROUP)),
        "datagen",
        {**SOURCE, "exactly.once.support": "required"},
    )
    values = {c.value.name: c.value.errors for c in infos.configs}
    assert values["exactly.once.support"] == [NO_EXACTLY_ONCE_WORKER, NO_PREFLIGHT]
    assert infos.error_count == 2
