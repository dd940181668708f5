"""The REST side of requests between workers, without a worker: which internal requests skip basic auth,
what the internal route hands the herder, and the TLS context a worker reaches the others with."""

from __future__ import annotations

import contextlib
import ssl
from pathlib import Path

import pytest
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from sparklink.platform import ca
from sparklink.worker import request_signing as rs
from sparklink.worker.config import WorkerConfig
from sparklink.worker.rest.app import create_app
from sparklink.worker.rest.security import basic_auth, tls
from sparklink.worker.rest.security.exceptions import RestSecurityError
from sparklink.worker.rest.security.settings import RestSecurity
from tests.unit.test_rest_security import call, header, jaas_file

SIGNED = {rs.SIGNATURE_HEADER: "AAAA", rs.ALGORITHM_HEADER: "HmacSHA256"}


async def reached(scope: Scope, receive: Receive, send: Send) -> None:
    await PlainTextResponse("reached")(scope, receive, send)


def test_only_a_signed_internal_task_config_post_skips_basic_auth(tmp_path: Path) -> None:
    authenticator = basic_auth.from_settings(basic_auth.EXTENSION, None, jaas_file(tmp_path, "alice=pw"))
    assert authenticator is not None
    app = basic_auth.RequireBasicAuth(reached, authenticator)
    # Connect's JaasBasicAuthFilter matcher: POST /connectors/{c}/tasks, with or without the trailing slash.
    assert call(app, "POST", "/connectors/c/tasks", headers=SIGNED).text == "reached"
    assert call(app, "POST", "/connectors/c/tasks/", headers=SIGNED).text == "reached"
    # The herder verifies what passes here; what is not signed needs credentials like anything else.
    for method, path, headers in [
        ("POST", "/connectors/c/tasks", {}),
        ("POST", "/connectors/c/tasks", {rs.SIGNATURE_HEADER: "AAAA"}),
        ("POST", "/connectors/c/tasks", {rs.ALGORITHM_HEADER: "HmacSHA256"}),
        ("GET", "/connectors/c/tasks", SIGNED),
        ("PUT", "/connectors/c/tasks", SIGNED),
        ("POST", "/connectors/c/tasks/0/restart", SIGNED),
        ("POST", "/connectors", SIGNED),
        ("PUT", "/connectors/c/fence", SIGNED),  # sparklink has no fence endpoint to exempt
        ("POST", "/x/connectors/c/tasks", SIGNED),
    ]:
        answer = call(app, method, path, headers=headers)
        assert (answer.status_code, answer.text) == (401, basic_auth.UNAUTHORIZED), (method, path, headers)
    assert call(app, "POST", "/connectors", headers={"Authorization": header("alice", "pw")}).text == "reached"


class TaskConfigsHerder:
    """Takes what the internal route hands the herder."""

    ready = True

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[dict[str, str]], rs.RequestSignature | None]] = []

    def put_task_configs(
        self, name: str, configs: list[dict[str, str]], signature: rs.RequestSignature | None = None
    ) -> None:
        self.calls.append((name, configs, signature))


def test_the_internal_route_hands_the_herder_the_signature_over_the_bytes_received() -> None:
    herder = TaskConfigsHerder()
    app = create_app(herder)  # type: ignore[arg-type]
    body = b'[ {"task.id" : "0"} ]'  # not compact: the MAC is over what was sent, not a re-encoding
    key = b"k" * 32
    signed = rs.signature_headers(key, body, "HmacSHA256")
    headers = {"Content-Type": "application/json", **signed}
    assert call(app, "POST", "/connectors/c/tasks", content=body, headers=headers).status_code == 204
    name, configs, signature = herder.calls[-1]
    assert (name, configs) == ("c", [{"task.id": "0"}])
    assert signature is not None and signature.body == body and signature.is_valid(key)
    assert call(app, "POST", "/connectors/c/tasks", content=body, headers={"Content-Type": "application/json"})
    assert herder.calls[-1][2] is None
    unknown = call(app, "POST", "/connectors/c/tasks", content=body, headers={**headers, rs.ALGORITHM_HEADER: "X1"})
    assert unknown.json() == {"error_code": 400, "message": "Algorithm X1 not available"}
    assert len(herder.calls) == 2


