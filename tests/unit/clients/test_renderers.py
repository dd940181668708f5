"""Each renderer: the model in librdkafka's, kafka-python's, Java's and Spark's words."""

from __future__ import annotations

import ssl
import stat
from pathlib import Path

import pytest
from confluent_kafka import Producer
from cryptography.hazmat.primitives.serialization import pkcs12

from sparklink.clients import settings as settings_module
from sparklink.clients.errors import ClientSettingsError
from sparklink.clients.secrets import HIDDEN
from sparklink.clients.settings import KafkaClientSettings, client_config, read_properties
from tests.unit.clients.material import PLAIN, SCRAM, jaas, make, to_jks

BOOT = "127.0.0.1:1"


def settings(**props: str) -> KafkaClientSettings:
    return KafkaClientSettings.from_properties({"bootstrap.servers": BOOT, **props})


def private(path: str) -> bytes:
    file = Path(path)
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert stat.S_IMODE(file.parent.stat().st_mode) == 0o700
    return file.read_bytes()


def test_librdkafka_sasl_ssl_with_a_pem_trust_file(tmp_path: Path) -> None:
    m = make(tmp_path)
    s = settings(
        **{
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": jaas(SCRAM, username="alice", password="pw"),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(m.ca_file),
            "client.id": "c1",
            "max.poll.records": "5",  # a Java-only key: not for librdkafka
        }
    )
    conf = s.librdkafka(**{"group.id": "g"})
    assert conf["logger"].name == "sparklink.rdkafka"
    assert {k: v for k, v in conf.items() if k != "logger"} == {
        "bootstrap.servers": BOOT,
        "security.protocol": "sasl_ssl",
        "ssl.ca.location": str(m.ca_file),
        "ssl.endpoint.identification.algorithm": "https",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": "pw",
        "client.id": "c1",
        "group.id": "g",
    }
    Producer(conf)  # librdkafka accepts every key and value


def test_librdkafka_pem_text_and_client_certificate(tmp_path: Path) -> None:
    m = make(tmp_path)
    s = settings(
        **{
            "security.protocol": "SSL",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": m.ca_pem,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(m.keystore_pem),
            "ssl.endpoint.identification.algorithm": "",
        }
    )
    conf = s.librdkafka()
    assert conf["ssl.ca.pem"] == m.ca_pem and conf["ssl.certificate.pem"] == m.cert_pem
    assert conf["ssl.key.pem"] == m.key_pem and conf["ssl.endpoint.identification.algorithm"] == "none"
    Producer(conf)


def test_librdkafka_pkcs12_key_store_and_trust_store(tmp_path: Path) -> None:
    m = make(tmp_path)
    s = settings(
        **{
            "security.protocol": "SSL",
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.location": str(m.truststore_p12),
            "ssl.truststore.password": "trust-pw",
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(m.keystore_p12),
            "ssl.keystore.password": "store-pw",
        }
    )
    conf = s.librdkafka()
    assert conf["ssl.ca.pem"] == m.ca_pem  # librdkafka has no PKCS12 trust store
    assert (conf["ssl.keystore.location"], conf["ssl.keystore.password"]) == (str(m.keystore_p12), "store-pw")
    Producer(conf)


def test_librdkafka_without_a_trust_store_uses_the_system_cas() -> None:
    assert settings(**{"security.protocol": "SSL"}).librdkafka()["ssl.ca.location"] == "probe"


def test_librdkafka_gets_jks_converted_once_into_a_private_pkcs12_file(tmp_path: Path) -> None:
    m = make(tmp_path)
    jks = to_jks(m.keystore_p12, "store-pw", tmp_path / "alice.jks")
    trust = to_jks(m.truststore_p12, "trust-pw", tmp_path / "trust.jks")
    s = settings(
        **{
            "security.protocol": "SSL",
            "ssl.keystore.location": str(jks),
            "ssl.keystore.password": "store-pw",
            "ssl.truststore.location": str(trust),
            "ssl.truststore.password": "trust-pw",
        }
    )
    conf = s.librdkafka()
    converted = pkcs12.load_pkcs12(private(conf["ssl.keystore.location"]), b"store-pw")
    assert converted.cert is not None and converted.cert.certificate.subject.rfc4514_string().startswith("CN=alice")
    assert conf["ssl.ca.pem"] == m.ca_pem
    assert s.librdkafka()["ssl.keystore.location"] == conf["ssl.keystore.location"]
    Producer(conf)


def test_jks_without_keytool_is_refused_with_the_command_to_convert_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = make(tmp_path)
    jks = to_jks(m.keystore_p12, "store-pw", tmp_path / "alice.jks")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    s = settings(**{"security.protocol": "SSL", "ssl.keystore.location": str(jks), "ssl.keystore.password": "store-pw"})
    with pytest.raises(ClientSettingsError) as caught:
        s.librdkafka()
    message = str(caught.value)
    assert caught.value.key == "ssl.keystore.location"
    assert f"keytool -importkeystore -srckeystore {jks} -srcstoretype JKS" in message
    assert "set ssl.keystore.type=PKCS12" in message and "store-pw" not in message


