"""A throwaway PostgreSQL server for the JDBC connector tests, from Debian's `postgresql` package.

`initdb` makes a cluster in a temporary directory and the `postgres` server runs on a free loopback
port with password authentication over TCP, so the connectors really log in, and with `wal_level=logical`
so Debezium's PostgreSQL connector can stream changes (pgoutput). PostgreSQL refuses to run
as root, so under root both run as the package's `postgres` user, which then owns the directory. The
server is stopped (fast shutdown) and the directory removed at the end of the session.

Use it by importing the fixture into a test module: `from tests.it.postgres import postgres_server`;
outside pytest (bench.cdc), `with running_postgres() as server: ...`.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sparklink.platform import ports
from tests.helpers import wait_for

USER = "sparklink"
PASSWORD = "sparklink-test-password"


@dataclass(frozen=True)
class Postgres:
    host: str
    port: int
    user: str = USER
    password: str = PASSWORD
    dbname: str = "postgres"

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{self.dbname}"

    def connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            dbname=self.dbname,
            autocommit=True,
            connect_timeout=5,
        )

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        with self.connect() as conn:
            return conn.execute(sql.encode()).fetchall()

    def execute(self, sql: str) -> None:
        with self.connect() as conn:
            conn.execute(sql.encode())

    def drop_slot(self, slot: str) -> bool:
        """Drop a replication slot once no connector holds it (True: gone; False: still in use, try later)."""
        with self.connect() as conn:
            active = conn.execute(b"SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchall()
            if not active:
                return True
            if active[0][0]:
                return False
            conn.execute(b"SELECT pg_drop_replication_slot(%s)", (slot,))
            return True


def _bin_dir() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if not found:
        pytest.fail("PostgreSQL is not installed: run `bash scripts/test-deps.sh` (it installs Debian's postgresql)")
    return found[-1].parent


def _run_as() -> dict[str, Any]:
    """subprocess arguments that drop root to the `postgres` user; nothing when not root."""
    if os.geteuid() != 0:
        return {}
    account = pwd.getpwnam("postgres")
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}


def _accepts_connections(server: Postgres, process: subprocess.Popen[bytes], log: Path) -> bool:
    if process.poll() is not None:
        raise AssertionError(f"postgres exited with {process.returncode}:\n{log.read_text(errors='replace')[-2000:]}")
    try:
        with server.connect():
            return True
    except psycopg.OperationalError:
        return False


@pytest.fixture(scope="session", name="postgres")
def postgres_server() -> Iterator[Postgres]:
    with running_postgres() as server:
        yield server


@contextlib.contextmanager
def running_postgres() -> Iterator[Postgres]:
    """The server of `postgres_server`, for a caller outside pytest (bench.cdc): started on entry, stopped
    and its directory removed on exit."""
    bin_dir = _bin_dir()
    as_postgres = _run_as()
    base = Path(tempfile.mkdtemp(prefix="sparklink-test-postgres-"))
    data, log, pwfile = base / "data", base / "server.log", base / "pwfile"
    pwfile.write_text(PASSWORD + "\n")
    if as_postgres:
        os.chown(base, as_postgres["user"], as_postgres["group"])
        os.chown(pwfile, as_postgres["user"], as_postgres["group"])
    process: subprocess.Popen[bytes] | None = None
    try:
        subprocess.run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                USER,
                f"--pwfile={pwfile}",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--encoding=UTF8",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
            **as_postgres,
        )
        server = Postgres("127.0.0.1", ports.free_port())
        # Settings for a disposable test server: no durability work, little memory.
        args = [
            str(bin_dir / "postgres"),
            "-D",
            str(data),
            "-p",
            str(server.port),
            "-k",
            str(base),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
            "-c",
            "shared_buffers=32MB",
            "-c",
            "max_connections=50",
            # Logical decoding, for Debezium's change data capture (pgoutput, a replication slot each).
            "-c",
            "wal_level=logical",
            "-c",
            "max_replication_slots=8",
            "-c",
            "max_wal_senders=8",
        ]
        with log.open("wb") as out:
            process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, **as_postgres)
        wait_for(lambda: _accepts_connections(server, process, log), 60, "postgres to accept connections")
        yield server
    finally:
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)  # fast shutdown: abort sessions, then stop
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        with contextlib.suppress(OSError):
            shutil.rmtree(base)
