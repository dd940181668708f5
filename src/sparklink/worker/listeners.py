"""The REST listeners as Connect reads them: `listeners`, `admin.listeners`, and the URL a worker advertises.

Connect's `RestServer` takes a comma list of `protocol://host:port` URIs (http or https, an empty host
binding every interface, an IPv6 host in brackets), and gives other workers the URL of the first listener
of the advertised protocol: `rest.advertised.listener` when set, else http when any listener is http,
else https; with `rest.advertised.host.name` / `rest.advertised.port` over the listener's own. The
worker id in statuses is that URL's `host:port`. Callers: `WorkerConfig` (worker id, advertised URL) and
the REST server (which binds each listener).
"""

from __future__ import annotations

import functools
import ipaddress
import re
import socket
from dataclasses import dataclass

HTTP, HTTPS = "http", "https"
# RestServer.LISTENER_PATTERN
PATTERN = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


class ListenerError(ValueError):
    """A listener URI Connect would refuse; the message is Connect's, with the value it was given."""


@dataclass(frozen=True)
class Listener:
    """One `protocol://host:port`; an empty host binds every interface, port 0 a free port."""

    protocol: str
    host: str
    port: int
    admin: bool = False

    @property
    def uri(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.protocol}://{host}:{self.port}"

    @property
    def loopback(self) -> bool:
        """True when only this machine can reach it (an empty host binds every interface)."""
        return is_loopback(self.host)

    def with_port(self, port: int) -> Listener:
        return Listener(self.protocol, self.host, port, self.admin)


def parse(value: str, setting: str = "listeners", admin: bool = False) -> list[Listener]:
    """Each comma-separated URI of `value`, checked as Connect checks it."""
    items = [item.strip() for item in value.split(",")]
    if setting == "listeners" and not any(items):
        raise ListenerError(
            "Invalid value for listeners, at least one URL is expected, ex: http://localhost:8080,https://localhost:8443."
        )
    out: list[Listener] = []
    for item in items:
        if not item:
            raise ListenerError(f"Empty URL found when parsing {setting} list.")
        match = PATTERN.match(item)
        if match is None or match.end() != len(item):
            raise ListenerError(
                f"Listener {item!r} in {setting} doesn't have the right format (protocol://hostname:port)."
            )
        protocol = match.group(1).lower()
        if protocol not in (HTTP, HTTPS):
            raise ListenerError(f'Listener {item!r} in {setting}: listener protocol must be either "http" or "https".')
        port = int(match.group(3))
        if not 0 <= port <= 65535:
            raise ListenerError(f"Listener {item!r} in {setting}: the port must be between 0 and 65535.")
        out.append(Listener(protocol, match.group(2), port, admin))
    return out


def parse_admin(value: str | None) -> list[Listener] | None:
    """`admin.listeners`: None keeps /admin on the regular listeners, an empty list turns it off."""
    if value is None:
        return None
    if not value.strip():
        return []
    return parse(value, "admin.listeners", admin=True)


def advertised_protocol(listeners: list[Listener], advertised_listener: str | None) -> str:
    """RestServer.determineAdvertisedProtocol: the setting, else http if any listener is, else https."""
    if advertised_listener:
        return advertised_listener.lower()
    protocols = {listener.protocol for listener in listeners}
    return HTTPS if protocols == {HTTPS} else HTTP


def advertised_url(
    listeners: list[Listener],
    advertised_listener: str | None,
    advertised_host: str | None,
    advertised_port: int | None,
) -> str:
    """The URL other workers use to reach this one (RestServer.advertisedUrl)."""
    protocol = advertised_protocol(listeners, advertised_listener)
    chosen = next((listener for listener in listeners if listener.protocol == protocol), None)
    if chosen is None:
        raise ListenerError(
            f"rest.advertised.listener is {protocol} but listeners has no {protocol} listener "
            f"({', '.join(listener.uri for listener in listeners)}); add one or change rest.advertised.listener"
        )
    host = advertised_host or chosen.host or local_address()
    port = advertised_port if advertised_port is not None else chosen.port
    return f"{protocol}://{f'[{host}]' if ':' in host else host}:{port}"


def is_loopback(host: str) -> bool:
    """A loopback address or name; an empty host (every interface) is not."""
    name = host.strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@functools.cache
def local_address() -> str:
    """This machine's address, as Jetty names a listener bound to every interface (InetAddress.getLocalHost)."""
    name = socket.gethostname()
    try:
        return socket.gethostbyname(name)
    except OSError:
        return name
