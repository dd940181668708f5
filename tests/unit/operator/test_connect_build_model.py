"""KafkaConnect `spec.build` as the model reads it: Strimzi's artifact types and layout, and a Warning that
names the field for every input the operator refuses (nothing of such a build is fetched)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from sparklink.operator.model.connect_build import Artifact, display_url, parse

SHA = "ab" * 64


def plugin(name: str = "my-plugin", *artifacts: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "artifacts": list(artifacts) or [{"type": "jar", "url": "https://example.com/a.jar"}]}


def messages(spec: Any) -> list[str]:
    parsed = parse(spec)
    assert parsed.build is None
    assert all(c.type == "Warning" and c.reason == "InvalidBuild" for c in parsed.problems)
    return [str(c.message) for c in parsed.problems]


def test_a_valid_build_reads_every_artifact_type_and_ignores_output() -> None:
    spec = {
        "output": {"type": "docker", "image": "example/connect:latest"},
        "plugins": [
            plugin(
                "debezium-postgres",
                {"type": "tgz", "url": "https://example.com/d.tgz", "sha512sum": SHA.upper()},
                {"type": "zip", "url": "http://example.com/d.zip"},
                {"type": "jar", "url": "https://example.com/x.jar", "insecure": True},
                {"type": "other", "url": "https://example.com/NOTICE", "fileName": "NOTICE.txt"},
                {"type": "maven", "group": "org.apache.kafka", "artifact": "connect-file", "version": "4.1.0"},
            )
        ],
    }
    parsed = parse(spec)
    # No notes: the maven artifact is resolved with its dependencies, as in Strimzi.
    assert parsed.problems == () and parsed.notes == () and parsed.build is not None
    (only,) = parsed.build.plugins
    assert only.name == "debezium-postgres"
    assert [a.type for a in only.artifacts] == ["tgz", "zip", "jar", "other", "maven"]
    assert only.artifacts[0].sha512sum == SHA  # compared in lower case
    assert only.artifacts[2].insecure is True
    assert only.artifacts[3].stored_name == "NOTICE.txt"
    assert only.artifacts[4].coordinates == "org.apache.kafka:connect-file:4.1.0"
    assert only.artifacts[4].include_scope is None  # Strimzi's default: every dependency


def test_layout_follows_strimzis_hash_stubs_and_maven_layout() -> None:
    jar = Artifact("jar", url="https://example.com/a.jar")
    assert jar.hash_stub == hashlib.sha1(b"https://example.com/a.jar").hexdigest()[:8]
    assert jar.stored_name == f"{jar.hash_stub}.jar"
    assert (
        Artifact("other", url="https://example.com/a").stored_name
        == Artifact("other", url="https://example.com/a").hash_stub
    )
    assert Artifact("tgz", url="https://example.com/a.tgz").stored_name is None
    mvn = Artifact("maven", group="org.apache.kafka", artifact="connect-file", version="4.1.0")
    assert mvn.hash_stub == hashlib.sha1(b"org.apache.kafka/connect-file/4.1.0").hexdigest()[:8]
    assert mvn.stored_name is None  # Maven names what it copies (the artifact's jar and its dependencies)


def test_the_digest_changes_with_any_artifact_and_only_then() -> None:
    one = parse({"plugins": [plugin()]}).build
    same = parse({"plugins": [plugin()]}).build
    other = parse({"plugins": [plugin("my-plugin", {"type": "jar", "url": "https://example.com/b.jar"})]}).build
    assert one is not None and same is not None and other is not None
    assert one.digest() == same.digest() != other.digest()


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, "spec.build.plugins) is required"),
        ({"plugins": [plugin("My_Plugin")]}, "spec.build.plugins[0].name 'My_Plugin' must match"),
        ({"plugins": [plugin("../etc")]}, "spec.build.plugins[0].name '../etc' must match"),
        ({"plugins": [plugin("a/b")]}, "spec.build.plugins[0].name 'a/b' must match"),
        ({"plugins": [plugin("p"), plugin("p")]}, "must match"),  # one character is too short for the pattern
        ({"plugins": [plugin("pp"), plugin("pp")]}, "spec.build.plugins[1].name 'pp': connector plugin names have"),
        ({"plugins": [{"name": "pp"}]}, "spec.build.plugins[0].artifacts: each connector plugin needs"),
        ({"plugins": [plugin("pp", {"type": "war", "url": "https://e/x"})]}, "artifacts[0].type 'war' is not one"),
        ({"plugins": [plugin("pp", {"type": "jar"})]}, "artifacts[0]: `jar` artifact is missing a URL"),
        ({"plugins": [plugin("pp", {"type": "tgz", "url": "file:///etc/passwd"})]}, "url must be an http or https"),
        ({"plugins": [plugin("pp", {"type": "zip", "url": "ftp://e/x.zip"})]}, "url must be an http or https"),
        ({"plugins": [plugin("pp", {"type": "jar", "url": "https://e/x y.jar"})]}, "url must be an http or https"),
        (
            {"plugins": [plugin("pp", {"type": "jar", "url": "https://e/x", "sha512sum": "abc"})]},
            "artifacts[0].sha512sum must be 128 hexadecimal digits",
        ),
        (
            {"plugins": [plugin("pp", {"type": "other", "url": "https://e/x", "fileName": "../../bin/sh"})]},
            "artifacts[0].fileName '../../bin/sh' must be one plain file name",
        ),
        (
            {"plugins": [plugin("pp", {"type": "other", "url": "https://e/x", "fileName": ".."})]},
            "fileName '..' must be one plain file name",
        ),
        (
            {"plugins": [plugin("pp", {"type": "maven", "group": "g", "artifact": "a"})]},
            "artifacts[0]: `maven` artifact is missing its version",
        ),
        (
            {"plugins": [plugin("pp", {"type": "maven", "group": "g", "artifact": "..", "version": "1"})]},
            "artifacts[0].artifact '..' is not a plain Maven coordinate",
        ),
        (
            {"plugins": [plugin("pp", {"type": "maven", "group": "g/../x", "artifact": "a", "version": "1"})]},
            "artifacts[0].group 'g/../x' is not a plain Maven coordinate",
        ),
        (
            {
                "plugins": [
                    plugin(
                        "pp", {"type": "maven", "group": "g", "artifact": "a", "version": "1", "repository": "file:/m"}
                    )
                ]
            },
            "artifacts[0].repository must be an http or https URL",
        ),
    ],
)
def test_each_refused_input_is_a_warning_naming_the_field(spec: dict[str, Any], expected: str) -> None:
    found = messages(spec)
    assert any(expected in m for m in found), found
    assert all(m.endswith("nothing of spec.build was fetched: fix the resource") for m in found)


def test_every_problem_of_a_build_is_reported_at_once() -> None:
    spec = {"plugins": [plugin("Bad"), plugin("pp", {"type": "jar"}, {"type": "nope"})]}
    assert len(messages(spec)) == 3


def test_a_url_shown_in_a_message_keeps_no_credentials_or_query() -> None:
    url = "https://user:s3cret@example.com:8443/repo/a.jar?token=t0ken"
    assert display_url(url) == "https://example.com:8443/repo/a.jar"


def test_a_build_may_hold_only_so_many_artifacts() -> None:
    many = [{"type": "jar", "url": f"https://example.com/{i}.jar"} for i in range(201)]
    assert any("201 artifacts, more than the 200" in m for m in messages({"plugins": [plugin("pp", *many)]}))
    assert parse({"plugins": [plugin("pp", *many[:200])]}).build is not None
