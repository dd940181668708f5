"""The local API server's binaries are built the first time something starts it, saying so, and never twice;
when they cannot be built the error says what to run.

Each test lays out a checkout of its own (SPARKLINK_HOME) whose scripts/kube-binaries.sh is a small twin of
the real one (it writes the three binaries and counts its runs), except the last, which runs the real
script on a PATH without Go.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sparklink.platform import kube_binaries
from sparklink.platform.artifacts import ArtifactsMissingError, project_root

# The twin: prints progress as the real script does (colour codes included), then writes the binaries.
BUILDS = """\
echo run >> "$(dirname "$0")/../runs"
printf '\\033[1;34m[bootstrap]\\033[0m building kube-apiserver from the Go module proxy ... first time only\\n'
mkdir -p .cache/kube/bin
for name in etcd kube-apiserver kube-controller-manager; do
  printf '#!/bin/sh\\n' > .cache/kube/bin/$name && chmod +x .cache/kube/bin/$name
done
"""


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SPARKLINK_HOME", str(tmp_path))
    monkeypatch.delenv("SPARKLINK_KUBE_BIN", raising=False)
    monkeypatch.delenv("SPARKLINK_SKIP_KUBE", raising=False)
    (tmp_path / "scripts").mkdir()
    return tmp_path


def build_script(checkout: Path, body: str) -> None:
    (checkout / "scripts" / "kube-binaries.sh").write_text(body)


def runs(checkout: Path) -> int:
    path = checkout / "runs"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_missing_binaries_are_built_on_first_need_saying_so_and_not_again(checkout: Path) -> None:
    build_script(checkout, BUILDS)
    lines: list[str] = []
    kube_binaries.ensure(report=lines.append)
    assert runs(checkout) == 1
    assert "building etcd, kube-apiserver, kube-controller-manager" in lines[0]
    assert "first time only" in lines[0] and f"log: {checkout}/.cache/kube/logs" in lines[0]
    # The script's own progress is passed on, without terminal colour codes.
    assert "[bootstrap] building kube-apiserver from the Go module proxy ... first time only" in lines
    assert kube_binaries.missing() == []
    assert kube_binaries.binary("kube-apiserver") == checkout / ".cache/kube/bin/kube-apiserver"

    again: list[str] = []
    kube_binaries.ensure(report=again.append)
    assert runs(checkout) == 1 and again == []


def test_an_installation_without_the_scripts_says_what_to_run(checkout: Path) -> None:
    with pytest.raises(ArtifactsMissingError) as missing:
        kube_binaries.ensure(report=lambda line: None)
    text = str(missing.value)
    assert "etcd, kube-apiserver, kube-controller-manager" in text
    assert "run `bash scripts/kube-binaries.sh`" in text and "SPARKLINK_KUBE_BIN=" in text


def test_skip_kube_is_honoured_with_the_command_to_run_instead(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build_script(checkout, BUILDS)
    monkeypatch.setenv("SPARKLINK_SKIP_KUBE", "1")
    with pytest.raises(ArtifactsMissingError, match=r"SPARKLINK_SKIP_KUBE=1 .*run `bash scripts/kube-binaries.sh`"):
        kube_binaries.ensure(report=lambda line: None)
    assert runs(checkout) == 0


def test_a_directory_named_by_kube_bin_is_never_built_into(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build_script(checkout, BUILDS)
    monkeypatch.setenv("SPARKLINK_KUBE_BIN", str(checkout / "elsewhere"))
    with pytest.raises(ArtifactsMissingError, match="SPARKLINK_KUBE_BIN="):
        kube_binaries.ensure(report=lambda line: None)
    assert runs(checkout) == 0


def test_a_failed_build_shows_its_last_lines_and_what_to_run(checkout: Path) -> None:
    build_script(checkout, "echo 'go: module lookup disabled'; exit 1\n")
    with pytest.raises(ArtifactsMissingError) as failed:
        kube_binaries.ensure(report=lambda line: None)
    text = str(failed.value)
    assert "go: module lookup disabled" in text and "exit 1" in text
    assert "run `bash scripts/kube-binaries.sh`" in text


def test_the_real_script_without_go_says_to_install_it(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = Path(__file__).resolve().parents[2] / "scripts" / "kube-binaries.sh"
    assert project_root() == checkout
    shutil.copy(real, checkout / "scripts" / "kube-binaries.sh")
    bash = shutil.which("bash")
    assert bash is not None
    monkeypatch.setenv("PATH", str(Path(bash).parent))  # bash and coreutils, no go
    assert shutil.which("go") is None
    with pytest.raises(ArtifactsMissingError) as cannot:
        kube_binaries.ensure(report=lambda line: None)
    text = str(cannot.value)
    assert text.startswith("cannot build etcd, kube-apiserver, kube-controller-manager here")
    assert "'go' not found" in text and "install Go 1.26 or newer" in text
