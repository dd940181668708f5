"""KafkaConnect `spec.build`: Strimzi's connector plugins and their artifacts, typed and checked.

Strimzi's api module (`connect/build/`) is the spec: a build holds `plugins`, each with a unique `name`
(`^[a-z0-9][-_a-z0-9]*[a-z0-9]$`) and `artifacts` of type `jar`, `tgz`, `zip`, `other` (`url`, optional
`sha512sum` and `insecure`; `other` also `fileName`) or `maven` (`group`, `artifact`, `version`,
`repository`, default Maven Central, `includeScope` and `insecure`; resolved with its dependencies by
`hosting.maven`). Where the operator puts them follows Strimzi's image layout (`KafkaConnectDockerfile`):
`<plugin name>/<hash stub>/...`, the stub being the first 8 hex characters of the SHA-1 of the artifact's
URL (of `group/artifact/version` for `maven`).

Stricter than Strimzi, because a resource must never become a download it was not meant to be, a file
write outside the plugin's directory, or markup in the pom Maven reads: URLs are http or https only
(Strimzi's pattern also allows ftp), `fileName` is one plain path segment, the Maven coordinates are plain
segments too (no markup, no `/`, no `..`), and a `sha512sum` is 128 hex digits. `output` is not needed by
the local runtime (nothing is pushed) and is ignored there, as are a maven artifact's `mirrors` (with a
Warning). Every problem is a Warning condition naming the field and what to do; a build with any problem is
not fetched at all. Caller: `reconcile.connect_build`; the fetcher (`hosting.plugin_build`) reads the result.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

from sparklink.operator.model.conditions import Condition, warning

PLUGIN_NAME = re.compile(r"^[a-z0-9][-_a-z0-9]*[a-z0-9]$")
# Strimzi's URL pattern, with the scheme narrowed to http and https.
URL = re.compile(r"^https?://[-a-zA-Z0-9+&@#/%?=~_|!:,.;]*[-a-zA-Z0-9+&@#/%=~_|]$")
SHA512 = re.compile(r"^[0-9a-fA-F]{128}$")
SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")  # a file or Maven coordinate: never "..", "/" or empty
GROUP = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")
TYPES = ("jar", "tgz", "zip", "maven", "other")
SCOPES = ("compile", "provided", "runtime", "test", "system")  # Strimzi's MavenArtifactIncludeScope
DEFAULT_REPOSITORY = "https://repo1.maven.org/maven2/"
REASON = "InvalidBuild"
MAX_ARTIFACTS = 200  # in one build: each is a download, so a resource cannot ask for an unbounded number


@dataclass(frozen=True)
class Artifact:
    type: str
    url: str | None = None
    sha512sum: str | None = None
    insecure: bool = False
    file_name: str | None = None  # `other` only
    group: str | None = None  # `maven` only, as are the next three
    artifact: str | None = None
    version: str | None = None
    repository: str | None = None
    include_scope: str | None = None  # one of SCOPES; None: every dependency, as in Strimzi

    @property
    def coordinates(self) -> str:
        """A maven artifact's `group:artifact:version` (how messages name it)."""
        return f"{self.group}:{self.artifact}:{self.version}"

    @property
    def hash_stub(self) -> str:
        """Strimzi's directory name for the artifact: `Util.hashStub` of the URL (of `g/a/v` for maven)."""
        text = f"{self.group}/{self.artifact}/{self.version}" if self.type == "maven" else str(self.url)
        return hashlib.sha1(text.encode("ascii", "replace")).hexdigest()[:8]

    @property
    def source(self) -> str:
        """Where a downloadable artifact comes from (a `maven` one is resolved by Maven: `hosting.maven`)."""
        return str(self.url)

    @property
    def stored_name(self) -> str | None:
        """The file a downloaded artifact becomes in its directory; None for archives (unpacked there) and
        `maven` (Maven copies the artifact and its dependencies there under their own names)."""
        if self.type == "jar":
            return f"{self.hash_stub}.jar"
        if self.type == "other":
            return self.file_name or self.hash_stub
        return None


@dataclass(frozen=True)
class Plugin:
    name: str
    artifacts: tuple[Artifact, ...]


