"""The placeholder grammar (Kafka's ConfigTransformer.DEFAULT_PATTERN) and putting placeholders back into task
configs (Connect's AbstractHerder#reverseTransform)."""

from __future__ import annotations

import pytest

from sparklink.worker.providers.references import Reference, find, reapply, substitute


@pytest.mark.parametrize(
    ("text", "refs"),
    [
        ("${file:/etc/app.properties:pw}", [Reference("file", "/etc/app.properties", "pw")]),
        ("${env:HOME}", [Reference("env", "", "HOME")]),
        ("${env::HOME}", [Reference("env", "", "HOME")]),
        ("${file:/a:b:c}", [Reference("file", "/a", "b:c")]),  # a colon after the path belongs to the key
        ("u=${env:U} p=${file:/p:pw}!", [Reference("env", "", "U"), Reference("file", "/p", "pw")]),
        ("${topic}", []),  # no colon: a template, not a placeholder
        ("log_${topic}-${timestamp}", []),
    ],
)
def test_placeholders_are_read_as_connect_reads_them(text: str, refs: list[Reference]) -> None:
    assert list(find(text)) == refs


def test_substitution_keeps_text_around_and_placeholders_without_an_answer() -> None:
    values = {Reference("env", "", "U"): "ada"}
    assert substitute("u=${env:U} p=${file:/p:pw}!", values.get) == "u=ada p=${file:/p:pw}!"


def test_placeholders_go_back_into_task_configs_that_carry_the_key() -> None:
    raw = {"connection.password": "${file:/p:pw}", "topics": "t", "connection.user": "${env:U}"}
    tasks = [{"connection.password": "s3cret!", "topics": "t", "task.class": "x"}, {"topics": "t"}]
    assert reapply(raw, tasks) == [
        {"connection.password": "${file:/p:pw}", "topics": "t", "task.class": "x"},
        {"topics": "t"},
    ]


def test_reference_text_is_the_placeholder() -> None:
    assert Reference("file", "/p", "pw").text == "${file:/p:pw}"
    assert Reference("env", "", "U").text == "${env:U}"