# ---------------------------------------------------------------------- the client side of https between workers
@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("group-pki")
    root = ca.new_ca("group", key_type=ca.KeyType.EC)
    (d / "ca.pem").write_bytes(root.cert_pem)
    worker = ca.issue(root, "worker", hosts=["localhost"], server=True, client=True)
    (d / "worker.pem").write_bytes(worker.cert_pem + worker.key_pem)
    other = ca.new_ca("other", key_type=ca.KeyType.EC)
    (d / "other-ca.pem").write_bytes(other.cert_pem)
    return d


def listener(pki: Path, **extra: str) -> dict[str, str]:
    base = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki / "worker.pem"),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki / "ca.pem"),
        "ssl.client.auth": "required",
    }
    return {f"listeners.https.{k}": v for k, v in {**base, **extra}.items()}


def handshake(client: ssl.SSLContext, server: ssl.SSLContext, host: str = "localhost") -> str:
    """Both ends in memory: `ok`, or the first side's reason for refusing."""
    client_in, client_out, server_in, server_out = (ssl.MemoryBIO() for _ in range(4))
    client_side = client.wrap_bio(client_in, client_out, server_hostname=host)
    server_side = server.wrap_bio(server_in, server_out, server_side=True)
    for _ in range(10):
        try:
            client_side.do_handshake()
            client_side.write(b"x")
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLError as exc:
            return "client: " + str(getattr(exc, "verify_message", None) or exc.reason)
        server_in.write(client_out.read())
        try:
            server_side.do_handshake()
            if server_side.read(1) == b"x":
                return "ok"
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLError as exc:
            return "server: " + str(getattr(exc, "verify_message", None) or exc.reason)
        client_in.write(server_out.read())
    return "no outcome"


def test_a_worker_reaches_another_with_its_listener_certificate_and_trust_store(pki: Path) -> None:
    server = tls.server_context(listener(pki)).context
    assert handshake(tls.client_context(listener(pki)), server) == "ok"
    # All or nothing, as SSLUtils reads them: the plain ssl.* keys (the Kafka client's) do not count when
    # listeners.https.* exist, so a key store given only there is not presented.
    trust_only = {
        "listeners.https.ssl.truststore.type": "PEM",
        "listeners.https.ssl.truststore.location": str(pki / "ca.pem"),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki / "worker.pem"),
    }
    assert handshake(tls.client_context(trust_only), server) == "server: PEER_DID_NOT_RETURN_A_CERTIFICATE"
    # The peer is checked against the trust store, host name included; no silent fallback.
    other = listener(pki, **{"ssl.truststore.location": str(pki / "other-ca.pem")})
    assert handshake(tls.client_context(other), server) in (
        "client: unable to get local issuer certificate",
        "client: self-signed certificate in certificate chain",  # the listener sends its CA along
    )
    assert handshake(tls.client_context(listener(pki)), server, host="127.0.0.1") == (
        "client: IP address mismatch, certificate is not valid for '127.0.0.1'."
    )
    unchecked = listener(pki, **{"ssl.endpoint.identification.algorithm": ""})
    assert handshake(tls.client_context(unchecked), server, host="127.0.0.1") == "ok"
    with pytest.raises(RestSecurityError, match="not supported"):
        tls.client_context(listener(pki, **{"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}))


def test_a_group_on_https_builds_its_client_side_at_start(pki: Path, tmp_path: Path) -> None:
    https = {"listeners": "https://localhost:0", "sparklink.worker.mode": "distributed", **listener(pki)}
    security = RestSecurity.of(WorkerConfig.model_validate(https), {})
    assert security.peer_tls.context() is security.peer_tls.context()
    broken = {**https, "listeners.https.ssl.truststore.location": str(tmp_path / "missing.pem")}
    with pytest.raises(RestSecurityError, match=r"missing\.pem"):
        RestSecurity.of(WorkerConfig.model_validate(broken), {})
    # A standalone worker never reaches another: nothing is built for it at start.
    with contextlib.suppress(RestSecurityError):
        RestSecurity.of(WorkerConfig.model_validate({**broken, "sparklink.worker.mode": "standalone"}), {})
        pytest.fail("the listener's own TLS context should still refuse the missing trust store")
