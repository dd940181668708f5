"""Resolves a `spec.build` `maven` artifact with its dependencies, as Strimzi's image build does, with the
host's own `mvn`: the artifact's jar and the jars it needs land in its directory (`<plugin>/<hash stub>/`).

Strimzi (`KafkaConnectDockerfile`) downloads the artifact's pom and runs `mvn dependency:copy-dependencies
-DincludeScope=<scope>` on it, with the artifact's `repository` as an extra repository. Here Maven never
builds a downloaded pom: that pom (or its parents) could name build extensions or another version of the
dependency plugin, which is code Maven would run in the operator's host. Instead a small pom of our own
declares the artifact as its one dependency, and a pinned `maven-dependency-plugin` copies that
dependency tree. So the result is what a consumer of the artifact gets: `includeScope` `compile`,
`runtime` and `test` (and none, Strimzi's default: every scope) select among the artifact and its
transitive dependencies as in Strimzi; `provided` and `system` dependencies are not passed on to a
consumer, so those two scopes give the artifact's own jar only.

Safety: coordinates and repository were checked by `model.connect_build` (plain segments, an http(s) URL)
and go into the pom through ElementTree, which escapes them; `mvn` runs from an argv list (no shell), in
batch and quiet mode, with a timeout, failing on a wrong checksum. Maven keeps its own local repository
(`~/.m2`), so a build that is fetched again downloads nothing; `-U` only makes it look again for what it
did not find before (an artifact published since). Maven's output can show a repository URL, so what
reaches a condition or a log has every URL cut to scheme, host and path (`display_url`). Caller: `hosting.plugin_build`.
"""

from __future__ import annotations

import re
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sparklink.operator.model.connect_build import DEFAULT_REPOSITORY, Artifact, display_url

# Maven 3.8's default version of the plugin (already in a warm ~/.m2); pinned so no pom can choose another.
COPY_DEPENDENCIES = "org.apache.maven.plugins:maven-dependency-plugin:2.8:copy-dependencies"
TIMEOUT_SECONDS = 600.0
REPOSITORY_ID = "spec-build"
# Scopes Maven passes on to a consumer (a filter among them); the others leave the artifact alone.
TRANSITIVE_SCOPES = ("compile", "runtime", "test")
INSECURE = (
    "-Daether.connector.https.securityMode=insecure",
    "-Dmaven.wagon.http.ssl.insecure=true",
    "-Dmaven.wagon.http.ssl.allowall=true",
    "-Dmaven.wagon.http.ssl.ignore.validity.dates=true",
)
# What Maven says when an artifact (or a dependency) is not in any repository: not worth trying again soon.
NOT_FOUND = re.compile(r"Could not find artifact|was not found in|Failure to find|could not be resolved: .*not found")
URL_IN_TEXT = re.compile(r"https?://[^\s)\]]+")
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
DETAIL_CHARS = 400


class ResolutionFailed(Exception):
    """Maven could not resolve the artifact; the message names it and says what to do."""

    def __init__(self, message: str, retriable: bool) -> None:
        super().__init__(message)
        self.message = message
        self.retriable = retriable  # a network failure or a timeout, unlike an unknown artifact


def pom(artifact: Artifact) -> bytes:
    """The pom Maven runs on: one dependency (the artifact) and, unless it is Central, its repository."""
    project = ET.Element("project", xmlns="http://maven.apache.org/POM/4.0.0")
    for name, value in (
        ("modelVersion", "4.0.0"),
        ("groupId", "sparklink.build"),
        ("artifactId", f"plugin-{artifact.hash_stub}"),
        ("version", "0"),
        ("packaging", "pom"),
    ):
        ET.SubElement(project, name).text = value
    repository = artifact.repository
    if repository is not None and repository.rstrip("/") != DEFAULT_REPOSITORY.rstrip("/"):
        repo = ET.SubElement(ET.SubElement(project, "repositories"), "repository")
        ET.SubElement(repo, "id").text = REPOSITORY_ID
        ET.SubElement(repo, "url").text = repository
    dependency = ET.SubElement(ET.SubElement(project, "dependencies"), "dependency")
    for key, coordinate in (
        ("groupId", artifact.group),
        ("artifactId", artifact.artifact),
        ("version", artifact.version),
    ):
        ET.SubElement(dependency, key).text = str(coordinate)
    text: bytes = ET.tostring(project, encoding="utf-8", xml_declaration=True)
    return text


