"""REST security settings without a worker: listeners, JAAS, basic auth, TLS contexts, CORS and the admin split."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import logging
import ssl
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from sparklink.platform import ca
from sparklink.worker import listeners
from sparklink.worker.config import WorkerConfig, WorkerConfigError
from sparklink.worker.rest.app import create_app
from sparklink.worker.rest.security import basic_auth, jaas, tls
from sparklink.worker.rest.security.exceptions import RestSecurityError
from sparklink.worker.rest.security.settings import RestSecurity

MODULE = basic_auth.PROPERTY_FILE_MODULE


# ---------------------------------------------------------------------- listeners and the advertised URL
def test_listeners_parse_as_connect_reads_them() -> None:
    parsed = listeners.parse("HTTP://:8083, https://[::1]:8443,http://localhost:0")
    assert [(x.protocol, x.host, x.port) for x in parsed] == [
        ("http", "", 8083),
        ("https", "::1", 8443),
        ("http", "localhost", 0),
    ]
    assert [x.loopback for x in parsed] == [False, True, True]
    assert listeners.parse_admin("") == [] and listeners.parse_admin(None) is None
    with pytest.raises(listeners.ListenerError, match=r"doesn't have the right format \(protocol://hostname:port\)"):
        listeners.parse("127.0.0.1:8083")
    with pytest.raises(listeners.ListenerError, match='must be either "http" or "https"'):
        listeners.parse("ftp://host:21")


def test_the_advertised_url_follows_connects_rules() -> None:
    both = {"listeners": "https://127.0.0.1:8443,http://127.0.0.1:8083"}
    assert WorkerConfig.model_validate(both).advertised_url == "http://127.0.0.1:8083"  # http when any is
    chosen = WorkerConfig.model_validate({**both, "rest.advertised.listener": "HTTPS"})
    assert (chosen.advertised_url, chosen.worker_id) == ("https://127.0.0.1:8443", "127.0.0.1:8443")
    moved = {"rest.advertised.host.name": "w1.example", "rest.advertised.port": "9000"}
    assert WorkerConfig.model_validate({**both, **moved}).worker_id == "w1.example:9000"
    assert WorkerConfig.model_validate({"rest.port": "8090"}).advertised_url == "http://127.0.0.1:8090"
    with pytest.raises(WorkerConfigError, match="no https listener"):
        WorkerConfig.from_properties(None, {"rest.advertised.listener": "https"})


def test_secrets_are_hidden_in_the_config_repr_and_its_errors() -> None:
    config = WorkerConfig.model_validate({"listeners.https.ssl.keystore.password": "hunter2", "ssl.keystore.key": "K"})
    assert "hunter2" not in repr(config) and "[hidden]" in repr(config)
    with pytest.raises(WorkerConfigError) as bad:
        WorkerConfig.from_properties(None, {"listeners": "nonsense", "ssl.key.password": "hunter2"})
    assert "listeners" in str(bad.value) and "hunter2" not in str(bad.value)


# ---------------------------------------------------------------------- JAAS and basic authentication
def test_jaas_files_parse_as_the_jvm_reads_them() -> None:
    text = f"""
    /* Connect's entry */ KafkaConnect {{
        {MODULE} required   // the credentials
        file="/etc/a\\"b.properties" debug=true;
    }};
    # another entry with a secret in it
    KafkaClient {{ org.apache.kafka.common.security.plain.PlainLoginModule required password="s3cret"; }};
    """
    entries = jaas.parse(text)
    assert entries["KafkaConnect"] == [
        jaas.LoginModule(MODULE, "required", {"file": '/etc/a"b.properties', "debug": "true"})
    ]
    with pytest.raises(RestSecurityError, match="line 3") as bad:
        jaas.parse('KafkaClient {\n  X required password="s3cret"\n};')
    assert "s3cret" not in str(bad.value)


def test_the_jaas_file_is_found_in_kafka_opts_or_a_worker_property() -> None:
    # Connect's scripts split $KAFKA_OPTS at whitespace; the last -D wins, and `==` names one file all the same.
    opts = {
        "KAFKA_OPTS": "-Xmx1g -Djava.security.auth.login.config=/a.conf  -Djava.security.auth.login.config==/b.conf"
    }
    assert jaas.login_config(None, opts) == (Path("/b.conf"), "-Djava.security.auth.login.config in KAFKA_OPTS")
    assert jaas.login_config("/c.conf", opts) == (
        Path("/c.conf"),
        "the worker property java.security.auth.login.config",
    )
    assert jaas.login_config(None, {}) is None


def jaas_file(tmp_path: Path, credentials: str, modules: str | None = None) -> dict[str, str]:
    (tmp_path / "users.properties").write_text(credentials)
    modules = modules or f'{MODULE} required file="{tmp_path / "users.properties"}";'
    (tmp_path / "jaas.conf").write_text(f"KafkaConnect {{ {modules} }};")
    return {"KAFKA_OPTS": f"-Djava.security.auth.login.config={tmp_path / 'jaas.conf'}"}


def header(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_basic_auth_logs_in_against_the_credentials_file(tmp_path: Path) -> None:
    environ = jaas_file(tmp_path, "alice = pa:ss word \nbob=b\\u00e9\n")
    auth = basic_auth.from_settings(basic_auth.EXTENSION, None, environ)
    assert auth is not None
    assert auth.authenticate(header("alice", "pa:ss word ")) and auth.authenticate(header("bob", "bé"))
    for wrong in (header("alice", "pa:ss word"), header("carol", "x"), header("", "b"), "Basic !!!", "Bearer x", None):
        assert not auth.authenticate(wrong), wrong


def test_basic_auth_settings_it_cannot_serve_are_refused_at_start(tmp_path: Path) -> None:
    with pytest.raises(RestSecurityError, match="sparklink runs no Java REST extensions"):
        basic_auth.from_settings(f"{basic_auth.EXTENSION},com.example.Audit", None, {})
    with pytest.raises(RestSecurityError, match="KAFKA_OPTS"):
        basic_auth.from_settings(basic_auth.EXTENSION, None, {})
    with pytest.raises(RestSecurityError, match="Connect would let every request through"):
        basic_auth.from_settings(basic_auth.EXTENSION, None, jaas_file(tmp_path, "# nobody\n"))
    with pytest.raises(RestSecurityError, match="runs no Java login modules"):
        basic_auth.from_settings(basic_auth.EXTENSION, None, jaas_file(tmp_path, "a=b", "com.example.Ldap required;"))
    assert basic_auth.from_settings("", None, {}) is None


# ---------------------------------------------------------------------- TLS contexts
@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("certs")
    root = ca.new_ca("root", key_type=ca.KeyType.EC)
    (d / "ca.pem").write_bytes(root.cert_pem)
    server = ca.issue(root, "worker", hosts=["localhost"], server=True)
    (d / "server.pem").write_bytes(server.cert_pem + server.key_pem)
    key = serialization.load_pem_private_key(server.key_pem, None)
    encryption = serialization.BestAvailableEncryption(b"storepw")
    (d / "server.p12").write_bytes(
        pkcs12.serialize_key_and_certificates(b"w", key, server.certificate, None, encryption)
    )
    (d / "server.jks").write_bytes(tls.JKS_MAGIC + b"\x00\x00\x00\x02")
    ca.issue(root, "good", client=True).write(d / "good.pem", d / "good.key")
    ca.issue(ca.new_ca("other", key_type=ca.KeyType.EC), "x", client=True).write(d / "other.pem", d / "other.key")
    long_ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=30)
    ca.issue(root, "old", client=True, validity_days=1, now=long_ago).write(d / "old.pem", d / "old.key")
    return d


def server_settings(certs: Path, **extra: str) -> dict[str, str]:
    base = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs / "server.pem")}
    base |= {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs / "ca.pem")}
    return {f"listeners.https.{k}": v for k, v in {**base, **extra}.items()}


def handshake(server: ssl.SSLContext, certs: Path, client: str | None) -> str:
    """A TLS handshake in memory; what the server makes of it (`ok`, or why it refused)."""
    context = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    if client:
        context.load_cert_chain(certs / f"{client}.pem", certs / f"{client}.key")
    client_in, client_out, server_in, server_out = (ssl.MemoryBIO() for _ in range(4))
    client_side = context.wrap_bio(client_in, client_out, server_hostname="localhost")
    server_side = server.wrap_bio(server_in, server_out, server_side=True)
    for _ in range(10):
        # TLS 1.3: the client is done before the server has judged its certificate.
        with contextlib.suppress(ssl.SSLError):
            client_side.do_handshake()
            client_side.write(b"x")
        server_in.write(client_out.read())
        try:
            server_side.do_handshake()
            if server_side.read(1) == b"x":
                return "ok"
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLError as exc:
            return str(getattr(exc, "verify_message", None) or exc.reason)
        client_in.write(server_out.read())
    return "no outcome"


def test_required_client_auth_refuses_each_bad_certificate_for_its_reason(certs: Path) -> None:
    server = tls.server_context(server_settings(certs, **{"ssl.client.auth": "required"})).context
    assert handshake(server, certs, "good") == "ok"
    assert handshake(server, certs, None) == "PEER_DID_NOT_RETURN_A_CERTIFICATE"
    assert handshake(server, certs, "other") == "unable to get local issuer certificate"
    assert handshake(server, certs, "old") == "certificate has expired"
    optional = tls.server_context(server_settings(certs, **{"ssl.client.auth": "requested"})).context
    assert handshake(optional, certs, None) == "ok" and handshake(optional, certs, "old") == "certificate has expired"


def test_pkcs12_stores_open_with_their_password_and_a_wrong_one_is_not_repeated(certs: Path) -> None:
    p12 = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(certs / "server.p12")}
    described = tls.server_context({**p12, "ssl.keystore.password": "storepw"}, tls.LISTENER_PREFIX).description
    assert "PKCS12 key store" in described and "client auth none" in described
    # Kafka's default type name, JKS: Java reads a PKCS12 file under it, and so does the worker.
    untyped = {"ssl.keystore.location": str(certs / "server.p12"), "ssl.keystore.password": "storepw"}
    assert "JKS key store" in tls.server_context(untyped).description
    with pytest.raises(RestSecurityError, match=r"wrong ssl\.keystore\.password") as wrong:
        tls.server_context({**p12, "ssl.keystore.password": "hunter2"})
    assert "hunter2" not in str(wrong.value)
    with pytest.raises(RestSecurityError, match=r"is a JKS store.*keytool -importkeystore"):
        tls.server_context({"ssl.keystore.location": str(certs / "server.jks"), "ssl.keystore.password": "x"})


def test_tls_settings_it_cannot_honour_are_refused(certs: Path, caplog: pytest.LogCaptureFixture) -> None:
    no_trust = {
        "listeners.https.ssl.keystore.type": "PEM",
        "listeners.https.ssl.keystore.location": str(certs / "server.pem"),
    }
    with pytest.raises(RestSecurityError, match="needs a trust store"):
        tls.server_context({**no_trust, "listeners.https.ssl.client.auth": "required"})
    with pytest.raises(RestSecurityError, match="cannot be specified with PEM format"):
        tls.server_context(server_settings(certs, **{"ssl.keystore.password": "x"}))
    with pytest.raises(RestSecurityError, match="not supported"):
        tls.server_context(server_settings(certs, **{"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}))
    with pytest.raises(RestSecurityError, match=r"TLSv1\.2 and TLSv1\.3 only"):
        tls.server_context(server_settings(certs, **{"ssl.enabled.protocols": "TLSv1.1"}))
    # All or nothing, as Connect reads them: with listeners.https.* present, a plain ssl.client.auth does not apply.
    with caplog.at_level(logging.WARNING):
        mixed = tls.server_context({**server_settings(certs), "ssl.client.auth": "required"})
    assert "client auth none" in mixed.description and "does not apply" in caplog.text


# ---------------------------------------------------------------------- the app's guards
def call(app: object, method: str, path: str, **kwargs: object) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.request(method, path, **kwargs)  # type: ignore[arg-type]

    return asyncio.run(go())


def test_cors_answers_preflights_for_the_allowed_origins_only() -> None:
    config = WorkerConfig.model_validate(
        {"access.control.allow.origin": "https://*.example.com", "access.control.allow.methods": "GET,PUT"}
    )
    app = create_app(security=RestSecurity.of(config, {}))
    ask = {"Access-Control-Request-Method": "PUT"}
    allowed = call(app, "OPTIONS", "/connectors", headers={"Origin": "https://ui.example.com", **ask})
    assert allowed.headers["access-control-allow-origin"] == "https://ui.example.com"
    assert "PUT" in allowed.headers["access-control-allow-methods"]
    refused = call(app, "OPTIONS", "/connectors", headers={"Origin": "https://evil.test", **ask})
    assert "access-control-allow-origin" not in refused.headers
    default = create_app(security=RestSecurity.of(WorkerConfig(), {}))
    assert "access-control-allow-origin" not in call(default, "GET", "/health", headers={"Origin": "https://x"}).headers


def test_an_empty_admin_listeners_turns_admin_off() -> None:
    app = create_app(security=RestSecurity.of(WorkerConfig.model_validate({"admin.listeners": ""}), {}))
    assert call(app, "GET", "/admin/loggers").json() == {"error_code": 404, "message": "HTTP 404 Not Found"}
    assert call(create_app(), "GET", "/admin/loggers").status_code == 200
