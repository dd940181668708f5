"""Private files for clients that read their TLS material from disk, and the JKS conversion.

librdkafka reads no JKS and kafka-python reads only PEM files, so some settings become files: each is
written once per process (named by a digest of what it holds), mode 0600, in one private temporary directory
(0700) that is removed when the process exits. JKS stores are converted with the JDK's `keytool`, passwords
handed over in the environment (`-storepass:env`), never on a command line another user could read.
Callers: `stores` (conversions) and the renderers in `librdkafka` and `kafka_python`.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

__all__ = ["KeytoolError", "jks_to_pkcs12", "private_dir", "private_file"]

_lock = threading.Lock()
_dir: Path | None = None


class KeytoolError(RuntimeError):
    """keytool is missing or refused the store; the message says what to run by hand."""


def private_dir() -> Path:
    """This process's directory for client key material (created 0700 on first use, removed at exit)."""
    global _dir
    with _lock:
        if _dir is None or not _dir.is_dir():
            _dir = Path(tempfile.mkdtemp(prefix="sparklink-clients-"))
            atexit.register(shutil.rmtree, _dir, True)
        return _dir


def private_file(data: bytes, suffix: str) -> Path:
    """A 0600 file holding `data` in the private directory; the same data gives the same file."""
    path = private_dir() / f"{hashlib.sha256(data).hexdigest()[:24]}{suffix}"
    if not path.exists():
        partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(partial, path)
    return path


def jks_to_pkcs12(source: Path, store_password: str, key_password: str | None, key: str) -> bytes:
    """The PKCS12 form of a JKS store (same store password), converted by keytool. `key` names the setting
    that pointed at the store, for the message when keytool is missing or fails."""
    keytool = shutil.which("keytool") or _java_home_keytool()
    target = private_dir() / f".convert-{os.getpid()}-{threading.get_ident()}.p12"
    by_hand = (
        f"keytool -importkeystore -srckeystore {source} -srcstoretype JKS -destkeystore {source.with_suffix('.p12')} "
        f"-deststoretype PKCS12, then set {key.rsplit('.', 1)[0]}.type=PKCS12 and {key} to the .p12 file"
    )
    if keytool is None:
        raise KeytoolError(
            f"{key} names a JKS store, which this client (librdkafka or kafka-python) cannot read, and no JDK "
            f"keytool is on PATH to convert it. Convert it once: {by_hand}"
        )
    env = {**os.environ, "SPARKLINK_SRC_PASS": store_password, "SPARKLINK_DEST_PASS": store_password}
    cmd = [
        keytool,
        "-importkeystore",
        "-noprompt",
        "-srckeystore",
        str(source),
        "-srcstoretype",
        "JKS",
        "-srcstorepass:env",
        "SPARKLINK_SRC_PASS",
        "-destkeystore",
        str(target),
        "-deststoretype",
        "PKCS12",
        "-deststorepass:env",
        "SPARKLINK_DEST_PASS",
    ]
    if key_password and key_password != store_password:
        env["SPARKLINK_SRC_KEY_PASS"] = key_password
        cmd += ["-srckeypass:env", "SPARKLINK_SRC_KEY_PASS", "-destkeypass:env", "SPARKLINK_DEST_PASS"]
    target.unlink(missing_ok=True)
    try:
        result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=False)
        if result.returncode != 0:
            # keytool's own words (e.g. "keystore password was incorrect"); it never prints the passwords.
            reason = (result.stdout + result.stderr).strip().splitlines()
            raise KeytoolError(
                f"keytool could not convert the JKS store named by {key} ({reason[-1] if reason else 'no output'}); "
                f"check the store's password settings, or convert it yourself: {by_hand}"
            )
        return target.read_bytes()
    finally:
        target.unlink(missing_ok=True)


def _java_home_keytool() -> str | None:
    home = os.environ.get("JAVA_HOME")
    candidate = Path(home) / "bin" / "keytool" if home else None
    return str(candidate) if candidate and candidate.exists() else None