def argv(command: Sequence[str], artifact: Artifact, pom_path: Path, output: Path) -> list[str]:
    """`mvn` copying the artifact and the dependencies its `includeScope` selects into `output`."""
    args = [
        *command,
        "-B",
        "-q",
        "-U",
        "--strict-checksums",
        "-Dstyle.color=never",
        "-f",
        str(pom_path),
        COPY_DEPENDENCIES,
    ]
    args.append(f"-DoutputDirectory={output}")
    scope = artifact.include_scope
    if scope in TRANSITIVE_SCOPES:
        args.append(f"-DincludeScope={scope}")
    elif scope is not None:  # provided, system: a consumer receives none of these, so the artifact alone
        args.append("-DexcludeTransitive=true")
    if artifact.insecure:
        args += INSECURE
    return args


@dataclass
class MavenResolver:
    """Runs `command` (the host's `mvn`; a test gives a stand-in) for each maven artifact."""

    command: Sequence[str] = field(default=("mvn",))
    timeout: float = TIMEOUT_SECONDS

    def resolve(self, artifact: Artifact, target: Path, scratch: Path) -> None:
        """Copy the artifact and its dependencies into `target`; `scratch` holds the pom (caller removes it)."""
        scratch, target = scratch.resolve(), target.resolve()  # mvn runs in `scratch`
        scratch.mkdir(parents=True, exist_ok=True)
        pom_path = scratch / "pom.xml"
        pom_path.write_bytes(pom(artifact))
        what = f"maven artifact {artifact.coordinates}"
        try:
            done = subprocess.run(
                argv(self.command, artifact, pom_path, target),
                cwd=scratch,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=self.timeout,
                check=False,
            )
        except FileNotFoundError:
            text = f"{what} needs Maven: install it (mvn on the operator's PATH) or use a jar, tgz or zip artifact"
            raise ResolutionFailed(text, retriable=True) from None
        except subprocess.TimeoutExpired:
            text = f"{what} was not resolved within {self.timeout:.0f} s: check that its repository is reachable"
            raise ResolutionFailed(text, retriable=True) from None
        if done.returncode == 0:
            return
        detail = error_detail(done.stdout + "\n" + done.stderr)
        if NOT_FOUND.search(detail):
            text = (
                f"{what} (or one of its dependencies) was not found: check its group, artifact, version and "
                f"repository ({detail})"
            )
            raise ResolutionFailed(text, retriable=False)
        text = f"{what} could not be resolved with its dependencies ({detail}): check that its repository is reachable"
        raise ResolutionFailed(text, retriable=True)


def error_detail(output: str) -> str:
    """What Maven says went wrong, in one line: URLs cut to scheme, host and path, the length capped."""
    plain = ANSI.sub("", output)  # Maven 3.8 writes colour resets even in batch mode
    lines = [line.strip() for line in plain.splitlines() if line.strip()]
    errors = [line.removeprefix("[ERROR]").strip() for line in lines if line.startswith("[ERROR]")]
    goal = [line for line in errors if line.startswith("Failed to execute goal")]
    first = next(iter(goal or [e for e in errors if e] or lines[-1:]), "no output")
    first = re.sub(r"^Failed to execute goal.*? on project [^:]+: ", "", first.removesuffix("-> [Help 1]").strip())
    first = re.sub(r"^Could not resolve dependencies for project \S+: ", "", first)
    shown = URL_IN_TEXT.sub(lambda m: display_url(m.group(0)), first)
    return shown if len(shown) <= DETAIL_CHARS else shown[: DETAIL_CHARS - 3] + "..."
