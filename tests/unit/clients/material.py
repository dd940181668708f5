"""TLS material for the client-settings unit tests: a CA, a client certificate as PEM, PKCS12 and JKS files."""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from sparklink.platform import ca

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


@dataclass(frozen=True)
class Material:
    dir: Path
    ca_pem: str
    cert_pem: str
    key_pem: str
    ca_file: Path
    keystore_pem: Path  # key + certificate in one PEM file
    keystore_p12: Path  # password "store-pw"
    truststore_p12: Path  # password "trust-pw"


def make(tmp: Path, *, expired: bool = False) -> Material:
    authority = ca.new_ca("unit-ca", key_type=ca.KeyType.EC)
    now = dt.datetime.now(dt.UTC) - dt.timedelta(days=30) if expired else None
    leaf = ca.issue(authority, "alice", client=True, validity_days=1 if expired else 30, now=now)
    ca_file = tmp / "ca.crt"
    ca_file.write_bytes(authority.cert_pem)
    keystore_pem = tmp / "alice.pem"
    ca.write_private(keystore_pem, leaf.key_pem + leaf.cert_pem)
    key = serialization.load_pem_private_key(leaf.key_pem, None)
    cert = leaf.certificate
    p12 = pkcs12.serialize_key_and_certificates(
        b"alice",
        key,
        cert,
        None,
        serialization.BestAvailableEncryption(b"store-pw"),  # type: ignore[arg-type]
    )
    keystore_p12 = tmp / "alice.p12"
    keystore_p12.write_bytes(p12)
    trust = pkcs12.serialize_java_truststore(
        [pkcs12.PKCS12Certificate(authority.certificate, b"ca")], serialization.BestAvailableEncryption(b"trust-pw")
    )
    truststore_p12 = tmp / "trust.p12"
    truststore_p12.write_bytes(trust)
    return Material(
        tmp,
        authority.cert_pem.decode(),
        leaf.cert_pem.decode(),
        leaf.key_pem.decode(),
        ca_file,
        keystore_pem,
        keystore_p12,
        truststore_p12,
    )


def to_jks(source: Path, password: str, target: Path) -> Path:
    """A JKS copy of a PKCS12 store, made with the JDK's keytool (as users have them)."""
    keytool = shutil.which("keytool")
    assert keytool, "the unit tests need a JDK (keytool); the bootstrap needs one too"
    subprocess.run(
        [
            keytool,
            "-importkeystore",
            "-noprompt",
            "-srckeystore",
            str(source),
            "-srcstoretype",
            "PKCS12",
            "-srcstorepass",
            password,
            "-destkeystore",
            str(target),
            "-deststoretype",
            "JKS",
            "-deststorepass",
            password,
        ],
        check=True,
        capture_output=True,
    )
    return target


def jaas(module: str, **options: str) -> str:
    return f"{module} required " + " ".join(f'{k}="{v}"' for k, v in options.items()) + ";"
