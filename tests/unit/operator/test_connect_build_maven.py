"""A `maven` build artifact as Maven is asked to resolve it (`hosting.maven`): the pom written for it (the
coordinates escaped, the repository added unless it is Central), the argv (no shell, the plugin pinned,
Strimzi's `includeScope` and `insecure`), what the model lets through to them, and how Maven's failures
become messages that name the artifact and show no credential. Maven itself is a twin here (fake_mvn.py);
tests/it/test_operator_connect_build.py runs the real one."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparklink.operator.hosting.maven import (
    COPY_DEPENDENCIES,
    MavenResolver,
    ResolutionFailed,
    argv,
    error_detail,
    pom,
)
from sparklink.operator.model.connect_build import Artifact, parse
from tests.support.artifact_server import ArtifactServer, artifact_server

NS = {"m": "http://maven.apache.org/POM/4.0.0"}
FAKE = (sys.executable, str(Path(__file__).with_name("fake_mvn.py")))


def maven(**fields: str | bool | None) -> Artifact:
    base: dict[str, str | bool | None] = {"group": "org.example", "artifact": "conn", "version": "1.0"}
    return Artifact("maven", **{**base, **fields})  # type: ignore[arg-type]


def test_the_pom_depends_on_the_artifact_alone_and_escapes_the_repository() -> None:
    repository = "https://repo.example.com/maven2?a=1&b=<2>"
    root = ET.fromstring(pom(maven(repository=repository)))
    dependencies = root.findall("m:dependencies/m:dependency", NS)
    assert len(dependencies) == 1
    assert [dependencies[0].findtext(f"m:{f}", namespaces=NS) for f in ("groupId", "artifactId", "version")] == [
        "org.example",
        "conn",
        "1.0",
    ]
    assert root.findtext("m:repositories/m:repository/m:url", namespaces=NS) == repository
    assert b"&amp;b=&lt;2&gt;" in pom(maven(repository=repository))
    # Nothing in it that Maven would run: no build section, no parent, no plugin repositories.
    assert root.find("m:build", NS) is None and root.find("m:parent", NS) is None
    # Central (Strimzi's default) is Maven's own: not added again.
    for central in (None, "https://repo1.maven.org/maven2/", "https://repo1.maven.org/maven2"):
        assert ET.fromstring(pom(maven(repository=central))).find("m:repositories", NS) is None


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        (None, []),  # Strimzi's default: no scope, every dependency
        ("runtime", ["-DincludeScope=runtime"]),
        ("compile", ["-DincludeScope=compile"]),
        ("test", ["-DincludeScope=test"]),
        ("provided", ["-DexcludeTransitive=true"]),  # never passed on to a consumer: the artifact alone
        ("system", ["-DexcludeTransitive=true"]),
    ],
)
def test_argv_runs_the_pinned_plugin_quietly_with_the_scope(scope: str | None, expected: list[str]) -> None:
    args = argv(("mvn",), maven(include_scope=scope), Path("/s/pom.xml"), Path("/out/p/abc"))
    assert args[:6] == ["mvn", "-B", "-q", "-U", "--strict-checksums", "-Dstyle.color=never"]
    assert args[6:9] == ["-f", "/s/pom.xml", COPY_DEPENDENCIES] and ":2.8:" in COPY_DEPENDENCIES
    assert args[9:] == ["-DoutputDirectory=/out/p/abc", *expected]


def test_an_insecure_artifact_turns_off_tls_checks_in_maven_as_strimzi_does() -> None:
    args = argv(("mvn",), maven(insecure=True), Path("/s/pom.xml"), Path("/o"))
    assert "-Daether.connector.https.securityMode=insecure" in args
    assert "-Dmaven.wagon.http.ssl.insecure=true" in args
    assert not any("insecure" in a for a in argv(("mvn",), maven(), Path("/s/pom.xml"), Path("/o")))


def test_the_model_takes_include_scope_and_ignores_mirrors_with_a_warning() -> None:
    art = {"type": "maven", "group": "g", "artifact": "a", "version": "1", "includeScope": "runtime"}
    parsed = parse({"plugins": [{"name": "pp", "artifacts": [art]}]})
    assert parsed.problems == () and parsed.notes == () and parsed.build is not None
    assert parsed.build.plugins[0].artifacts[0].include_scope == "runtime"
    mirrored = parse({"plugins": [{"name": "pp", "artifacts": [{**art, "mirrors": [{"url": "https://m"}]}]}]})
    assert [(c.type, c.reason) for c in mirrored.notes] == [("Warning", "BuildOptionIgnored")]
    assert "spec.build.plugins[0].artifacts[0].mirrors is ignored" in str(mirrored.notes[0].message)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"includeScope": "everything"}, "includeScope 'everything' is not one of compile, provided, runtime"),
        ({"version": "1</version><build>"}, "version '1</version><build>' is not a plain Maven coordinate"),
        ({"group": "org&amp;x"}, "group 'org&amp;x' is not a plain Maven coordinate"),
        ({"artifact": "a b"}, "artifact 'a b' is not a plain Maven coordinate"),
        ({"repository": "https://repo.example.com/<x>"}, "repository must be an http or https URL"),
    ],
)
def test_markup_or_an_unknown_scope_never_reaches_the_pom(fields: dict[str, str], expected: str) -> None:
    art = {"type": "maven", "group": "g", "artifact": "a", "version": "1", **fields}
    parsed = parse({"plugins": [{"name": "pp", "artifacts": [art]}]})
    assert parsed.build is None
    assert any(expected in str(c.message) for c in parsed.problems), [c.message for c in parsed.problems]


def test_maven_errors_are_one_line_without_credentials_or_queries() -> None:
    output = (
        "\x1b[0m\x1b[0m[ERROR] Failed to execute goal on project plugin-1: Could not resolve dependencies for project "
        "sparklink.build:plugin-1:pom:0: Could not find artifact g:a:jar:1 in spec-build "
        "(https://user:s3cret@repo.example.com/m2?token=abc) -> [Help 1]\n[ERROR] \n[ERROR] To see the full stack "
        "trace of the errors, re-run Maven with the -e switch.\n"
    )
    detail = error_detail(output)
    assert detail == "Could not find artifact g:a:jar:1 in spec-build (https://repo.example.com/m2)"
    assert error_detail("x" * 1000)[-3:] == "..." and len(error_detail("x" * 1000)) == 400
    assert error_detail("") == "no output"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ArtifactServer]:
    with artifact_server(tmp_path / "served") as served:
        yield served


def test_the_resolver_writes_the_pom_in_scratch_and_copies_into_the_target(
    tmp_path: Path, server: ArtifactServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "mvn.log"
    monkeypatch.setenv("FAKE_MVN_LOG", str(log))
    repo = server.put_maven("org.example", "conn", "1.0", b"maven-jar")
    MavenResolver(FAKE).resolve(maven(repository=repo), tmp_path / "target", tmp_path / "scratch")
    assert (tmp_path / "target" / "conn-1.0.jar").read_bytes() == b"maven-jar"
    (call,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert call[call.index("-f") + 1] == str(tmp_path / "scratch" / "pom.xml")


def test_an_unknown_artifact_is_not_found_naming_its_coordinates(tmp_path: Path, server: ArtifactServer) -> None:
    repo = server.put_maven("org.example", "conn", "1.0", b"maven-jar")
    with pytest.raises(ResolutionFailed) as failed:
        MavenResolver(FAKE).resolve(maven(artifact="nope", repository=repo), tmp_path / "t", tmp_path / "s")
    assert failed.value.retriable is False
    message = failed.value.message
    assert message.startswith("maven artifact org.example:nope:1.0 (or one of its dependencies) was not found")
    assert "check its group, artifact, version and repository" in message
    assert "Could not find artifact org.example:nope:jar:1.0 in spec-build" in message


def test_without_maven_the_failure_says_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(ResolutionFailed) as failed:
        MavenResolver((str(tmp_path / "no-such-mvn"),)).resolve(maven(), tmp_path / "t", tmp_path / "s")
    assert failed.value.retriable is True and "needs Maven: install it" in failed.value.message
