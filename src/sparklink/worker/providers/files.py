"""Connect's FileConfigProvider and DirectoryConfigProvider, each limited by KIP-993's `allowed.paths`.

- `${file:/etc/app/creds.properties:password}`: the key `password` of a Java properties file, read as
  java.util.Properties reads it;
- `${directory:/etc/app/secrets:password}`: the whole content of the regular file `password` in that
  directory (not stripped: a trailing newline stays, as in Connect), the way Kubernetes mounts a Secret.

`allowed.paths` is a comma list of absolute paths that must exist (a worker with a bad one does not start);
a placeholder's path must lie under one of them. Connect compares normalised paths only; here the path a
symlink leads to must lie under the allowed path too, so a link inside an allowed directory cannot expose a
file outside it (Kubernetes' `..data` links stay inside their mount). Unlike Connect, which logs a warning
and leaves the placeholder, a path outside the list is an error that says so. Caller: registry.py.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import javaproperties

from sparklink.worker.providers.base import ProviderError

__all__ = ["ALLOWED_PATHS", "AllowedPaths", "DirectoryConfigProvider", "FileConfigProvider"]

ALLOWED_PATHS = "allowed.paths"


class AllowedPathsError(ValueError):
    """`allowed.paths` names a path that is not absolute or does not exist (Connect's ConfigException)."""


class AllowedPaths:
    """KIP-993's AllowedPaths: None allows every path."""

    def __init__(self, value: str | None) -> None:
        self.paths: list[Path] | None = None
        if value:
            self.paths = []
            for part in value.split(","):
                path = Path(os.path.normpath(part.strip()))
                if not path.is_absolute():
                    raise AllowedPathsError(f"Path {path} is not absolute")
                if not path.exists():
                    raise AllowedPathsError(f"Path {path} does not exist")
                self.paths.append(path)

    def check(self, provider: str, path: str) -> Path:
        """The path to open; raises ProviderError when `allowed.paths` does not cover it."""
        if self.paths is None:
            return Path(path)
        candidate = Path(os.path.normpath(path))
        real = Path(os.path.realpath(candidate))
        for allowed in self.paths:
            if candidate.is_relative_to(allowed) and real.is_relative_to(os.path.realpath(allowed)):
                return candidate
        listed = ",".join(str(p) for p in self.paths)
        raise ProviderError(
            f"the {provider} provider may not read {path}: it is not under its allowed.paths ({listed}); "
            f"move the file under one of them or add its directory to config.providers.{provider}.param.allowed.paths "
            "in the worker's properties"
        )


class _AllowedPathsProvider:
    """What the file and directory providers share: a name for messages and the paths they may read."""

    def __init__(self, name: str, params: Mapping[str, str]) -> None:
        self.name = name
        self.allowed = AllowedPaths(params.get(ALLOWED_PATHS))

    def close(self) -> None:
        pass


class FileConfigProvider(_AllowedPathsProvider):
    """`org.apache.kafka.common.config.provider.FileConfigProvider`."""

    def get(self, path: str, keys: set[str]) -> Mapping[str, str]:
        if not path:
            return {}
        file = self.allowed.check(self.name, path)
        try:
            with open(file, encoding="utf-8") as source:
                props = javaproperties.load(source)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            raise ProviderError(
                f"the {self.name} provider could not read properties from file {path}: {reason}"
            ) from None
        return {k: props[k] for k in keys if k in props}


class DirectoryConfigProvider(_AllowedPathsProvider):
    """`org.apache.kafka.common.config.provider.DirectoryConfigProvider`: keys are file names."""

    def get(self, path: str, keys: set[str]) -> Mapping[str, str]:
        if not path:
            return {}
        directory = self.allowed.check(self.name, path)
        if not directory.is_dir():
            raise ProviderError(f"the {self.name} provider found no directory {path}")
        found: dict[str, str] = {}
        # Only names of entries in the directory count, so a key cannot step out of it (`../x`, `a/b`).
        names = {entry.name for entry in directory.iterdir()} & keys
        for name in sorted(names):
            file = self.allowed.check(self.name, str(directory / name))
            if not file.is_file():
                continue  # a subdirectory, as in Connect
            try:
                found[name] = file.read_bytes().decode("utf-8")  # exactly as written, line ends too
            except (OSError, UnicodeDecodeError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
                raise ProviderError(
                    f"the {self.name} provider could not read file {directory / name}: {reason}"
                ) from None
        return found
