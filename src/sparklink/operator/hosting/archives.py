"""Unpacks a `tgz` or `zip` build artifact into its directory, and nothing outside it.

A member with an absolute name, a `..` step, a link (symbolic or hard) pointing outside the directory,
or a device or FIFO refuses the whole archive (`UnsafeArchive`): an archive from a resource's URL must
never become a file write it was not meant to be. tar archives go through Python's `data` extraction
filter (PEP 706), which enforces exactly that and drops set-uid bits; zip members are checked here
(zipfile itself only rewrites bad names silently), and a zip's symbolic links are skipped, as Strimzi's
build deletes them. Archives are capped in members and unpacked size. Caller: `hosting.plugin_build`.
"""

from __future__ import annotations

import posixpath
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path

MAX_MEMBERS = 20_000
MAX_UNPACKED_BYTES = 2 * 1024 * 1024 * 1024


class UnsafeArchive(Exception):
    """The archive was refused; the message names the member and why."""


def unpack_tgz(archive: Path, target: Path) -> None:
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = tar.getmembers()
            _check_totals(len(members), sum(m.size for m in members if m.isfile()))
            for member in members:
                _check_name(member.name)
            tar.extractall(target, filter="data")
    except tarfile.FilterError as exc:  # a link out, an absolute name, a device, ...
        _clear(target)
        raise UnsafeArchive(str(exc)) from None
    except (tarfile.TarError, EOFError, OSError) as exc:
        _clear(target)
        raise UnsafeArchive(f"it is not a readable tgz archive ({type(exc).__name__})") from None
    except UnsafeArchive:
        _clear(target)
        raise


def unpack_zip(archive: Path, target: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            _check_totals(len(infos), sum(i.file_size for i in infos))
            for info in infos:
                _check_name(info.filename)
            base = target.resolve()
            for info in infos:
                mode = info.external_attr >> 16
                if stat.S_ISLNK(mode):
                    continue  # Strimzi's build removes a zip's symbolic links too
                path = (target / info.filename).resolve()
                if path != base and base not in path.parents:
                    raise UnsafeArchive(f"member {info.filename!r} would be written outside its directory")
                if info.is_dir():
                    path.mkdir(parents=True, exist_ok=True)
                    continue
                path.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, path.open("wb") as out:
                    shutil.copyfileobj(src, out)
    except UnsafeArchive:
        _clear(target)
        raise
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        _clear(target)
        raise UnsafeArchive(f"it is not a readable zip archive ({type(exc).__name__})") from None


def _check_name(name: str) -> None:
    """A member name must be relative and stay inside: no leading /, no drive, no `..` step."""
    cleaned = name.replace("\\", "/")
    if cleaned.startswith("/") or (len(cleaned) > 1 and cleaned[1] == ":"):
        raise UnsafeArchive(f"member {name!r} has an absolute name")
    if ".." in posixpath.normpath(cleaned).split("/") or ".." in cleaned.split("/"):
        raise UnsafeArchive(f"member {name!r} steps out of its directory (..)")
    if "\x00" in name:
        raise UnsafeArchive("a member name holds a NUL character")


def _check_totals(members: int, size: int) -> None:
    if members > MAX_MEMBERS:
        raise UnsafeArchive(f"it has more than {MAX_MEMBERS} members")
    if size > MAX_UNPACKED_BYTES:
        raise UnsafeArchive(f"it unpacks to more than {MAX_UNPACKED_BYTES} bytes")


def _clear(target: Path) -> None:
    """Leave nothing of a refused archive (the directory itself is the caller's, inside its temp dir)."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True, exist_ok=True)
