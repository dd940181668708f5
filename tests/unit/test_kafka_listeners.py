"""Local clusters' listener model (Strimzi's listeners one to one) and the broker settings that serve them,
without any broker."""

from __future__ import annotations

from pathlib import Path

import javaproperties
import pytest

from sparklink.platform.kafka_listeners import Authentication, Listener, TlsFiles, check, listener_settings
from sparklink.platform.kafka_users import UserStore, client_properties, properties_text

FILES = TlsFiles(Path("/s/tls/broker-1.pem"), Path("/s/tls/ca.crt"), Path("/s/tls/clients-ca/ca.crt"))
LISTENERS = [
    Listener("tls", 9093, tls=True),
    Listener("mtls", 9094, tls=True, authentication="tls"),
    Listener("scram", 9095, tls=True, authentication=("scram-sha-512", "plain")),
    Listener("sasl", 9096, authentication="plain"),
]
PORTS = {"tls": 1001, "mtls": 1002, "scram": 1003, "sasl": 1004}


def test_a_strimzi_listener_maps_one_to_one() -> None:
    lst = Listener.strimzi("external", 9094, True, "scram-sha-512")
    assert (lst.name, lst.port, lst.tls, lst.authentication) == (
        "external",
        9094,
        True,
        (Authentication.SCRAM_SHA_512,),
    )
    assert lst.security_protocol == "SASL_SSL" and lst.config_name == "EXTERNAL-9094"
    assert Listener.strimzi("plain", 9092, False, None).security_protocol == "PLAINTEXT"
    assert Listener("m", 9093, True, "tls").security_protocol == "SSL" and Listener("m", 9093, True, "tls").mutual_tls
    assert Listener("s", 9093, False, "plain").security_protocol == "SASL_PLAINTEXT"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "Bad_Name", "port": 9092}, "lower-case"),
        ({"name": "ok", "port": 9091}, "9092 or higher"),
        ({"name": "ok", "port": 9092, "authentication": "tls"}, "needs tls: true"),
        ({"name": "ok", "port": 9092, "tls": True, "authentication": ("tls", "plain")}, "no SASL"),
        ({"name": "ok", "port": 9092, "authentication": "oauth"}, "authentication must be"),
    ],
)
def test_invalid_listeners_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Listener(**kwargs)  # type: ignore[arg-type]


def test_names_and_ports_are_unique() -> None:
    with pytest.raises(ValueError, match="ports must be unique: 9093"):
        check([Listener("a", 9093), Listener("b", 9093)])


