"""Everything the REST server needs to serve securely, read from the worker's settings once, at start.

`RestSecurity.of(config)` parses the listeners, builds the TLS context of each https listener and the one
for requests to other workers (`PeerTls`), loads the basic-auth credentials and the CORS rules, and
decides whether the Host check applies (every listener on loopback). Whatever it cannot serve with
raises RestSecurityError at start, naming the setting: the worker never comes up half-secured. What it
logs names files and modes, never a secret.
Callers: assembly.start_worker (through rest/server.py) and app.create_app.
"""

from __future__ import annotations

import logging
import os
import re
import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from sparklink.worker import listeners as rest_listeners
from sparklink.worker.config import WorkerConfig
from sparklink.worker.rest.security import basic_auth, tls
from sparklink.worker.rest.security.exceptions import RestSecurityError

log = logging.getLogger(__name__)

# Jetty's CrossOriginFilter defaults, which Connect keeps for what it does not set.
CORS_METHODS = "GET,POST,HEAD"
CORS_HEADERS = ("X-Requested-With", "Content-Type", "Accept", "Origin")
CORS_MAX_AGE = 1800


@dataclass(frozen=True)
class Cors:
    """`access.control.allow.origin` / `.methods`, as Jetty's CrossOriginFilter reads them."""

    origins: tuple[str, ...]
    methods: tuple[str, ...]

    @property
    def origin_regex(self) -> str | None:
        """Jetty allows `*` inside an origin (`https://*.example.com`); a regex then matches them all."""
        if "*" in self.origins or not any("*" in o for o in self.origins):
            return None
        return "|".join(".*".join(re.escape(part) for part in o.split("*")) for o in self.origins)


class PeerTls:
    """The TLS context for https requests to the other workers of a group (forwarded requests, internal
    ones), from the main listener's settings as Connect's RestClient reads them (tls.client_context)."""

    def __init__(self, settings: Mapping[str, str]) -> None:
        self._settings = dict(settings)
        self._context: ssl.SSLContext | None = None
        self._lock = threading.Lock()

    def context(self) -> ssl.SSLContext:
        """Built once; RestSecurityError names a setting it cannot use."""
        with self._lock:
            if self._context is None:
                self._context = tls.client_context(self._settings)
            return self._context


@dataclass(frozen=True)
class RestSecurity:
    """The listeners to bind, how each is secured, and the guards of the app."""

    listeners: tuple[rest_listeners.Listener, ...]
    admin_listeners: tuple[rest_listeners.Listener, ...] | None
    listener_tls: tls.ListenerTls | None = None
    admin_tls: tls.ListenerTls | None = None
    authenticator: basic_auth.Authenticator | None = None
    cors: Cors | None = None
    # None: no Host check (some listener is reachable from other machines); else extra names to accept
    loopback_hosts: frozenset[str] | None = None
    peer_tls: PeerTls = field(default_factory=lambda: PeerTls({}))

    @property
    def all_listeners(self) -> tuple[rest_listeners.Listener, ...]:
        return self.listeners + (self.admin_listeners or ())

    def tls_for(self, listener: rest_listeners.Listener) -> tls.ListenerTls | None:
        if listener.protocol != rest_listeners.HTTPS:
            return None
        return self.admin_tls if listener.admin else self.listener_tls

    @classmethod
    def of(cls, config: WorkerConfig, environ: Mapping[str, str] | None = None) -> RestSecurity:
        environ = os.environ if environ is None else environ
        try:
            main = tuple(config.rest_listeners)
            admin_list = config.admin_rest_listeners
        except rest_listeners.ListenerError as exc:
            raise RestSecurityError(str(exc)) from None
        admin = tuple(admin_list) if admin_list is not None else None
        settings = {k: str(v) for k, v in (config.model_extra or {}).items()}
        everywhere = main + (admin or ())
        listener_tls = admin_tls = None
        if any(x.protocol == rest_listeners.HTTPS for x in main):
            listener_tls = tls.server_context(settings, tls.LISTENER_PREFIX)
            log.info("REST https listener: %s", listener_tls.description)
        if any(x.protocol == rest_listeners.HTTPS for x in admin or ()):
            admin_tls = tls.server_context(settings, tls.ADMIN_PREFIX)
            log.info("REST https admin listener: %s", admin_tls.description)
        authenticator = basic_auth.from_settings(config.rest_extension_classes, config.jaas_login_config, environ)
        origins = tuple(o.strip() for o in config.access_control_allow_origin.split(",") if o.strip())
        methods = config.access_control_allow_methods.strip() or CORS_METHODS
        cors = Cors(origins, tuple(m.strip().upper() for m in methods.split(",") if m.strip())) if origins else None
        peer_tls = PeerTls(settings)
        if config.mode == "distributed" and rest_listeners.HTTPS in {x.protocol for x in main} | {
            urlsplit(config.advertised_url).scheme
        }:
            # A group on https: check now that this worker can reach the others, not at its first forward.
            peer_tls.context()
            log.info("REST requests to other workers: https, with the settings of the https listener")
        loopback = all(x.loopback for x in everywhere)
        extra = {x.host.lower() for x in everywhere}
        if config.advertised_host:
            extra.add(config.advertised_host.lower())
        hosts = frozenset(extra) if loopback else None
        return cls(main, admin, listener_tls, admin_tls, authenticator, cors, hosts, peer_tls)
