"""platform.ports.free_port: ports outside the kernel's ephemeral range, not handed out twice lately, free now."""

from __future__ import annotations

import socket
from collections import deque
from pathlib import Path

import pytest

from sparklink.platform import ports


def ephemeral() -> tuple[int, int]:
    first, last = (int(part) for part in ports.EPHEMERAL_RANGE.read_text().split())
    return first, last


@pytest.mark.skipif(not ports.EPHEMERAL_RANGE.exists(), reason="the kernel's ephemeral range is Linux's")
def test_ports_lie_outside_the_range_outgoing_connections_take() -> None:
    first, last = ephemeral()
    given = [ports.free_port() for _ in range(300)]
    assert all(port < first or port > last for port in given), [p for p in given if first <= p <= last][:5]
    assert all(port >= ports.LOWEST for port in given)


def test_a_port_is_handed_out_once_per_process() -> None:
    given = [ports.free_port() for _ in range(2_000)]
    assert len(set(given)) == len(given)


def test_a_port_handed_out_can_be_listened_on() -> None:
    port = ports.free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", port))
        server.listen()
        assert ports.port_open(port)


def test_a_port_someone_listens_on_is_never_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        monkeypatch.setattr(ports, "_outside_ephemeral", lambda: (taken, taken))  # a range of that port alone
        monkeypatch.setattr(ports, "_given", deque(maxlen=ports.RECENT))
        with pytest.raises(OSError, match=f"no free TCP port on 127.0.0.1 between {taken} and {taken}"):
            ports.free_port()


def test_without_room_outside_the_range_the_kernel_picks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    wide = tmp_path / "ip_local_port_range"
    wide.write_text("1024\t65535\n")
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE", wide)
    assert ports._outside_ephemeral() == (0, 0)
    assert ports.free_port() > 0
    wide.write_text("32768\t60999\n")
    assert ports._outside_ephemeral() == (ports.LOWEST, 32767)
    wide.write_text("10000\t40000\n")
    assert ports._outside_ephemeral() == (40001, 65535)
