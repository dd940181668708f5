"""Unpacking `tgz` and `zip` build artifacts: a member that would land outside its directory (absolute name,
`..`, a link out) refuses the whole archive and leaves the directory empty; nothing is written outside."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from sparklink.operator.hosting.archives import UnsafeArchive, unpack_tgz, unpack_zip
from tests.support.artifact_server import tgz, zipped


def tar_with(*members: tuple[tarfile.TarInfo, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return out.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info


@pytest.fixture
def place(tmp_path: Path) -> Callable[[bytes, str], tuple[Path, Path]]:
    def write(data: bytes, suffix: str) -> tuple[Path, Path]:
        archive = tmp_path / f"artifact.{suffix}"
        archive.write_bytes(data)
        target = tmp_path / "plugins" / "p" / "hash"
        target.mkdir(parents=True)
        return archive, target

    return write


def test_a_tgz_unpacks_into_its_directory(place: Callable[[bytes, str], tuple[Path, Path]]) -> None:
    archive, target = place(tgz({"lib/a.jar": b"jar", "README": b"hi"}), "tgz")
    unpack_tgz(archive, target)
    assert (target / "lib" / "a.jar").read_bytes() == b"jar" and (target / "README").read_bytes() == b"hi"


def test_a_zip_unpacks_into_its_directory(place: Callable[[bytes, str], tuple[Path, Path]]) -> None:
    archive, target = place(zipped({"lib/a.jar": b"jar", "docs/": b""}), "zip")
    unpack_zip(archive, target)
    assert (target / "lib" / "a.jar").read_bytes() == b"jar" and (target / "docs").is_dir()


@pytest.mark.parametrize(
    ("members", "why"),
    [
        ([(member("../escaped.jar"), b"x")], "steps out of its directory"),
        ([(member("lib/../../escaped.jar"), b"x")], "steps out of its directory"),
        ([(member("/tmp/escaped.jar"), b"x")], "absolute name"),
        ([(member("link", tarfile.SYMTYPE, "../../.."), b""), (member("link/escaped.jar"), b"x")], "outside"),
        ([(member("abs-link", tarfile.SYMTYPE, "/etc/passwd"), b"")], "absolute"),
        ([(member("hard", tarfile.LNKTYPE, "../../../outside"), b"")], "outside"),
        ([(member("dev", tarfile.CHRTYPE), b"")], "special file"),
    ],
)
def test_a_tgz_member_escaping_its_directory_refuses_the_archive(
    place: Callable[[bytes, str], tuple[Path, Path]],
    tmp_path: Path,
    members: list[tuple[tarfile.TarInfo, bytes]],
    why: str,
) -> None:
    archive, target = place(tar_with((member("ok.jar"), b"ok"), *members), "tgz")
    with pytest.raises(UnsafeArchive, match=why):
        unpack_tgz(archive, target)
    assert list(target.iterdir()) == []  # nothing of a refused archive stays
    assert not list(tmp_path.rglob("escaped.jar")) and not (tmp_path / "outside").exists()


@pytest.mark.parametrize(
    ("name", "why"), [("../escaped.jar", "steps out"), ("/escaped.jar", "absolute"), ("C:/x", "absolute")]
)
def test_a_zip_member_escaping_its_directory_refuses_the_archive(
    place: Callable[[bytes, str], tuple[Path, Path]], tmp_path: Path, name: str, why: str
) -> None:
    archive, target = place(zipped({"ok.jar": b"ok", name: b"x"}), "zip")
    with pytest.raises(UnsafeArchive, match=why):
        unpack_zip(archive, target)
    assert list(target.iterdir()) == []
    assert not list(tmp_path.rglob("escaped.jar"))


def test_a_zips_symbolic_links_are_skipped(place: Callable[[bytes, str], tuple[Path, Path]]) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("ok.jar", b"ok")
        link = zipfile.ZipInfo("link")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")
    archive, target = place(out.getvalue(), "zip")
    unpack_zip(archive, target)
    assert sorted(p.name for p in target.iterdir()) == ["ok.jar"]


def test_something_that_is_not_an_archive_is_refused(place: Callable[[bytes, str], tuple[Path, Path]]) -> None:
    archive, target = place(b"<html>not found</html>", "tgz")
    with pytest.raises(UnsafeArchive, match="not a readable tgz archive"):
        unpack_tgz(archive, target)
    with pytest.raises(UnsafeArchive, match="not a readable zip archive"):
        unpack_zip(archive, target)
