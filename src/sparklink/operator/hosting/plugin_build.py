"""Fetches a KafkaConnect's `spec.build.plugins` for the local runtime: what Strimzi's image build does,
as a directory the workers' `plugin.path` names instead of an image.

Layout: `<root>/<build digest>/<plugin name>/<hash stub>/...` (Strimzi's `/opt/kafka/plugins/<plugin
name>/<hash stub>/`, see `model.connect_build`), so `<root>/<build digest>` is one plugin.path entry whose
subdirectories are Connect's plugin locations. A build is fetched into a temporary directory beside it and
renamed into place only when every artifact arrived, matched its `sha512sum` and unpacked safely: a
directory named by a digest is complete, which is also the stamp that an unchanged build needs nothing
fetched again. A new build gets a new directory (so the workers' plugin.path changes and they restart);
`prune` removes the others once the workers run on the new one.

Downloads are http(s) only (the model refuses other schemes; httpx has no file:// transport anyway, so a
redirect cannot reach one either), capped at `MAX_DOWNLOAD_BYTES`, verified against `sha512sum` when given.
Archives go through `archives`, which refuses members that would land outside their directory. A `maven`
artifact is resolved with its dependencies by Maven (`maven.MavenResolver`), as Strimzi's build does.
Messages name artifacts by URL without user info or query (`display_url`), so no credential reaches a log
or condition. Caller: `reconcile.connect_build`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import httpx

from sparklink.operator.hosting import archives
from sparklink.operator.hosting.maven import MavenResolver, ResolutionFailed
from sparklink.operator.model.connect_build import Artifact, Build, display_url
from sparklink.operator.model.resources import Key

log = logging.getLogger("sparklink.operator.hosting")

MAX_DOWNLOAD_BYTES = 512 * 1024 * 1024  # one artifact; Connect plugins with dependencies stay well below
TIMEOUT_SECONDS = 60.0
# How long a failed build is not tried again: a network failure soon, a wrong checksum or a 404 later (the
# resource's build changing, or the operator restarting, tries at once).
RETRY_NETWORK_SECONDS = 30.0
RETRY_FAILED_SECONDS = 300.0
STAMP = "build.json"


class BuildFailure(Exception):
    """An artifact could not be installed; `reason` is the condition's reason, the message says what to do."""

    def __init__(self, reason: str, message: str, retriable: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.retriable = retriable  # worth another try later (the network), unlike a wrong checksum


class LocalPluginBuilder:
    def __init__(self, state_dir: Path, maven: MavenResolver | None = None) -> None:
        self.state_dir = Path(state_dir)
        self.maven = maven or MavenResolver()
        # A build that failed, by (resource, build digest): reconciles come often (every connector change), and a
        # failed build is not downloaded again for a while, only when it changes or its time is up.
        self._failed: dict[tuple[Key, str], tuple[BuildFailure, float]] = {}

    def root(self, key: Key) -> Path:
        return self.state_dir / key.namespace / key.kind / key.name / "plugins"

    def installed(self, key: Key, build: Build) -> Path | None:
        """The build's directory when it is complete (nothing to fetch), else None."""
        path = self.root(key) / build.digest()
        return path if (path / STAMP).is_file() else None

    def latest(self, key: Key) -> Path | None:
        """The most recently installed build (what the workers run while a new build is unusable)."""
        root = self.root(key)
        done = (
            [p for p in root.glob("*") if not p.name.startswith(".") and (p / STAMP).is_file()] if root.exists() else []
        )
        return max(done, key=lambda p: (p / STAMP).stat().st_mtime, default=None)

    def failed(self, key: Key, build: Build) -> BuildFailure | None:
        """The failure of `build`'s last try while it is too recent to try again (see `RETRY_*_SECONDS`)."""
        remembered = self._failed.get((key, build.digest()))
        if remembered is None:
            return None
        failure, at = remembered
        wait = RETRY_NETWORK_SECONDS if failure.retriable else RETRY_FAILED_SECONDS
        return failure if time.monotonic() - at < wait else None

    def fetch(self, key: Key, build: Build) -> Path:
        """Install `build` (idempotent); BuildFailure naming the artifact, with nothing left in plugin.path."""
        done = self.installed(key, build)
        if done is not None:
            return done
        recent = self.failed(key, build)
        if recent is not None:
            raise recent
        try:
            return self._fetch(key, build)
        except BuildFailure as exc:
            self._failed = {k: v for k, v in self._failed.items() if k[0] != key}
            self._failed[(key, build.digest())] = (exc, time.monotonic())
            raise

    def _fetch(self, key: Key, build: Build) -> Path:
        root = self.root(key)
        root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{build.digest()}-", dir=root))
        try:
            for plugin in build.plugins:
                for artifact in plugin.artifacts:
                    target = work / plugin.name / artifact.hash_stub
                    try:
                        target.mkdir(parents=True, exist_ok=True)
                        if artifact.type == "maven":
                            _resolve(self.maven, artifact, target, work)
                        else:
                            _install(artifact, target, work)
                    except OSError as exc:  # the operator's disk (full, permissions): worth another try later
                        text = f"plugin {plugin.name} could not be written to {root}: {exc.strerror}"
                        raise BuildFailure("BuildFailed", text, retriable=True) from None
            (work / STAMP).write_text(json.dumps([asdict(p) for p in build.plugins], sort_keys=True))
            final = root / build.digest()
            shutil.rmtree(final, ignore_errors=True)  # an incomplete leftover (no stamp) of an earlier try
            work.rename(final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        log.info("%s: installed spec.build (%d plugins) in %s", key, len(build.plugins), final)
        return final

    def prune(self, key: Key, keep: Path | None) -> None:
        """Remove every build directory but `keep` (the one the workers now run with)."""
        root = self.root(key)
        if not root.exists():
            return
        for path in root.iterdir():
            if path != keep:
                shutil.rmtree(path, ignore_errors=True)

    def remove(self, key: Key) -> None:
        self._failed = {k: v for k, v in self._failed.items() if k[0] != key}
        shutil.rmtree(self.root(key), ignore_errors=True)


def _resolve(maven: MavenResolver, artifact: Artifact, target: Path, work: Path) -> None:
    scratch = work / f".maven-{artifact.hash_stub}"
    try:
        maven.resolve(artifact, target, scratch)
    except ResolutionFailed as exc:
        text = f"{exc.message}; nothing of this build was installed and the workers keep their last build"
        raise BuildFailure("BuildFailed", text, exc.retriable) from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _install(artifact: Artifact, target: Path, work: Path) -> None:
    name = artifact.stored_name
    download = target / name if name is not None else work / f".{artifact.hash_stub}.{artifact.type}"
    _download(artifact, download)
    if name is not None:
        return
    try:
        if artifact.type == "tgz":
            archives.unpack_tgz(download, target)
        else:
            archives.unpack_zip(download, target)
    except archives.UnsafeArchive as exc:
        what = f"{artifact.type} artifact {display_url(artifact.source)}"
        raise BuildFailure("UnsafeArchive", f"{what} was refused: {exc}; nothing was installed") from None
    finally:
        download.unlink(missing_ok=True)


def _download(artifact: Artifact, path: Path) -> None:
    """Fetch the artifact to `path`, checked against its `sha512sum` when it has one."""
    url = artifact.source
    shown = display_url(url)
    sha512 = hashlib.sha512()
    try:
        with (
            httpx.Client(follow_redirects=True, verify=not artifact.insecure, timeout=TIMEOUT_SECONDS) as client,
            client.stream("GET", url) as response,
            path.open("wb") as out,
        ):
            _answered(artifact, shown, response.status_code)
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > MAX_DOWNLOAD_BYTES:
                    text = f"{artifact.type} artifact {shown} is larger than {MAX_DOWNLOAD_BYTES} bytes"
                    raise BuildFailure("DownloadTooLarge", text)
                sha512.update(chunk)
                out.write(chunk)
    except httpx.HTTPError as exc:
        # The exception's text can hold the full URL: say only its kind.
        raise BuildFailure(
            "DownloadFailed", f"{artifact.type} artifact {shown} could not be fetched ({type(exc).__name__})", True
        ) from None
    if artifact.sha512sum is not None and sha512.hexdigest() != artifact.sha512sum:
        raise BuildFailure(
            "ChecksumMismatch",
            f"{artifact.type} artifact {shown} does not match its sha512sum (got {sha512.hexdigest()[:16]}...): "
            "nothing was installed; correct the sha512sum or the URL",
        )


def _answered(artifact: Artifact, shown: str, status: int) -> None:
    if status != 200:
        text = f"{artifact.type} artifact {shown} answered HTTP {status}: check its URL"
        raise BuildFailure("DownloadFailed", text, retriable=status >= 500)
