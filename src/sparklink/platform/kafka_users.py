"""The users of a secured local cluster and the client settings each listener gives them.

Passwords live in `<state>/users.json` (0600): SCRAM credentials are created from them when storage is
formatted (`--add-scram`) or later through the Admin API (AlterUserScramCredentials), PLAIN users are
listed in the PLAIN listeners' JAAS; each user also gets a client certificate from the clients CA for
mutual-TLS listeners. `client_properties` writes what a client of one listener needs, in Connect's (Java)
names. Caller: `kafka.KafkaCluster`.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping
from pathlib import Path

from sparklink.platform import ca
from sparklink.platform.kafka_listeners import Listener

__all__ = ["DEFAULT_USER", "PLATFORM_CLIENT", "UserStore", "client_properties", "properties_text"]

DEFAULT_USER = "sparklink"
PLATFORM_CLIENT = "sparklink-platform"  # the platform's own client certificate (readiness, quorum)
_USER = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


class UserStore:
    """name -> password, in a 0600 JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, str]:
        if not self.path.exists():
            return {}
        data = json.loads(self.path.read_text())
        return {str(k): str(v) for k, v in data.items()}

    def add(self, name: str, password: str | None = None) -> str:
        """Record a user (a random password unless given); returns the password."""
        check_user(name, password)
        users = self.load()
        users[name] = password or users.get(name) or secrets.token_urlsafe(18)
        ca.write_private(self.path, json.dumps(users, indent=2, sort_keys=True).encode())
        return users[name]


def check_user(name: str, password: str | None) -> None:
    if not _USER.match(name) or name == PLATFORM_CLIENT:
        raise ValueError(f"user name {name!r}: use 1-64 letters, digits, '.', '_' or '-' (not {PLATFORM_CLIENT})")
    # The storage tool splits --add-scram on ',' and '=' and the JAAS text quotes with '"'.
    if password is not None and (not password or re.search(r'[,=\[\]"\\\s]', password)):
        raise ValueError(f"the password of {name!r} must be non-empty, without spaces, quotes, ',', '=', '[', ']'")


def client_properties(
    listener: Listener,
    bootstrap: str,
    cluster_ca: Path,
    keystore: Path | None,
    user: str,
    password: str | None,
    mechanism: str | None = None,
) -> dict[str, str]:
    """Java client properties for `user` on `listener`: TLS trust (the cluster CA signs the brokers'
    certificates), the user's key store on mutual TLS, the JAAS login on SASL (`mechanism`: one the
    listener enables, its first by default)."""
    props = {"bootstrap.servers": bootstrap, "security.protocol": listener.security_protocol}
    if listener.tls:
        props["ssl.truststore.type"] = "PEM"
        props["ssl.truststore.location"] = str(cluster_ca)
    if listener.mutual_tls and keystore is not None:
        props["ssl.keystore.type"] = "PEM"
        props["ssl.keystore.location"] = str(keystore)
    if listener.sasl_mechanisms:
        chosen = (mechanism or listener.sasl_mechanisms[0]).upper()
        if chosen not in listener.sasl_mechanisms:
            raise ValueError(f"listener {listener.name!r} enables {', '.join(listener.sasl_mechanisms)}, not {chosen}")
        if password is None:
            raise ValueError(f"user {user!r} has no password on this cluster")
        props["sasl.mechanism"] = chosen
        props["sasl.jaas.config"] = f'{_LOGIN_MODULES[chosen]} required username="{user}" password="{password}";'
    return props


def properties_text(props: Mapping[str, str]) -> str:
    """A Java properties file's text: `key=value` lines, backslashes and line breaks escaped (java.util.
    Properties reads the rest of a line after the first `=` literally)."""
    lines = []
    for key, value in props.items():
        text = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        lead = "\\" if text[:1].isspace() else ""  # a leading blank would be skipped unescaped
        lines.append(f"{key}={lead}{text}\n")
    return "".join(lines)
