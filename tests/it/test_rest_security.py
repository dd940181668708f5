"""The worker's REST transport security as Connect offers it (issue 28, part 1), on real workers.

Two workers share the module's Kafka and Spark:
- `secured`: https with `ssl.client.auth=required` (a PKCS12 key store, a PEM trust store), an https admin
  listener (a PEM key store given as text, its key encrypted), and basic authentication through
  BasicAuthSecurityRestExtension with a JAAS file named in KAFKA_OPTS, as Connect's scripts pass it;
- `plain`: http on loopback, as the default is, where the Host check, JSON-only bodies and the body limit
  stand alone (no credentials to hide behind).
Each runs a canary datagen connector that must keep running through everything the tests send.
"""

from __future__ import annotations

import datetime as dt
import http.server
import json
import logging
import select
import socket
import ssl
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12
from starlette.routing import BaseRoute, Route

from sparklink.platform import ca
from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.assembly import RunningWorker, start_worker
from sparklink.worker.config import WorkerConfig
from sparklink.worker.rest.security.settings import RestSecurity
from sparklink.worker.rest.server import RestServer
from tests.conftest import worker_props
from tests.helpers import unique
from tests.support import canary

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

EXTENSION = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
LOGIN_MODULE = "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"
USER = "alice"
# Random, so finding one in a log can only mean it leaked there.
PASSWORD = f"pw-{uuid.uuid4().hex}"
STORE_PASSWORD = f"store-{uuid.uuid4().hex}"
KEY_PASSWORD = f"key-{uuid.uuid4().hex}"
UNAUTHORIZED = b"User cannot access the resource."
CHALLENGE = 'Basic realm="Kafka Connect", charset="UTF-8"'


@dataclass(frozen=True)
class Pki:
    """The worker's CA and client certificates: a good one, one from another CA, an expired one."""

    directory: Path

    def path(self, name: str) -> str:
        return str(self.directory / name)

    def client_context(self, client: str | None = "alice") -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.path("ca.pem"))
        if client is not None:
            context.load_cert_chain(self.path(f"{client}.pem"), self.path(f"{client}.key"))
        return context


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    root = ca.new_ca("sparklink-rest-ca", key_type=ca.KeyType.EC)
    (directory / "ca.pem").write_bytes(root.cert_pem)
    server = ca.issue(root, "worker", hosts=["127.0.0.1", "localhost"], server=True)
    key = serialization.load_pem_private_key(server.key_pem, None)
    # The main listener's key store: PKCS12, as keytool makes it.
    store = pkcs12.serialize_key_and_certificates(
        b"worker",
        key,
        server.certificate,
        [root.certificate],
        serialization.BestAvailableEncryption(STORE_PASSWORD.encode()),
    )
    (directory / "worker.p12").write_bytes(store)
    # The admin listener's: PEM text with an encrypted key (ssl.keystore.key + ssl.key.password).
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(KEY_PASSWORD.encode()),
    )
    (directory / "admin-key.pem").write_bytes(encrypted)
    (directory / "admin-chain.pem").write_bytes(server.cert_pem)
    ca.issue(root, USER, client=True).write(directory / "alice.pem", directory / "alice.key")
    other = ca.new_ca("another-ca", key_type=ca.KeyType.EC)
    ca.issue(other, USER, client=True).write(directory / "stranger.pem", directory / "stranger.key")
    long_ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=30)
    expired = ca.issue(root, USER, client=True, validity_days=1, now=long_ago)
    expired.write(directory / "expired.pem", directory / "expired.key")
    return Pki(directory)