@dataclass(frozen=True)
class Build:
    plugins: tuple[Plugin, ...]

    def digest(self) -> str:
        """Changes whenever what the build installs changes (the fetcher's stamp and directory name)."""
        text = json.dumps([asdict(p) for p in self.plugins], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Parsed:
    build: Build | None  # None when there is no usable build (see `problems`)
    problems: tuple[Condition, ...] = ()
    notes: tuple[Condition, ...] = ()  # Warnings about parts that are ignored; the build is still used


def display_url(url: str) -> str:
    """A URL fit for a log or a condition: user info and query (where tokens live) left out."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # not a number: shown as nothing rather than as what the user info might hold
        port = ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def parse(spec_build: Any) -> Parsed:
    """`spec.build` checked; each problem a Warning naming the field (`spec.build.plugins[0].artifacts[1].url`)."""
    if not isinstance(spec_build, Mapping):
        return _refused(["spec.build must be an object with a plugins list"])
    raw_plugins = spec_build.get("plugins")
    if not isinstance(raw_plugins, list):
        return _refused(["List of connector plugins (spec.build.plugins) is required when Kafka Connect Build is used"])
    problems: list[str] = []
    notes: list[Condition] = []
    plugins: list[Plugin] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_plugins):
        where = f"spec.build.plugins[{i}]"
        if not isinstance(raw, Mapping):
            problems.append(f"{where} must be an object with name and artifacts")
            continue
        name = raw.get("name")
        if not isinstance(name, str) or not PLUGIN_NAME.match(name):
            problems.append(f"{where}.name {_show(name)} must match {PLUGIN_NAME.pattern}")
            name = None
        elif name in seen:
            problems.append(f"{where}.name {name!r}: connector plugin names have to be unique")
        else:
            seen.add(name)
        raw_artifacts = raw.get("artifacts")
        if not isinstance(raw_artifacts, list) or not raw_artifacts:
            problems.append(f"{where}.artifacts: each connector plugin needs a non-empty list of artifacts")
            continue
        artifacts = []
        for j, art in enumerate(raw_artifacts):
            artifact, errors, ignored = _artifact(art, f"{where}.artifacts[{j}]")
            problems += errors
            notes += ignored
            if artifact is not None:
                artifacts.append(artifact)
        if name is not None:
            plugins.append(Plugin(name, tuple(artifacts)))
    count = sum(len(p.artifacts) for p in plugins)
    if count > MAX_ARTIFACTS:
        problems.append(f"spec.build.plugins has {count} artifacts, more than the {MAX_ARTIFACTS} one build may hold")
    if problems:
        return _refused(problems)
    return Parsed(Build(tuple(plugins)), (), tuple(notes))


def _refused(problems: list[str]) -> Parsed:
    fix = "; nothing of spec.build was fetched: fix the resource"
    return Parsed(None, tuple(warning(REASON, text + fix) for text in problems))


def _artifact(raw: Any, where: str) -> tuple[Artifact | None, list[str], list[Condition]]:
    if not isinstance(raw, Mapping):
        return None, [f"{where} must be an object with a type"], []
    kind = raw.get("type")
    if kind not in TYPES:
        return None, [f"{where}.type {_show(kind)} is not one of {', '.join(TYPES)}"], []
    errors: list[str] = []
    notes: list[Condition] = []
    insecure = raw.get("insecure", False)
    if not isinstance(insecure, bool):
        errors.append(f"{where}.insecure must be true or false")
        insecure = False
    if kind == "maven":
        coordinates = {}
        for field, pattern in (("group", GROUP), ("artifact", SEGMENT), ("version", SEGMENT)):
            value = raw.get(field)
            if not isinstance(value, str) or not value:
                errors.append(f"{where}: `maven` artifact is missing its {field}")
            elif not pattern.match(value) or ".." in value:
                errors.append(f"{where}.{field} {_show(value)} is not a plain Maven coordinate")
            coordinates[field] = value if isinstance(value, str) else None
        repository = raw.get("repository")
        if repository is not None and not (isinstance(repository, str) and URL.match(repository)):
            errors.append(f"{where}.repository must be an http or https URL")
        scope = raw.get("includeScope")
        if scope is not None and scope not in SCOPES:
            errors.append(f"{where}.includeScope {_show(scope)} is not one of {', '.join(SCOPES)}")
        if raw.get("mirrors") is not None:
            text = f"{where}.mirrors is ignored: the local runtime resolves with the operator host's own Maven settings"
            notes.append(warning("BuildOptionIgnored", text))
        artifact = Artifact(
            "maven",
            insecure=insecure,
            group=coordinates["group"],
            artifact=coordinates["artifact"],
            version=coordinates["version"],
            repository=repository if isinstance(repository, str) else None,
            include_scope=scope if isinstance(scope, str) else None,
        )
        return (None if errors else artifact), errors, notes
    url = raw.get("url")
    if not isinstance(url, str) or not url:
        errors.append(f"{where}: `{kind}` artifact is missing a URL")
    elif not URL.match(url):
        errors.append(f"{where}.url must be an http or https URL (no other scheme, no spaces)")
    checksum = raw.get("sha512sum")
    if checksum is not None and not (isinstance(checksum, str) and SHA512.match(checksum)):
        errors.append(f"{where}.sha512sum must be 128 hexadecimal digits (a SHA-512 checksum)")
    file_name = raw.get("fileName") if kind == "other" else None
    if file_name is not None and not (isinstance(file_name, str) and SEGMENT.match(file_name)):
        errors.append(f"{where}.fileName {_show(file_name)} must be one plain file name (no / and no ..)")
    if errors:
        return None, errors, notes
    checksum = checksum.lower() if isinstance(checksum, str) else None
    return Artifact(kind, url, checksum, insecure, file_name), errors, notes


def _show(value: Any) -> str:
    """A value from the resource quoted for a message, cut short (it is the user's own input)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
