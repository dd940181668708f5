"""Where a plugin may read and write local files: the worker's rules, handed to plugins through the SPI.

A worker hands every plugin its `FileAccess`: the connector instance it validates or starts
(`Connector.files`) and every task context it builds (`TaskContext.files`). A plugin that opens a file
named by its config (the file connectors) asks it first, at validate time and again when its task
starts, so a config stored before a rule existed does not run either.

The rules, with Kafka's KIP-993 `allowed.paths` as the model for the allow-list:

- a path is made absolute (against the worker's working directory), normalised and its symlinks
  resolved, so neither `..` nor a link leads out of a directory;
- nothing is written into the worker's own installation or Python path: every `sys.path` entry, the
  site-packages directories (the user's too, even before it exists), the virtualenv, the Python
  installation's library and scripts directories, the sparklink package, and the directories the
  worker adds (its state directory, Spark's jars and home). A `.pth` file or a module there runs
  code when the worker next starts;
- a file is written only into a directory that exists: a missing parent is an error, never created;
- with an allow-list (the worker's `sparklink.file.allowed.paths`), a file is read or written only
  under one of its directories. Without one, any other path is open, as Kafka's file connectors are.

Imports nothing beyond the standard library, like the rest of the SPI.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

ALLOWED_PATHS = "sparklink.file.allowed.paths"
"""The worker property that holds the allow-list (a comma-separated list of absolute directories)."""


class FileAccessError(ValueError):
    """A path a plugin may not use; the message names the path and the rule."""


def resolve(path: str | os.PathLike[str]) -> Path:
    """`path` made absolute, `..` removed and every symlink followed (as far as the path exists)."""
    return Path(os.path.realpath(os.path.abspath(os.fspath(path))))


def parse_allowed(value: str | None) -> tuple[Path, ...] | None:
    """An allow-list as Kafka's AllowedPaths reads `allowed.paths`: None when unset or empty; each
    entry must be absolute and exist (ValueError names the first that is not)."""
    if value is None or not value.strip():
        return None
    out: list[Path] = []
    for entry in (part.strip() for part in value.split(",")):
        normalised = os.path.normpath(entry) if entry else entry
        if not normalised or not os.path.isabs(normalised):
            raise ValueError(f"Path {normalised} is not absolute")
        if not os.path.exists(normalised):
            raise ValueError(f"Path {normalised} does not exist")
        out.append(resolve(normalised))
    return tuple(out)


def installation_paths() -> tuple[Path, ...]:
    """This Python process's installation and import path: where a written file could become code."""
    import sparklink

    found: list[str] = [entry or os.getcwd() for entry in sys.path]
    found += site.getsitepackages() if hasattr(site, "getsitepackages") else []
    found.append(site.getusersitepackages())
    if sys.prefix != sys.base_prefix:  # a virtualenv: all of it is the installation
        found += [sys.prefix, sys.exec_prefix]
    for scheme in (sysconfig.get_paths(), sysconfig.get_paths(vars={"base": sys.base_prefix})):
        found += [scheme[k] for k in ("stdlib", "platstdlib", "purelib", "platlib", "scripts") if k in scheme]
    found.append(os.path.dirname(os.path.abspath(sparklink.__file__)))
    return tuple(dict.fromkeys(resolve(p) for p in found))


def _inside(path: Path, root: Path) -> bool:
    text, top = str(path), str(root)
    return text == top or text.startswith(top if top.endswith(os.sep) else top + os.sep)


@dataclass(frozen=True)
class FileAccess:
    """Where plugins may read and write: an optional allow-list and the paths no plugin writes into."""

    allowed: tuple[Path, ...] | None = None
    """Resolved directories every read and write must be under; None: no allow-list."""
    protected: tuple[Path, ...] = field(default_factory=installation_paths)
    """Resolved paths (and everything under them) no plugin writes to."""

    @classmethod
    def of(cls, allowed: str | None = None, protected: Iterable[str | os.PathLike[str]] = ()) -> FileAccess:
        """A worker's rules: its allow-list setting (see `parse_allowed`) and, beside this process's
        installation, paths of its own that no plugin writes into."""
        return cls(parse_allowed(allowed), tuple(dict.fromkeys([*installation_paths(), *map(resolve, protected)])))

    def protecting(self, *paths: str | os.PathLike[str]) -> FileAccess:
        """These rules, keeping writes out of `paths` as well."""
        return FileAccess(self.allowed, tuple(dict.fromkeys([*self.protected, *map(resolve, paths)])))

    # ------------------------------------------------------------------ checks
    def write_error(self, path: str) -> str | None:
        """Why `path` may not be written (appended to or created), or None if it may."""
        return _refusal(self.writable, path)

    def read_error(self, path: str) -> str | None:
        """Why `path` may not be read, or None if it may (a missing file may be waited for)."""
        return _refusal(self.readable, path)

    def writable(self, path: str) -> Path:
        """The resolved path to write `path` at; FileAccessError naming the rule when it may not be."""
        real = resolve(path)
        inside = [root for root in self.protected if _inside(real, root)]
        if inside:
            shown = "" if str(real) == path else f" (resolved: {real})"
            raise FileAccessError(
                f"{path}{shown} is inside the worker's own installation or Python path "
                f"({max(inside, key=lambda root: len(str(root)))}): connectors never write there, since a file "
                "there can run code when the worker starts"
            )
        self._check_allowed(path, real)
        if not real.parent.is_dir():
            raise FileAccessError(
                f"the directory {real.parent} of {path} does not exist: connectors do not create directories; "
                "create it first or choose a file in an existing directory"
            )
        if real.is_dir():
            raise FileAccessError(f"{path} is a directory, not a file")
        return real

    def readable(self, path: str) -> Path:
        """The resolved path to read `path` at; FileAccessError naming the rule when it may not be."""
        real = resolve(path)
        self._check_allowed(path, real)
        return real

    def _check_allowed(self, path: str, real: Path) -> None:
        if self.allowed is None or any(_inside(real, root) for root in self.allowed):
            return
        shown = "" if str(real) == path else f" (resolved: {real})"
        raise FileAccessError(
            f"{path}{shown} is outside the worker's allowed paths ({ALLOWED_PATHS}: "
            f"{', '.join(map(str, self.allowed))})"
        )


def _refusal(check: Callable[[str], Path], path: str) -> str | None:
    """The FileAccessError message `check` raises for `path`, or None when it allows it."""
    try:
        check(path)
    except FileAccessError as exc:
        return str(exc)
    return None
