"""What every class-data-sharing archive of ours shares: where the files live, the JVM options that map or
dump one, and the identity its file name hashes. Callers: `kafka_class_archive` (the brokers' JVMs) and
`sparklink.worker.execution.class_archive` (the Spark JVM).

JDK 17 records the classes a JVM loaded into a file at its exit (`-XX:ArchiveClassesAtExit`, a dynamic
archive on top of the JDK's own) and maps them at a later start (`-XX:SharedArchiveFile`), so that JVM
neither reads, parses nor verifies them again. An archive belongs to one JDK build and one class path: its
file name holds a hash of the `java` binary and of each jar's size and modification time, so a changed
install looks for (and the bootstrap builds) another file. The JVM checks the archive again itself and,
should it not match, starts without it, as it would with none: the warning it would print is turned off,
since nothing is wrong but speed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from sparklink.platform import artifacts

QUIET = "-Xlog:cds=off,cds+dynamic=off"
"""The JVM's archive messages, off: warnings about classes it cannot archive while dumping (generated
accessors, lambda forms), and about an archive it does not use at start."""


def archive_dir() -> Path:
    return artifacts.project_root() / ".cache" / "class-archive"


def archive_path(prefix: str, identity: Iterable[str]) -> Path:
    """The file of the archive named `prefix` for this identity (each line something it depends on), with
    the `java` binary added: a new JDK build needs another archive."""
    java = java_binary()
    stat = java.stat() if java.exists() else None
    lines = [str(java), f"{stat.st_size}:{stat.st_mtime_ns}" if stat else "", *identity]
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
    return archive_dir() / f"{prefix}-{digest}.jsa"


def jar_stamps(paths: Iterable[Path]) -> list[str]:
    """Path, size and modification time of each jar that exists: the JVM refuses an archive whose jars
    changed since, so a rebuilt jar must lead to a new archive."""
    stamps = []
    for path in paths:
        if path.is_file():
            stat = path.stat()
            stamps.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}")
    return stamps


def mapping_options(archive: Path) -> list[str]:
    """The options of a JVM that maps `archive`, or none when there is no such file."""
    return [f"-XX:SharedArchiveFile={archive}", QUIET] if archive.is_file() else []


def training_options(target: Path) -> list[str]:
    """The options of a training JVM: dump the classes it loaded into `target` at its exit."""
    return [f"-XX:ArchiveClassesAtExit={target}", QUIET]


def remove_others(kept: Path) -> None:
    """Delete the archives of the same prefix but another identity: made for an earlier JDK or set of jars,
    they never match again, and each is 50-150 MB."""
    prefix = kept.name.rsplit("-", 1)[0]
    for old in kept.parent.glob(f"{prefix}-*.jsa"):
        if old != kept:
            old.unlink(missing_ok=True)


def ensure(what: str, estimate: str, without: str, target: Callable[[], Path], train: Callable[[Path], bool]) -> int:
    """The bootstrap's step for one archive: train it into `target()` unless that exists, say in a line what
    happened, and never fail (an archive only makes JVMs start sooner; `without` says what they do without
    one). Returns the step's exit status: 0."""
    began = time.monotonic()
    try:
        path = target()
        if path.is_file():
            print(f"class archive for {what} up to date ({path})")
            return 0
        print(f"training the class archive for {what} ({estimate})", flush=True)
        made = train(path)
    except Exception as exc:
        print(f"no class archive for {what} ({without}): {exc}")
        return 0
    if not made:
        print(f"no class archive for {what}: the JVM wrote none ({without})")
        return 0
    remove_others(path)
    print(f"class archive for {what} ready in {time.monotonic() - began:.0f}s ({path})")
    return 0


def java_binary() -> Path:
    """The `java` that runs: $JAVA_HOME/bin/java, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found else Path("java")
