"""The KafkaConnect `spec.build` step (Strimzi's KafkaConnectBuild, without the image): before the workers
are ensured, the build's plugins are fetched into the local runtime's plugin directory, and the directory
goes to the workers as part of their settings, so a changed build restarts them with its plugins on
plugin.path (and Connect's `/connector-plugins`, hence `status.connectorPlugins`, lists them).

What the step decides:
- no `spec.build`: nothing (any directory of an earlier build is removed once the workers run without it);
- the Kubernetes runtime: a Warning that no image is built, and the rest of the KafkaConnect reconciles;
- an invalid build: its Warnings, nothing fetched, and the workers keep the last build installed;
- a build not fetched yet: a NotReady `BuildInProgress` status is written first (fetching can take a
  while), then the fetch; a failed fetch is NotReady naming the artifact and what to do, the workers keep
  the last build installed, and the build is tried again later (`hosting.plugin_build`: after 30 s for a
  network failure, 5 minutes for a wrong checksum or a missing file; at once when the build changes).
Called by `reconcile.kafka_connect`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from sparklink.operator.hosting.plugin_build import BuildFailure
from sparklink.operator.model import connect_build
from sparklink.operator.model.conditions import Condition, not_ready, warning
from sparklink.operator.model.resources import Key, Resource
from sparklink.operator.model.status import KafkaConnectStatus
from sparklink.operator.reconcile.context import Deps

log = logging.getLogger("sparklink.operator")

# How soon to look again at a build that failed (the fetcher decides whether it is time to try it again).
RETRY_SECONDS = 30.0
NOT_BUILT = (
    "spec.build is not built by the Kubernetes runtime: no container image is built or pushed, and the workers "
    "run spec.image (or the operator's --image) without these plugins. Build an image with the plugins on its "
    "plugin.path and set spec.image, or run the operator with --runtime local, which fetches them"
)


@dataclass(frozen=True)
class BuildStep:
    plugin_path: str = ""  # the directory the workers' plugin.path gets ("" for none)
    problem: Condition | None = None  # NotReady: the build could not be installed
    warnings: tuple[Condition, ...] = ()
    retry_after: float | None = None


def prepare(deps: Deps, resource: Resource) -> BuildStep:
    """Fetch what `spec.build` asks for (when it changed) and say which directory the workers use."""
    spec_build = resource.spec.get("build")
    builder = deps.plugin_builder
    if spec_build is None:
        return BuildStep()
    if builder is None:
        return BuildStep(warnings=(warning("BuildNotSupported", NOT_BUILT),))
    parsed = connect_build.parse(spec_build)
    if parsed.build is None:
        return BuildStep(_path(builder.latest(resource.key)), warnings=parsed.problems)
    installed = builder.installed(resource.key, parsed.build)
    if installed is not None:
        return BuildStep(str(installed), warnings=parsed.notes)
    fresh = builder.failed(resource.key, parsed.build) is None  # else the last failure stands for a while
    if fresh:  # a fetch will run: say so first
        _building(deps, resource, parsed.build)
    try:
        path = builder.fetch(resource.key, parsed.build)
    except BuildFailure as exc:
        if fresh:
            log.warning("%s: spec.build failed: %s", resource.key, exc.message)
        return BuildStep(
            _path(builder.latest(resource.key)),
            not_ready(exc.reason, exc.message),
            parsed.notes,
            RETRY_SECONDS,
        )
    return BuildStep(str(path), warnings=parsed.notes)


def settled(deps: Deps, key: Key, step: BuildStep, applied: bool) -> None:
    """The workers were ensured: when they now run with `step`'s directory, older builds can go."""
    if deps.plugin_builder is None or not applied:
        return
    deps.plugin_builder.prune(key, Path(step.plugin_path) if step.plugin_path else None)


def removed(deps: Deps, key: Key) -> None:
    """The KafkaConnect is gone: its fetched plugins go with its workers."""
    if deps.plugin_builder is not None:
        deps.plugin_builder.remove(key)


def _building(deps: Deps, resource: Resource, build: connect_build.Build) -> None:
    """Say that the build is being fetched, keeping the rest of the status as it is."""
    artifacts = sum(len(p.artifacts) for p in build.plugins)
    names = ", ".join(p.name for p in build.plugins)
    message = f"Fetching spec.build: {len(build.plugins)} plugins ({names}), {artifacts} artifacts"
    status = KafkaConnectStatus(
        conditions=[not_ready("BuildInProgress", message)],
        observed_generation=resource.status.get("observedGeneration"),
        url=resource.status.get("url"),
    )
    deps.write_status(resource, status)


def _path(path: Path | None) -> str:
    return str(path) if path is not None else ""