def test_a_secured_broker_serves_each_listener_and_talks_to_its_peers_over_mutual_tls() -> None:
    settings = listener_settings("broker,controller", PORTS, 2000, 2001, LISTENERS, FILES, {"alice": "pw"})
    assert settings["listeners"] == (
        "CONTROLLER://127.0.0.1:2000,REPLICATION-9091://127.0.0.1:2001,TLS-9093://127.0.0.1:1001,"
        "MTLS-9094://127.0.0.1:1002,SCRAM-9095://127.0.0.1:1003,SASL-9096://127.0.0.1:1004"
    )
    assert "PLAINTEXT" not in settings["listener.security.protocol.map"].replace("SASL_PLAINTEXT", "")
    assert settings["listener.security.protocol.map"] == (
        "CONTROLLER:SSL,REPLICATION-9091:SSL,TLS-9093:SSL,MTLS-9094:SSL,SCRAM-9095:SASL_SSL,SASL-9096:SASL_PLAINTEXT"
    )
    assert settings["inter.broker.listener.name"] == "REPLICATION-9091"
    assert settings["ssl.keystore.location"] == str(FILES.keystore) and settings["ssl.keystore.type"] == "PEM"
    assert settings["ssl.truststore.location"] == str(FILES.cluster_ca)
    assert settings["listener.name.controller.ssl.client.auth"] == "required"
    assert settings["listener.name.replication-9091.ssl.client.auth"] == "required"
    assert settings["listener.name.mtls-9094.ssl.client.auth"] == "required"
    assert settings["listener.name.mtls-9094.ssl.truststore.location"] == str(FILES.clients_ca)
    assert "listener.name.tls-9093.ssl.client.auth" not in settings
    assert settings["listener.name.scram-9095.sasl.enabled.mechanisms"] == "SCRAM-SHA-512,PLAIN"
    assert settings["listener.name.scram-9095.scram-sha-512.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    )
    assert settings["listener.name.sasl-9096.plain.sasl.jaas.config"] == (
        'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="pw";'
    )


def test_a_controller_only_node_serves_the_controller_listener_only() -> None:
    settings = listener_settings("controller", {}, 2000, 0, LISTENERS, FILES, {})
    assert settings["listeners"] == "CONTROLLER://127.0.0.1:2000"
    assert "advertised.listeners" not in settings and settings["listener.name.controller.ssl.client.auth"] == "required"


def test_plain_listeners_only_keep_the_nodes_on_plaintext() -> None:
    settings = listener_settings("broker", {"plain": 1001}, 0, 2001, [Listener("plain", 9092)], None, {})
    assert (
        settings["listener.security.protocol.map"]
        == "CONTROLLER:PLAINTEXT,REPLICATION-9091:PLAINTEXT,PLAIN-9092:PLAINTEXT"
    )
    assert not any(k.startswith("ssl.") for k in settings)


def test_internal_tls_puts_the_nodes_on_mutual_tls_behind_plain_client_listeners() -> None:
    settings = listener_settings("broker", {"plain": 1001}, 0, 2001, [Listener("plain", 9092)], FILES, {}, True)
    assert settings["listener.security.protocol.map"] == "CONTROLLER:SSL,REPLICATION-9091:SSL,PLAIN-9092:PLAINTEXT"
    assert settings["listener.name.replication-9091.ssl.client.auth"] == "required"
    assert settings["ssl.keystore.location"] == "/s/tls/broker-1.pem"


def test_a_cluster_with_an_authorizer_names_its_nodes_and_platform_super_users(tmp_path: Path) -> None:
    from sparklink.platform.kafka import KafkaCluster
    from sparklink.platform.kafka_node_settings import STANDARD_AUTHORIZER

    listeners = [Listener("plain", 9092), Listener("scram", 9094, tls=True, authentication="scram-sha-512")]
    cluster = KafkaCluster.create_nodes(
        tmp_path / "c", [(0, "broker,controller", "")], listeners=listeners, internal_tls=True, default_user=False
    )
    assert cluster.access.users() == {}  # an operator adds its users itself
    assert "authorizer.class.name" not in cluster.node_settings(0)
    cluster.super_users = ["User:CN=admin"]
    settings = cluster.node_settings(0)
    name = f"sparklink-{cluster.cluster_id}"
    assert settings["authorizer.class.name"] == STANDARD_AUTHORIZER
    assert settings["super.users"] == (
        f"User:CN={name}-kafka,O=io.sparklink;User:CN=sparklink-platform,O=io.sparklink;User:CN=admin"
    )
    ports = dict(cluster.node(0).listener_ports)
    cluster.set_listeners([listeners[1], Listener("tls", 9093, tls=True)])
    again = KafkaCluster.load(tmp_path / "c")
    assert again.node(0).listener_ports["scram"] == ports["scram"] and "plain" not in again.node(0).listener_ports
    assert again.node(0).broker_port == ports["scram"] and again.super_users == ["User:CN=admin"]
    assert "TLS-9093://127.0.0.1:" in again.node_settings(0)["listeners"]


def test_client_properties_per_listener(tmp_path: Path) -> None:
    ca, keystore = tmp_path / "ca.crt", tmp_path / "alice.pem"
    tls, mtls, scram, sasl = LISTENERS
    assert client_properties(tls, "b:1", ca, None, "alice", "pw") == {
        "bootstrap.servers": "b:1",
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca),
    }
    assert client_properties(mtls, "b:1", ca, keystore, "alice", None)["ssl.keystore.location"] == str(keystore)
    props = client_properties(scram, "b:1", ca, None, "alice", "pw", mechanism="plain")
    assert props["sasl.mechanism"] == "PLAIN" and 'username="alice" password="pw"' in props["sasl.jaas.config"]
    assert client_properties(sasl, "b:1", ca, None, "alice", "pw")["security.protocol"] == "SASL_PLAINTEXT"
    with pytest.raises(ValueError, match="enables PLAIN, not SCRAM-SHA-512"):
        client_properties(sasl, "b:1", ca, None, "alice", "pw", mechanism="SCRAM-SHA-512")
    text = properties_text(props)
    assert javaproperties.loads(text) == props


def test_users_are_kept_private_with_generated_passwords(tmp_path: Path) -> None:
    store = UserStore(tmp_path / "users.json")
    generated = store.add("alice")
    assert len(generated) >= 20 and store.add("alice") == generated and store.add("bob", "given") == "given"
    assert store.load() == {"alice": generated, "bob": "given"}
    assert (tmp_path / "users.json").stat().st_mode & 0o777 == 0o600
    with pytest.raises(ValueError, match="without spaces"):
        store.add("carol", "a,b")
