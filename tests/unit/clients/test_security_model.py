"""The client-security model: what it reads from Connect's settings, and what it refuses (naming the key,
never echoing a secret)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparklink.clients import jaas
from sparklink.clients.errors import ClientSettingsError
from sparklink.clients.security import ClientSecurity, SaslMechanism, SecurityProtocol
from tests.unit.clients.material import PLAIN, SCRAM, make, to_jks
from tests.unit.clients.material import jaas as jaas_text

SECRET = "s3cr3t-Value"


def refused(props: dict[str, str]) -> ClientSettingsError:
    with pytest.raises(ClientSettingsError) as caught:
        ClientSecurity.from_properties(props)
    assert SECRET not in str(caught.value)
    return caught.value


def test_no_settings_is_plaintext() -> None:
    security = ClientSecurity.from_properties({"bootstrap.servers": "b:9092", "acks": "all"})
    assert security.protocol is SecurityProtocol.PLAINTEXT
    assert security.tls is None and security.sasl is None and security.java_properties() == {}


def test_protocol_is_case_insensitive_and_an_unknown_one_is_refused() -> None:
    assert ClientSecurity.from_properties({"security.protocol": "ssl"}).protocol is SecurityProtocol.SSL
    error = refused({"security.protocol": "TLS"})
    assert error.key == "security.protocol"
    assert "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL" in str(error)


def test_scram_credentials_come_from_the_jaas_text() -> None:
    props = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": jaas_text(SCRAM, username="alice", password=SECRET),
    }
    security = ClientSecurity.from_properties(props)
    assert security.sasl is not None and security.sasl.mechanism is SaslMechanism.SCRAM_SHA_512
    assert (security.sasl.username, security.sasl.password) == ("alice", SECRET)
    assert security.java_properties() == props  # Java clients get the keys unchanged
    assert SECRET not in repr(security)
    assert security.describe() == "SASL_PLAINTEXT/SCRAM-SHA-512"


def test_sasl_needs_a_mechanism_other_than_kerberos_and_a_jaas_config() -> None:
    error = refused(
        {"security.protocol": "SASL_SSL", "sasl.jaas.config": jaas_text(PLAIN, username="a", password=SECRET)}
    )
    assert error.key == "sasl.mechanism" and "GSSAPI" in str(error)
    assert refused({"security.protocol": "SASL_SSL", "sasl.mechanism": "DIGEST-MD5"}).key == "sasl.mechanism"
    error = refused({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"})
    assert error.key == "sasl.jaas.config" and PLAIN in str(error)


def test_the_login_module_must_match_the_mechanism() -> None:
    error = refused(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": jaas_text(PLAIN, username="a", password=SECRET),
        }
    )
    assert error.key == "sasl.jaas.config" and SCRAM in str(error)


@pytest.mark.parametrize(
    "text",
    [
        f'{PLAIN} required username="a" password="{SECRET}"',  # no semicolon
        f'{PLAIN} username="a" password="{SECRET}";',  # no control flag
        f'{PLAIN} required username="a" password="{SECRET};',  # quote not closed
        f'{PLAIN} required username="a" password=;',
        f'{PLAIN} required username="a"; {PLAIN} required password="{SECRET}";',  # two modules
    ],
)
def test_an_unreadable_jaas_text_is_refused_without_echoing_it(text: str) -> None:
    error = refused({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": text})
    assert error.key == "sasl.jaas.config" and "Expected:" in str(error)


def test_jaas_reads_quotes_escapes_comments_and_bare_words() -> None:
    entry = jaas.parse(
        "/* c */ org.x.Module Required // line comment\n"
        ' user = \'single\' pass="q\\"uote\\\\d\\n" bare=word_1.x-y $k="v";'
    )
    assert entry.login_module == "org.x.Module" and entry.flag == "required"
    assert dict(entry.options) == {"user": "single", "pass": 'q"uote\\d\n', "bare": "word_1.x-y", "$k": "v"}


def test_a_user_without_password_is_refused() -> None:
    error = refused(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": f'{PLAIN} required username="a";',
        }
    )
    assert "no password option" in str(error)


def test_oauthbearer_takes_client_credentials_from_jaas_or_the_settings() -> None:
    module = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
    base = {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}
    error = refused({**base, "sasl.jaas.config": jaas_text(module, clientId="c", clientSecret=SECRET)})
    assert error.key == "sasl.oauthbearer.token.endpoint.url"
    security = ClientSecurity.from_properties(
        {
            **base,
            "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
            "sasl.jaas.config": jaas_text(module, clientId="c", clientSecret=SECRET, scope="kafka", extension_t="1"),
        }
    )
    assert security.sasl is not None and security.sasl.oauth is not None
    assert (security.sasl.oauth.client_id, security.sasl.oauth.client_secret) == ("c", SECRET)
    assert security.sasl.oauth.scope == "kafka" and security.sasl.oauth.extensions == (("t", "1"),)
    by_keys = ClientSecurity.from_properties(
        {
            **base,
            "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
            "sasl.oauthbearer.client.credentials.client.id": "k",
            "sasl.oauthbearer.client.credentials.client.secret": SECRET,
            "sasl.jaas.config": f"{module} required;",
        }
    )
    assert by_keys.sasl is not None and by_keys.sasl.oauth is not None and by_keys.sasl.oauth.client_id == "k"


def test_endpoint_identification_is_https_by_default_and_empty_disables_it(tmp_path: Path) -> None:
    assert ClientSecurity.from_properties({"security.protocol": "SSL"}).tls.verify_hostname  # type: ignore[union-attr]
    off = ClientSecurity.from_properties({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": ""})
    assert off.tls is not None and not off.tls.verify_hostname
    error = refused({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "ldap"})
    assert error.key == "ssl.endpoint.identification.algorithm"


def test_pem_trust_from_text_or_file(tmp_path: Path) -> None:
    m = make(tmp_path)
    inline = ClientSecurity.from_properties(
        {"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.certificates": m.ca_pem}
    )
    assert inline.tls is not None and inline.tls.truststore is not None and inline.tls.truststore.ca_pem() == m.ca_pem
    from_file = ClientSecurity.from_properties(
        {"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": str(m.ca_file)}
    )
    assert from_file.tls is not None and from_file.tls.truststore is not None
    assert from_file.tls.truststore.location == m.ca_file


def test_trust_store_mistakes_are_refused_with_the_key_to_fix(tmp_path: Path) -> None:
    m = make(tmp_path)
    ssl = {"security.protocol": "SSL"}
    assert refused({**ssl, "ssl.truststore.certificates": m.ca_pem}).key == "ssl.truststore.certificates"  # type JKS
    assert "set ssl.truststore.type=PEM" in str(refused({**ssl, "ssl.truststore.location": str(m.ca_file)}))
    error = refused({**ssl, "ssl.truststore.type": "PEM", "ssl.truststore.location": str(tmp_path / "missing.crt")})
    assert error.key == "ssl.truststore.location" and "missing.crt" in str(error)
    error = refused({**ssl, "ssl.truststore.type": "PEM", "ssl.truststore.certificates": "not a certificate"})
    assert "no readable PEM certificate" in str(error)
    wrong = {**ssl, "ssl.truststore.type": "PKCS12", "ssl.truststore.location": str(m.truststore_p12)}
    assert refused({**wrong, "ssl.truststore.password": SECRET}).key == "ssl.truststore.password"
    assert refused({**ssl, "ssl.truststore.type": "BCFKS"}).key == "ssl.truststore.type"


def test_pem_key_store_from_text_checks_the_key_and_its_certificate(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    m, other = make(tmp_path), make(tmp_path / "other")
    ssl = {"security.protocol": "SSL", "ssl.keystore.type": "PEM"}
    good = ClientSecurity.from_properties(
        {**ssl, "ssl.keystore.certificate.chain": m.cert_pem, "ssl.keystore.key": m.key_pem}
    )
    assert good.tls is not None and good.tls.keystore is not None
    assert good.tls.keystore.subject == "CN=alice,O=io.sparklink" and good.tls.keystore.not_after is not None
    assert refused({**ssl, "ssl.keystore.certificate.chain": m.cert_pem}).key == "ssl.keystore.key"
    error = refused({**ssl, "ssl.keystore.certificate.chain": m.cert_pem, "ssl.keystore.key": other.key_pem})
    assert "does not belong" in str(error)
    error = refused(
        {
            **ssl,
            "ssl.keystore.certificate.chain": m.cert_pem,
            "ssl.keystore.key": m.key_pem,
            "ssl.keystore.password": SECRET,
        }
    )
    assert error.key == "ssl.keystore.password"


def test_an_encrypted_pem_key_needs_its_password_and_a_traditional_key_is_refused(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    m = make(tmp_path)
    key = serialization.load_pem_private_key(m.key_pem.encode(), None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(b"kp")
    ).decode()
    ssl = {"security.protocol": "SSL", "ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": m.cert_pem}
    assert refused({**ssl, "ssl.keystore.key": encrypted}).key == "ssl.key.password"
    assert refused({**ssl, "ssl.keystore.key": encrypted, "ssl.key.password": SECRET}).key == "ssl.key.password"
    ok = ClientSecurity.from_properties({**ssl, "ssl.keystore.key": encrypted, "ssl.key.password": "kp"})
    assert ok.tls is not None and ok.tls.keystore is not None
    traditional = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()
    assert "openssl pkcs8 -topk8" in str(refused({**ssl, "ssl.keystore.key": traditional}))


def test_pkcs12_and_jks_key_stores(tmp_path: Path) -> None:
    m = make(tmp_path)
    ssl = {"security.protocol": "SSL", "ssl.keystore.location": str(m.keystore_p12)}
    error = refused({**ssl, "ssl.keystore.type": "PKCS12", "ssl.keystore.password": SECRET})
    assert error.key == "ssl.keystore.password"
    assert refused({**ssl, "ssl.keystore.type": "PKCS12"}).key == "ssl.keystore.password"
    # Java reads a PKCS12 file under the default type JKS; so does the model.
    compat = ClientSecurity.from_properties({**ssl, "ssl.keystore.password": "store-pw"})
    assert compat.tls is not None and compat.tls.keystore is not None and compat.tls.keystore.type == "PKCS12"
    jks = to_jks(m.keystore_p12, "store-pw", tmp_path / "alice.jks")
    real = ClientSecurity.from_properties(
        {"security.protocol": "SSL", "ssl.keystore.location": str(jks), "ssl.keystore.password": "store-pw"}
    )
    assert real.tls is not None and real.tls.keystore is not None and real.tls.keystore.type == "JKS"
    error = refused({"security.protocol": "SSL", "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(jks)})
    assert "set ssl.keystore.type=JKS" in str(error)


def test_settings_a_protocol_ignores_are_listed_not_used(tmp_path: Path) -> None:
    security = ClientSecurity.from_properties(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": jaas_text(PLAIN, username="a", password="b"),
            "ssl.truststore.location": "/x",
        }
    )
    assert security.tls is None and security.unused == ("ssl.truststore.location",)
