"""Secured local clusters for the tests: real TLS, mutual TLS and SASL listeners, no PLAINTEXT one.

- `secured_cluster()`: four listeners on one broker: `tls` (SSL), `mtls` (mutual TLS, clients CA),
  `saslssl` (SASL_SSL with SCRAM-SHA-512 and PLAIN) and `sasl` (SASL_PLAINTEXT with PLAIN);
- `mtls_cluster()`: one mutual-TLS listener, started as a user would with `sparklink kafka start -l mtls`
  (the CLI's output is kept for the CLI's test); the MirrorMaker 2 target of the secured tests.
`SecuredKafka` gives each listener's client properties (good credentials) and bad ones: a wrong password, a
client certificate from another CA or expired, no client certificate, a CA that did not sign the brokers, a
mechanism the listener does not enable, a plaintext client on a TLS port. Registered as session fixtures in
tests/conftest.py (`secured_kafka`, `secured_kafka_target`), started only when a test asks for them.
"""

from __future__ import annotations

import datetime as dt
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from sparklink.clients.settings import KafkaClientSettings
from sparklink.platform import ca
from sparklink.platform.kafka import DEFAULT_HEAP, KafkaCluster
from sparklink.platform.kafka_listeners import Listener

LISTENERS = (
    Listener("tls", 9093, tls=True),
    Listener("mtls", 9094, tls=True, authentication="tls"),
    Listener("saslssl", 9095, tls=True, authentication=("scram-sha-512", "plain")),
    Listener("sasl", 9096, authentication="plain"),
)


def prefixed(prefix: str, props: Mapping[str, str]) -> dict[str, str]:
    return {f"{prefix}{k}": v for k, v in props.items()}


def connect_props(client: Mapping[str, str]) -> dict[str, str]:
    """A Connect worker's Kafka settings: `client` for its own clients and, as Connect wants it, again under
    producer./consumer./admin. for its tasks' (which do not inherit the top-level security settings)."""
    return {
        **client,
        **prefixed("producer.", client),
        **prefixed("consumer.", client),
        **prefixed("admin.", client),
    }


@dataclass
class SecuredKafka:
    """A running secured cluster and the client properties to reach (or fail to reach) it."""

    cluster: KafkaCluster
    scratch: Path  # material for the bad credentials
    cli_output: str = ""  # what `sparklink kafka start` printed, when it started the cluster
    _foreign: ca.Issued | None = field(default=None, repr=False)

    @property
    def listeners(self) -> list[str]:
        return [lst.name for lst in self.cluster.listeners]

    def properties(self, listener: str, mechanism: str | None = None) -> dict[str, str]:
        """Good credentials for the default user on `listener`."""
        return self.cluster.access.client_properties(listener, mechanism=mechanism)

    def settings(self, listener: str, mechanism: str | None = None) -> KafkaClientSettings:
        return KafkaClientSettings.from_properties(self.properties(listener, mechanism))

    # ------------------------------------------------------------------------------- bad credentials
    def wrong_password(self, listener: str) -> dict[str, str]:
        props = self.properties(listener)
        props["sasl.jaas.config"] = props["sasl.jaas.config"].replace('password="', 'password="wrong-')
        return props

    def foreign_client_certificate(self, listener: str = "mtls") -> dict[str, str]:
        """A client certificate for the same user, signed by a CA the cluster does not know."""
        leaf = ca.issue(self.foreign_ca, "sparklink", client=True)
        return self._with_keystore(listener, "foreign-client.pem", leaf)

    def expired_client_certificate(self, listener: str = "mtls") -> dict[str, str]:
        """A client certificate from the cluster's clients CA that expired a week ago."""
        clients_ca = self.cluster.access.clients_ca
        issuer = ca.Issued.read(clients_ca.ca_cert, clients_ca.ca_key)
        past = dt.datetime.now(dt.UTC) - dt.timedelta(days=8)
        leaf = ca.issue(issuer, "sparklink", client=True, validity_days=1, now=past)
        return self._with_keystore(listener, "expired-client.pem", leaf)

    def no_client_certificate(self, listener: str = "mtls") -> dict[str, str]:
        props = self.properties(listener)
        del props["ssl.keystore.type"], props["ssl.keystore.location"]
        return props

    def untrusted_server(self, listener: str = "tls") -> dict[str, str]:
        """Trust a CA that did not sign the brokers' certificates."""
        path = self.scratch / "foreign-ca.crt"
        path.write_bytes(self.foreign_ca.cert_pem)
        return {**self.properties(listener), "ssl.truststore.location": str(path)}

    def unknown_mechanism(self, listener: str = "saslssl") -> dict[str, str]:
        """SCRAM-SHA-256, which no listener enables (the user's credentials are for SCRAM-SHA-512)."""
        props = self.properties(listener)
        return {**props, "sasl.mechanism": "SCRAM-SHA-256"}

    def plaintext_on_tls(self, listener: str = "tls") -> dict[str, str]:
        return {"bootstrap.servers": self.cluster.bootstrap(listener), "security.protocol": "PLAINTEXT"}

    @property
    def foreign_ca(self) -> ca.Issued:
        if self._foreign is None:
            self._foreign = ca.new_ca("foreign-ca", key_type=ca.KeyType.EC)
        return self._foreign

    def _with_keystore(self, listener: str, name: str, leaf: ca.Issued) -> dict[str, str]:
        path = self.scratch / name
        ca.write_private(path, leaf.key_pem + leaf.cert_pem)
        return {**self.properties(listener), "ssl.keystore.location": str(path)}


@contextmanager
def secured_cluster(prefix: str = "sparklink-secured-", heap: str = DEFAULT_HEAP) -> Iterator[SecuredKafka]:
    """The four-listener cluster; destroyed with its files afterwards, whatever happened."""
    state = Path(tempfile.mkdtemp(prefix=prefix))
    cluster = KafkaCluster.create(state / "cluster", heap=heap, listeners=LISTENERS)
    try:
        cluster.start(timeout=180)
        yield SecuredKafka(cluster, state)
    finally:
        cluster.destroy()
        shutil.rmtree(state, ignore_errors=True)


@contextmanager
def mtls_cluster(prefix: str = "sparklink-mtls-", heap: str = "384m") -> Iterator[SecuredKafka]:
    """One mutual-TLS listener, started through `sparklink kafka start -l mtls` (in this process)."""
    from typer.testing import CliRunner

    from sparklink.cli.main import app

    state = Path(tempfile.mkdtemp(prefix=prefix))
    args = ["kafka", "start", "--state-dir", str(state / "cluster"), "--heap", heap, "--listener", "mtls"]
    try:
        result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        yield SecuredKafka(KafkaCluster.load(state / "cluster"), state, result.output)
    finally:
        if (state / "cluster" / "cluster.json").exists():
            KafkaCluster.load(state / "cluster").destroy()
        shutil.rmtree(state, ignore_errors=True)
