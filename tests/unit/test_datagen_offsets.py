"""datagen's offsets as PATCH /connectors/{name}/offsets may set them: a task id a Spark int holds, a position
a Spark long holds, so a task resuming from them starts rather than failing in the JVM."""

from __future__ import annotations

from typing import Any

import pytest

from sparklink.connectors.datagen import DatagenConnector

CONFIG = {"connector.class": "datagen", "topic": "t"}


def test_accepts_ids_and_positions_up_to_what_spark_holds_and_tombstones() -> None:
    offsets: list[Any] = [
        ({"task": 0}, {"position": 0}),
        ({"task": 2**31 - 1}, {"position": 2**63 - 1}),
        ({"task": 4}, None),
    ]
    assert DatagenConnector().alter_offsets(CONFIG, offsets) is False


@pytest.mark.parametrize(
    ("partition", "offset", "message"),
    [
        ({"task": 0}, {"position": 2**63}, "from 0 to 9223372036854775807"),
        ({"task": 0}, {"position": -1}, "from 0 to 9223372036854775807"),
        ({"task": 0}, {"position": "5"}, "from 0 to 9223372036854775807"),
        ({"task": 0}, {"position": True}, "from 0 to 9223372036854775807"),
        ({"task": 2**31}, {"position": 1}, "from 0 to 2147483647"),
        ({"task": -1}, {"position": 1}, "from 0 to 2147483647"),
        ({"task": 0, "x": 1}, {"position": 1}, "from 0 to 2147483647"),
    ],
)
def test_refuses_what_a_task_could_not_resume_from_naming_the_bounds(partition: Any, offset: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DatagenConnector().alter_offsets(CONFIG, [(partition, offset)])