class Captured(logging.Handler):
    """Every log record of the worker's start, formatted, to look for secrets in."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(logging.Formatter().format(record))


@dataclass
class Secured:
    worker: RunningWorker
    main: str
    admin: str
    pki: Pki
    log: list[str]

    def client(self, auth: tuple[str, str] | None = (USER, PASSWORD), cert: str | None = "alice") -> httpx.Client:
        return httpx.Client(verify=self.pki.client_context(cert), auth=auth, timeout=60)


def https_listener(pki: Pki) -> dict[str, str]:
    """The main listener's settings: https on a free port, the worker's PKCS12 key store, client certificates
    from the test CA required."""
    return {
        "listeners": "https://127.0.0.1:0",
        "listeners.https.ssl.keystore.type": "PKCS12",
        "listeners.https.ssl.keystore.location": pki.path("worker.p12"),
        "listeners.https.ssl.keystore.password": STORE_PASSWORD,
        "listeners.https.ssl.truststore.type": "PEM",
        "listeners.https.ssl.truststore.location": pki.path("ca.pem"),
        "listeners.https.ssl.client.auth": "required",
    }


@pytest.fixture(scope="module")
def secured(kafka: KafkaCluster, spark: Any, pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    state = tmp_path_factory.mktemp("secured")
    (state / "credentials.properties").write_text(f"# Connect's format: user=password\n{USER}={PASSWORD}\nbob=other\n")
    jaas = state / "connect_jaas.conf"
    jaas.write_text(
        "// the entry BasicAuthSecurityRestExtension reads\n"
        f'KafkaConnect {{\n  {LOGIN_MODULE} required\n  file="{state / "credentials.properties"}";\n}};\n'
    )
    group = unique("secured")
    props = worker_props(kafka, group, state / "worker")
    props.pop("rest.port")
    props.update(
        {
            **https_listener(pki),
            "admin.listeners": "https://127.0.0.1:0",
            "admin.listeners.https.ssl.keystore.type": "PEM",
            "admin.listeners.https.ssl.keystore.key": Path(pki.path("admin-key.pem")).read_text(),
            "admin.listeners.https.ssl.key.password": KEY_PASSWORD,
            "admin.listeners.https.ssl.keystore.certificate.chain": Path(pki.path("admin-chain.pem")).read_text(),
            "rest.extension.classes": EXTENSION,
        }
    )
    captured = Captured()
    root = logging.getLogger()
    level = root.level
    root.addHandler(captured)
    root.setLevel(logging.DEBUG)
    try:
        environ = {"KAFKA_OPTS": f"-Xmx512m -Djava.security.auth.login.config={jaas}"}
        worker = start_worker(WorkerConfig.model_validate(props), spark=spark, environ=environ)
    finally:
        root.removeHandler(captured)
        root.setLevel(level)
    main = next(listener.uri for listener in worker.rest.listeners if not listener.admin)
    admin = next(listener.uri for listener in worker.rest.listeners if listener.admin)
    secured = Secured(worker, main, admin, pki, captured.lines)
    with secured.client() as client:
        canary.start(worker, client)
        yield secured
        client.delete(f"{worker.url}/connectors/{canary.CANARY}")
    worker.stop()


@pytest.fixture(scope="module")
def plain(kafka: KafkaCluster, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningWorker]:
    group = unique("plain")
    props = worker_props(kafka, group, tmp_path_factory.mktemp(group))
    props.pop("rest.port")
    props["listeners"] = "http://127.0.0.1:0"
    # A session of its own (same SparkContext): query names are per session, and both workers run a canary.
    worker = start_worker(WorkerConfig.model_validate(props), spark=spark.newSession(), environ={})
    canary.start(worker)
    yield worker
    httpx.delete(f"{worker.url}/connectors/{canary.CANARY}", timeout=60)
    worker.stop()


def connector_names(url: str, client: httpx.Client | None = None) -> list[str]:
    names: list[str] = (client.get if client else httpx.get)(f"{url}/connectors", timeout=30).json()
    return names


# ---------------------------------------------------------------------- https and client certificates
@pytest.mark.parametrize("client", [None, "stranger", "expired"], ids=["no-certificate", "another-ca", "expired"])
def test_https_with_required_client_auth_refuses_a_client_without_a_good_certificate(
    secured: Secured, client: str | None
) -> None:
    # The handshake fails on the worker's side and the connection closes with no HTTP answer (the event
    # loop sends no TLS alert, so the client cannot read why; tests/unit/test_rest_security.py checks the
    # reason of each refusal on the TLS context itself). The same request with a good certificate answers.
    with secured.client() as good:
        assert good.get(f"{secured.main}/connectors").status_code == 200
    with pytest.raises(httpx.RemoteProtocolError), secured.client(cert=client) as http:
        http.get(f"{secured.main}/connectors")
    curl = ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", secured.pki.path("ca.pem")]
    curl += ["-u", f"{USER}:{PASSWORD}"]
    if client is not None:
        curl += ["--cert", secured.pki.path(f"{client}.pem"), "--key", secured.pki.path(f"{client}.key")]
    answer = subprocess.run([*curl, f"{secured.main}/connectors"], capture_output=True, text=True, timeout=60)
    assert answer.returncode != 0 and answer.stdout == "000", (answer.returncode, answer.stdout, answer.stderr)
    canary.unharmed(secured.worker, secured.client())


def test_curl_and_a_connect_client_library_work_over_https_with_a_client_certificate(
    secured: Secured, monkeypatch: pytest.MonkeyPatch
) -> None:
    pki = secured.pki
    curl = [
        "curl",
        "-sS",
        "--fail-with-body",
        "--cacert",
        pki.path("ca.pem"),
        "--cert",
        pki.path("alice.pem"),
        "--key",
        pki.path("alice.key"),
        "-u",
        f"{USER}:{PASSWORD}",
        f"{secured.main}/connectors",
    ]
    answer = subprocess.run(curl, capture_output=True, text=True, timeout=60)
    assert answer.returncode == 0 and canary.CANARY in answer.stdout, answer.stderr

    # kafka-connect-api (requests underneath): its Api takes the user and password; requests finds the CA
    # in REQUESTS_CA_BUNDLE and takes the client certificate as `cert`.
    from kafka_connect_api.kafka_connect_api import Api

    monkeypatch.setenv("REQUESTS_CA_BUNDLE", pki.path("ca.pem"))
    api = Api(url=secured.main, username=USER, password=PASSWORD)
    cert = (pki.path("alice.pem"), pki.path("alice.key"))
    name = unique("via-library")
    config = {"connector.class": "datagen", "topic": unique("lib"), "records.per.second": "1"}
    created = api.post_raw("/connectors", json={"name": name, "config": config}, cert=cert)
    assert created.status_code == 201 and created.json()["name"] == name
    assert name in api.get_raw("/connectors", cert=cert).json()
    assert api.delete_raw(f"/connectors/{name}", cert=cert).status_code == 204


def test_a_stopping_https_server_does_not_wait_for_an_idle_client_connection(pki: Pki) -> None:
    """A client keeps its keep-alive connection open and idle in its pool. uvicorn waits for every connection
    to close, and a TLS connection closes only when the client answers the close, which an idle client never
    does: the server's thread must end within stop() all the same (it did not, and stop() gave up after 15 s)."""
    props = {
        "bootstrap.servers": "127.0.0.1:9",
        "group.id": unique("stopping"),
        **https_listener(pki),
    }
    server = RestServer(RestSecurity.of(WorkerConfig.model_validate(props), {}))
    server.start(timeout=30)
    try:
        with httpx.Client(verify=pki.client_context("alice"), timeout=30) as client:
            answer = client.get(f"{server.urls[0]}/no-such-page")  # any answer leaves the connection idle
            assert answer.status_code == 404 and answer.headers.get("connection") != "close"
            server.stop()
            assert not server.alive, "the REST server still runs after stop() while a client holds a connection"
    finally:
        server.stop()