def test_librdkafka_oauthbearer_becomes_oidc() -> None:
    module = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
    conf = settings(
        **{
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.oauthbearer.token.endpoint.url": "https://idp.example/token",
            "sasl.jaas.config": jaas(module, clientId="app", clientSecret="sec", scope="kafka"),
        }
    ).librdkafka()
    assert {k: conf[k] for k in conf if k.startswith("sasl.")} == {
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": "app",
        "sasl.oauthbearer.client.secret": "sec",
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example/token",
        "sasl.oauthbearer.scope": "kafka",
    }
    Producer(conf)


def test_kafka_python_gets_private_pem_files(tmp_path: Path) -> None:
    m = make(tmp_path)
    s = settings(
        **{
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": jaas(PLAIN, username="alice", password="pw"),
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.location": str(m.truststore_p12),
            "ssl.truststore.password": "trust-pw",
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(m.keystore_p12),
            "ssl.keystore.password": "store-pw",
            "ssl.endpoint.identification.algorithm": "",
        }
    )
    conf = s.kafka_python(client_id="x")
    assert conf["bootstrap_servers"] == BOOT and conf["client_id"] == "x"
    assert conf["security_protocol"] == "SASL_SSL" and conf["ssl_check_hostname"] is False
    assert (conf["sasl_mechanism"], conf["sasl_plain_username"], conf["sasl_plain_password"]) == (
        "PLAIN",
        "alice",
        "pw",
    )
    assert private(conf["ssl_cafile"]).decode() == m.ca_pem
    assert private(conf["ssl_certfile"]).decode() == m.cert_pem
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(conf["ssl_cafile"])
    private(conf["ssl_keyfile"])
    context.load_cert_chain(conf["ssl_certfile"], conf["ssl_keyfile"])  # the key belongs to the certificate


def test_kafka_python_keeps_a_pem_trust_file_where_it_is(tmp_path: Path) -> None:
    m = make(tmp_path)
    conf = settings(
        **{"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": str(m.ca_file)}
    ).kafka_python()
    assert conf["ssl_cafile"] == str(m.ca_file) and conf["ssl_check_hostname"] is True
    assert "ssl_certfile" not in conf and "sasl_mechanism" not in conf


def test_java_and_spark_get_the_keys_unchanged(tmp_path: Path) -> None:
    props = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": jaas(PLAIN, username="alice", password="pw"),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(make(tmp_path).ca_file),
        "acks": "all",
        "key.serializer": "x.ByteArraySerializer",
    }
    s = settings(**props)
    assert s.java(linger_ms="5") == {"bootstrap.servers": BOOT, **props, "linger_ms": "5"}
    spark = s.spark_options()
    assert spark["kafka.sasl.jaas.config"] == props["sasl.jaas.config"] and spark["kafka.acks"] == "all"
    assert "kafka.key.serializer" not in spark  # Spark sets its own (de)serializers
    assert s.redacted()["sasl.jaas.config"] == HIDDEN and s.redacted()["acks"] == "all"
    assert "pw" not in s.describe() and s.describe() == f"{BOOT} over SASL_SSL/PLAIN"


def test_security_cannot_be_slipped_in_through_extra_keys() -> None:
    s = settings()
    for render in (s.librdkafka, s.java, s.kafka_python):
        with pytest.raises(ValueError, match="security settings"):
            render(**{"security.protocol": "PLAINTEXT"})
    with pytest.raises(ValueError, match="security settings"):
        s.kafka_python(ssl_cafile="/x")


def test_bootstrap_servers_are_required() -> None:
    with pytest.raises(ClientSettingsError) as caught:
        KafkaClientSettings.from_properties({"security.protocol": "SSL"})
    assert caught.value.key == "bootstrap.servers"


def test_the_plaintext_helper_is_unchanged() -> None:
    conf = client_config("b:9092", **{"group.id": "g"})
    assert conf == {"bootstrap.servers": "b:9092", "logger": settings_module._rdkafka_log, "group.id": "g"}


def test_command_config_files_are_read_as_java_properties(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text(
        "# a comment\n! another\nbootstrap.servers = b1:9093,\\\n    b2:9093\n"
        f'sasl.jaas.config={PLAIN} required username="a" password="p=q";\n'
        "ssl.truststore.location: C:\\\\certs\\\\ca.crt\n"
    )
    assert read_properties(path) == {
        "bootstrap.servers": "b1:9093,b2:9093",
        "sasl.jaas.config": f'{PLAIN} required username="a" password="p=q";',
        "ssl.truststore.location": "C:\\certs\\ca.crt",
    }
