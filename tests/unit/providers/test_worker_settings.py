"""Worker properties resolve their placeholders once, where they are read (KIP-421), and never show a secret."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from sparklink.worker.assembly import log_settings
from sparklink.worker.config import WorkerConfig, WorkerConfigError

FILE = "org.apache.kafka.common.config.provider.FileConfigProvider"
JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="connect" password="w0rker-pw";'


@pytest.fixture
def creds(tmp_path: Path) -> Path:
    path = tmp_path / "kafka-client.properties"
    path.write_text(f"jaas={JAAS}\nprotocol=SASL_SSL\n")
    return path


def props(creds: Path, **extra: str) -> dict[str, str]:
    return {
        "config.providers": "file",
        "config.providers.file.class": FILE,
        "config.providers.file.param.allowed.paths": str(creds.parent),
        "security.protocol": f"${{file:{creds}:protocol}}",
        "sasl.jaas.config": f"${{file:{creds}:jaas}}",
        "producer.sasl.jaas.config": f"${{file:{creds}:jaas}}",
        **extra,
    }


def test_worker_client_settings_come_resolved_from_a_file(creds: Path) -> None:
    config = WorkerConfig.model_validate(props(creds))
    extra = config.model_extra or {}
    assert extra["sasl.jaas.config"] == JAAS and extra["producer.sasl.jaas.config"] == JAAS
    assert extra["security.protocol"] == "SASL_SSL"
    # The declarations stay, for the connectors' providers; secrets stay out of the repr.
    assert extra["config.providers.file.class"] == FILE
    assert "w0rker-pw" not in repr(config)


def test_from_properties_resolves_a_properties_file(creds: Path, tmp_path: Path) -> None:
    worker = tmp_path / "worker.properties"
    worker.write_text("".join(f"{k}={v}\n" for k, v in props(creds).items()))
    assert (WorkerConfig.from_properties(worker).model_extra or {})["sasl.jaas.config"] == JAAS


def test_an_unresolvable_worker_setting_stops_the_start_naming_it_but_no_value(creds: Path) -> None:
    with pytest.raises(WorkerConfigError) as caught:
        WorkerConfig.from_properties(None, props(creds, **{"ssl.key.password": f"${{file:{creds}:keypass}}"}))
    message = str(caught.value)
    assert (
        f"ssl.key.password: cannot resolve ${{file:{creds}:keypass}}: the file provider has no key 'keypass'" in message
    )
    assert "w0rker-pw" not in message


def test_an_unknown_provider_class_stops_the_start() -> None:
    with pytest.raises(
        WorkerConfigError, match=re.escape("config.providers.vault.class: sparklink runs no Java config providers")
    ):
        WorkerConfig.from_properties(
            None, {"config.providers": "vault", "config.providers.vault.class": "com.example.Vault"}
        )


def test_the_settings_logged_at_start_hide_secrets(creds: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = WorkerConfig.model_validate(props(creds))
    with caplog.at_level(logging.INFO, logger="sparklink.worker.assembly"):
        log_settings(config)
    assert "sasl.jaas.config = [hidden]" in caplog.text and "security.protocol = SASL_SSL" in caplog.text
    assert "w0rker-pw" not in caplog.text
    # Any later record that quotes the secret (a client's error, a trace) is cleaned too.
    with caplog.at_level(logging.INFO):
        logging.getLogger("some.client").error("login failed with %s", JAAS)
    assert "w0rker-pw" not in caplog.text and "login failed with [hidden]" in caplog.text