def test_the_worker_advertises_its_https_listener(secured: Secured) -> None:
    netloc = urlsplit(secured.main).netloc
    assert secured.worker.url == secured.main and secured.worker.herder.worker_id == netloc
    with secured.client() as client:
        status = client.get(f"{secured.main}/connectors/{canary.CANARY}/status").json()
    assert status["connector"]["worker_id"] == netloc


# ---------------------------------------------------------------------- basic authentication
def app_routes(routes: list[BaseRoute]) -> Iterator[Route]:
    """Every route, through the routers FastAPI includes (each stands for its router's routes)."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from app_routes(included.routes)
        elif isinstance(route, Route):
            yield route


def routes(secured: Secured) -> list[tuple[str, str, bool]]:
    """(method, path with real values, is admin) for every route of the app, fast reads included."""
    values = {"{name}": canary.CANARY, "{task}": "0", "{plugin}": "datagen"}
    out = []
    for route in app_routes(secured.worker.rest.app.routes):
        path = route.path.replace("/admin/loggers/{name}", "/admin/loggers/root")
        for placeholder, value in values.items():
            path = path.replace(placeholder, value)
        out.extend((method, path, path.startswith("/admin")) for method in sorted((route.methods or set()) - {"HEAD"}))
    return out


def test_basic_auth_guards_every_route_on_both_listeners(secured: Secured) -> None:
    table = routes(secured)
    assert {("GET", f"/connectors/{canary.CANARY}/status", False), ("PUT", "/admin/loggers/root", True)} <= set(table)
    absent = unique("absent")  # writes go to a connector that does not exist, so they change nothing
    with (
        secured.client(auth=None) as anonymous,
        secured.client(auth=(USER, "wrong")) as wrong,
        secured.client() as good,
    ):
        for method, path, admin in table:
            base = secured.admin if admin else secured.main
            target = path if method == "GET" else path.replace(canary.CANARY, absent)
            body = {} if method in ("POST", "PUT", "PATCH") else None
            for client in (anonymous, wrong):
                refused = client.request(method, f"{base}{target}", json=body)
                assert (refused.status_code, refused.content) == (401, UNAUTHORIZED), (method, target)
                assert refused.headers["content-type"] == "application/json"
                # Connect's API asks for nothing; the console's pages ask a browser for credentials.
                challenge = refused.headers.get("www-authenticate")
                assert challenge == (CHALLENGE if target.startswith("/ui") else None), (target, challenge)
            answer = good.request(method, f"{base}{target}", json=body)
            if method == "GET":
                assert answer.status_code == 200, (method, target, answer.text)
            else:  # the route itself answered: a success, or Connect's error body for the absent connector
                assert answer.status_code < 300 or answer.json()["error_code"] == answer.status_code, (
                    target,
                    answer.text,
                )
        assert absent not in connector_names(secured.main, good)
        canary.unharmed(secured.worker, good)


def test_admin_routes_are_served_on_the_admin_listener_only(secured: Secured) -> None:
    not_found = {"error_code": 404, "message": "HTTP 404 Not Found"}
    with secured.client() as client:
        assert client.get(f"{secured.main}/admin/loggers").json() == not_found
        assert client.get(f"{secured.admin}/connectors").json() == not_found
        assert client.get(f"{secured.admin}/admin/loggers").json()["root"]["level"]
    # The admin listener asks for no client certificate, only the credentials.
    with secured.client(cert=None) as client:
        assert client.get(f"{secured.admin}/admin/loggers/root").status_code == 200


def test_no_password_or_key_reaches_the_log(secured: Secured) -> None:
    text = "\n".join(secured.log)
    assert "REST https listener" in text and "basic authentication" in text  # the capture saw the start
    key_body = Path(secured.pki.path("admin-key.pem")).read_text().splitlines()[1]
    for secret in (PASSWORD, STORE_PASSWORD, KEY_PASSWORD, key_body):
        assert secret not in text
    assert STORE_PASSWORD not in repr(secured.worker.config) and KEY_PASSWORD not in repr(secured.worker.config)


# ---------------------------------------------------------------------- a browser on another origin
class _Page(http.server.BaseHTTPRequestHandler):
    html = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(self.html)

    def log_message(self, *args: object) -> None:
        pass


def test_a_page_on_another_origin_cannot_create_a_connector_with_a_text_plain_post(
    plain: RunningWorker, browser: Any
) -> None:
    name = unique("csrf")
    body = {"name": name, "config": {"connector.class": "datagen", "topic": unique("csrf"), "records.per.second": "1"}}
    # A fetch that needs no CORS preflight: text/plain, no custom header. The promise resolves only when an
    # answer came back, so "answered" shows the request reached the worker.
    _Page.html = f"""<!doctype html><script>
      window.outcome = fetch("{plain.url}/connectors", {{method: "POST", mode: "no-cors",
          headers: {{"Content-Type": "text/plain"}}, body: {json.dumps(json.dumps(body))}}})
        .then(r => "answered " + r.type, e => "failed " + e);
    </script>""".encode()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/")
            assert page.evaluate("window.outcome") == "answered opaque"
        finally:
            context.close()
    finally:
        server.shutdown()
    assert name not in connector_names(plain.url)
    canary.unharmed(plain)


# ---------------------------------------------------------------------- JSON only, body limit, Host
@pytest.mark.parametrize(
    ("method", "content_type", "content"),
    [
        ("POST", "text/plain", b"{}"),
        ("POST", "application/x-www-form-urlencoded", b"{}"),
        ("POST", None, b"{}"),
        ("GET", "text/plain", b""),
    ],
    ids=["text-plain", "form", "no-content-type", "get-text-plain"],
)
def test_a_request_that_is_not_json_gets_connects_415(
    plain: RunningWorker, method: str, content_type: str | None, content: bytes
) -> None:
    name = unique("not-json")
    if content:
        content = f'{{"name": "{name}", "config": {{"connector.class": "datagen", "topic": "t"}}}}'.encode()
    headers = {"Content-Type": content_type} if content_type else {}
    answer = httpx.request(method, f"{plain.url}/connectors", content=content, headers=headers, timeout=30)
    assert answer.status_code == 415 and answer.json() == {
        "error_code": 415,
        "message": "HTTP 415 Unsupported Media Type",
    }
    assert name not in connector_names(plain.url)


def raw_request(url: str, head: str) -> socket.socket:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
    sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n")
    return sock


def read_answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    sock.setblocking(True)
    sock.settimeout(30)
    answer = b""
    try:
        while chunk := sock.recv(65536):
            answer += chunk
    except ConnectionResetError:
        pass
    sock.close()
    return answer


def test_a_declared_body_over_1_mib_is_refused_before_a_byte_of_it_is_sent(plain: RunningWorker) -> None:
    head = f"POST /connectors HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\nContent-Length: {64 << 20}\n"
    answer = read_answer(raw_request(plain.url, head))  # no body sent at all
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert b"Request body of 67108864 bytes is over the limit of 1048576 bytes" in answer


def test_a_streamed_body_over_1_mib_is_refused_as_it_arrives(plain: RunningWorker) -> None:
    total, chunk = 64 << 20, b"7" * 65536
    frame = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
    head = "POST /connectors HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\nTransfer-Encoding: chunked\n"
    sock = raw_request(plain.url, head)
    sock.setblocking(False)
    sent, pending = 0, memoryview(b"")
    deadline = time.monotonic() + 120
    while sent < total and time.monotonic() < deadline:
        readable, writable, _ = select.select([sock], [sock], [], 5)
        if readable:
            break  # the server has answered (or closed) while we were still sending
        if writable:
            if not pending:
                pending = memoryview(frame)
            try:
                done = sock.send(pending)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent, pending = sent + done, pending[done:]
    answer = read_answer(sock)
    assert answer.startswith(b"HTTP/1.1 413 ") and b"over the limit of 1048576 bytes" in answer, answer[:300]
    # Had the worker read the body to the end (as it did before), all 64 MiB would have gone out. It stopped
    # at 1 MiB; what else left this side sits in the two sockets' buffers (a few MiB at most on Linux).
    assert sent < 16 << 20, f"{sent} bytes went out before the worker refused the body"
    canary.unharmed(plain)


def test_a_host_other_than_loopback_is_refused_while_the_worker_listens_on_loopback(plain: RunningWorker) -> None:
    port = urlsplit(plain.url).port
    name = unique("rebound")
    body = {"name": name, "config": {"connector.class": "datagen", "topic": unique("t")}}
    refused = httpx.post(f"{plain.url}/connectors", json=body, headers={"Host": f"attacker.example:{port}"})
    assert refused.status_code == 400 and "DNS rebinding" in refused.json()["message"]
    assert "attacker.example" in refused.json()["message"]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "[::1]", "localhost"):
        assert httpx.get(f"{plain.url}/connectors", headers={"Host": host}).status_code == 200, host
    assert name not in connector_names(plain.url)
    canary.unharmed(plain)
