"""Basic authentication as Connect's BasicAuthSecurityRestExtension does it, for every request.

`rest.extension.classes` names the extension; its JAAS `KafkaConnect` entry lists PropertyFileLoginModule
lines whose `file` is a Java properties file of `user=password`. A request whose `Authorization: Basic`
credentials do not log in is answered as JaasBasicAuthFilter answers it: 401 with the text "User cannot
access the resource." (as text, though Connect labels it application/json) and no WWW-Authenticate
header, exactly what Connect 4.3.1 sends. Differences from Connect, each safer:
- an empty credentials file is refused at start (Connect lets every request through);
- a malformed header is a 401 (Connect answers a bad Base64 value with 500);
- every path is checked, unknown ones too (Connect's filter runs after routing, so an unknown path is a 404
  without credentials), and so is the admin listener (Connect registers extensions on the main one only);
- Connect's filter lets every request to its internal endpoints through (`POST /connectors/{c}/tasks`,
  `PUT /connectors/{c}/fence`), leaving them to the herder's KIP-507 signature check; sparklink lets
  through only those that carry both signature headers (the herder then verifies the signature: 403 for a
  bad one), so an unsigned internal request needs credentials like any other (401 without). sparklink
  has no fence endpoint (no exactly-once source support), so only the task-config POST is exempt.
Passwords are compared in constant time over their SHA-256 digests (so neither a length nor a user name
leaks through timing) and never logged. Caller: settings.py builds it; app.py stacks the middleware.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import javaproperties
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from sparklink.worker.request_signing import ALGORITHM_HEADER, SIGNATURE_HEADER
from sparklink.worker.rest.security import jaas
from sparklink.worker.rest.security.exceptions import RestSecurityError

log = logging.getLogger(__name__)

EXTENSION = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
PROPERTY_FILE_MODULE = "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"
ENTRY = "KafkaConnect"
UNAUTHORIZED = "User cannot access the resource."
_NO_USER = hashlib.sha256(b"\x00no such user").digest()
INTERNAL_TASKS = re.compile(r"/?connectors/([^/]+)/tasks/?")  # Connect's pattern, on the decoded path


@dataclass(frozen=True)
class PropertyFile:
    """One PropertyFileLoginModule: the SHA-256 of each user's password."""

    flag: str
    digests: Mapping[str, bytes]

    def login(self, user: str, password: str) -> bool:
        expected = self.digests.get(user)
        given = hashlib.sha256(password.encode("utf-8")).digest()
        # Compare against a stand-in for an unknown user, so both paths take the same time.
        same = hmac.compare_digest(given, expected if expected is not None else _NO_USER)
        return same and expected is not None


@dataclass(frozen=True)
class Authenticator:
    """The `KafkaConnect` entry's modules, combined by their JAAS control flags."""

    modules: tuple[PropertyFile, ...]

    def authenticate(self, authorization: str | None) -> bool:
        credentials = parse_header(authorization)
        if credentials is None:
            return False
        return _combine((m.flag, m.login(*credentials)) for m in self.modules)


def _combine(results: Iterable[tuple[str, bool]]) -> bool:
    """JAAS LoginContext: requisite fails at once, sufficient succeeds at once unless a required one failed."""
    required_failed, any_passed, any_required = False, False, False
    for flag, passed in results:
        any_passed |= passed
        if flag in ("required", "requisite"):
            any_required = True
            if not passed:
                if flag == "requisite":
                    return False
                required_failed = True
        elif flag == "sufficient" and passed and not required_failed:
            return True
    return not required_failed and (any_required or any_passed)


def parse_header(authorization: str | None) -> tuple[str, str] | None:
    """(user, password) from `Basic <base64 user:password>`, as JaasBasicAuthFilter.BasicAuthCredentials reads it."""
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if not scheme or not value or scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError):
        return None
    user, colon, password = decoded.partition(":")
    return (user, password) if colon and user else None


def from_settings(extension_classes: str, jaas_setting: str | None, environ: Mapping[str, str]) -> Authenticator | None:
    """The authenticator `rest.extension.classes` asks for, or None; RestSecurityError on anything else."""
    classes = [c.strip() for c in extension_classes.split(",") if c.strip()]
    others = [c for c in classes if c != EXTENSION]
    if others:
        raise RestSecurityError(
            f"rest.extension.classes names {', '.join(others)}: sparklink runs no Java REST extensions. The one it "
            f"provides is {EXTENSION} (basic authentication through JAAS); remove the others"
        )
    if not classes:
        return None
    located = jaas.login_config(jaas_setting, environ)
    if located is None:
        raise RestSecurityError(
            f"{EXTENSION} needs a JAAS file with a {ENTRY} entry: pass -D{jaas.PROPERTY}=<file> in KAFKA_OPTS "
            f"(as Connect's scripts do) or set {jaas.PROPERTY}=<file> in the worker properties"
        )
    path, where = located
    entries = jaas.read(path)
    modules = entries.get(ENTRY)
    if not modules:
        raise RestSecurityError(f"The JAAS file {path} (from {where}) has no {ENTRY} entry with a login module")
    loaded = tuple(_property_file(module, path) for module in modules)
    log.info("REST basic authentication: %d login module(s) of %s in %s", len(loaded), ENTRY, path)
    return Authenticator(loaded)


def _property_file(module: jaas.LoginModule, jaas_path: Path) -> PropertyFile:
    if module.class_name != PROPERTY_FILE_MODULE:
        raise RestSecurityError(
            f"The {ENTRY} entry of {jaas_path} uses {module.class_name}: sparklink runs no Java login modules; "
            f'use {PROPERTY_FILE_MODULE} with file="<user=password properties file>"'
        )
    file = module.options.get("file", "").strip()
    if not file:
        raise RestSecurityError(f"{PROPERTY_FILE_MODULE} in {jaas_path}: Property Credentials file must be specified")
    try:
        with open(file, encoding="latin-1") as stream:  # java.util.Properties.load(InputStream) reads ISO-8859-1
            users = javaproperties.load(stream)
    except OSError as exc:
        raise RestSecurityError(f"Error loading Property Credentials file {file}: {exc.strerror}") from None
    if not users:
        raise RestSecurityError(
            f"The credentials file {file} (named in {jaas_path}) has no user: Connect would let every request "
            "through; add user=password lines"
        )
    digests = {user: hashlib.sha256(password.encode("utf-8")).digest() for user, password in users.items()}
    return PropertyFile(module.flag, digests)


class RequireBasicAuth:
    """ASGI: a request that does not log in gets Connect's 401; others pass on unchanged."""

    def __init__(self, app: ASGIApp, authenticator: Authenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if signed_internal(scope["method"], scope["path"], headers) or self.authenticator.authenticate(
            headers.get("authorization")
        ):
            await self.app(scope, receive, send)
            return
        await unauthorized()(scope, receive, send)


def signed_internal(method: str, path: str, headers: Headers) -> bool:
    """A request to the internal task-config endpoint that carries a signature (JaasBasicAuthFilter's matcher)."""
    if method != "POST" or INTERNAL_TASKS.fullmatch(path) is None:
        return False
    return SIGNATURE_HEADER in headers and ALGORITHM_HEADER in headers


def unauthorized() -> Response:
    return Response(UNAUTHORIZED, status_code=401, media_type="application/json")
