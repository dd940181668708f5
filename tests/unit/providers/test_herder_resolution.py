"""The herder resolves placeholders at connector and task start, keeps them in the stores and the REST answers,
fails what cannot be resolved with a message that names the provider and path, and hides passwords in validate."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from sparklink.api.connector import ConnectorContext
from sparklink.api.states import State
from sparklink.worker.config import WorkerConfig
from sparklink.worker.herder.herder import StandaloneHerder, Stores
from sparklink.worker.plugins import Plugins
from sparklink.worker.storage.backend import MemoryBackend
from sparklink.worker.storage.config import ConfigStore
from sparklink.worker.storage.group_offsets import MemoryGroupOffsetStore
from sparklink.worker.storage.offsets import OffsetStore
from sparklink.worker.storage.status import StatusStore
from sparklink.worker.task_events import TaskEvents
from tests.unit.test_herder import TwinWorker

PASSWORD = "pg-s3cret-pw"
FILE = "org.apache.kafka.common.config.provider.FileConfigProvider"


class RecordingWorker(TwinWorker):
    """The herder's twin worker, remembering the configs it was given."""

    def __init__(self, plugins: Plugins) -> None:
        super().__init__(plugins)
        self.connector_configs: dict[str, Mapping[str, str]] = {}
        self.task_configs: dict[tuple[str, int], tuple[Mapping[str, str], Mapping[str, str] | None]] = {}

    def start_connector(self, name: str, config: Mapping[str, str], context: ConnectorContext) -> None:
        super().start_connector(name, config, context)
        self.connector_configs[name] = dict(config)

    def start_task(
        self,
        name: str,
        task_id: int,
        config: dict[str, str],
        events: TaskEvents,
        connector_config: Mapping[str, str] | None = None,
    ) -> None:
        super().start_task(name, task_id, config, events, connector_config)
        self.task_configs[(name, task_id)] = (dict(config), connector_config)


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    folder = tmp_path / "secrets"
    folder.mkdir()
    (folder / "db.properties").write_text(f"password={PASSWORD}\nschema=id BIGINT\n")
    return folder


@pytest.fixture
def herder(secrets: Path) -> Iterator[StandaloneHerder]:
    plugins = Plugins()
    stores = Stores(
        ConfigStore(MemoryBackend()),
        StatusStore(MemoryBackend()),
        OffsetStore(MemoryBackend()),
        MemoryGroupOffsetStore(),
    )
    config = WorkerConfig.model_validate(
        {
            "config.providers": "file",
            "config.providers.file.class": FILE,
            "config.providers.file.param.allowed.paths": str(secrets),
        }
    )
    herder = StandaloneHerder(config, stores, RecordingWorker(plugins), plugins, cluster_id="twin")
    herder.start()
    yield herder
    herder.stop()


def jdbc_sink(secrets: Path, **extra: str) -> dict[str, str]:
    return {
        "name": "pg",
        "connector.class": "jdbc-sink",
        "topics": "t",
        "tasks.max": "2",
        "connection.url": "jdbc:postgresql://127.0.0.1:5432/db",
        "connection.password": f"${{file:{secrets}/db.properties:password}}",
        "value.schema": f"${{file:{secrets}/db.properties:schema}}",
        **extra,
    }


def recorded(herder: StandaloneHerder) -> RecordingWorker:
    assert isinstance(herder.worker, RecordingWorker)
    return herder.worker


def test_connector_and_tasks_start_resolved_while_stores_and_answers_keep_placeholders(
    herder: StandaloneHerder, secrets: Path
) -> None:
    config = jdbc_sink(secrets)
    herder.create_connector("pg", config)
    worker = recorded(herder)
    assert worker.connector_configs["pg"]["connection.password"] == PASSWORD
    for task_id in (0, 1):
        task, connector = worker.task_configs[("pg", task_id)]
        assert task["connection.password"] == PASSWORD and task["value.schema"] == "id BIGINT"
        assert connector is not None and connector["connection.password"] == PASSWORD
    # The config topic (store), GET /config and /tasks hold the placeholders, never the value.
    assert herder.configs.connector_config("pg") == config
    assert all(c["connection.password"] == config["connection.password"] for c in herder.configs.task_configs("pg"))
    assert all(t.config["value.schema"] == config["value.schema"] for t in herder.task_configs("pg"))
    assert PASSWORD not in repr(herder.connector_info("pg"))


def test_a_path_outside_allowed_paths_fails_the_connector_at_start_saying_why(
    herder: StandaloneHerder, secrets: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.properties"
    outside.write_text(f"password={PASSWORD}\n")
    herder.create_connector("pg", jdbc_sink(secrets, **{"connection.password": f"${{file:{outside}:password}}"}))
    status = herder.connector_status("pg")
    assert status.connector.state is State.FAILED and status.tasks == []
    trace = status.connector.trace or ""
    assert f"connection.password: cannot resolve ${{file:{outside}:password}}" in trace
    assert f"the file provider may not read {outside}: it is not under its allowed.paths ({secrets})" in trace
    assert PASSWORD not in trace


def test_a_missing_key_fails_a_restarted_task_and_the_value_never_shows(
    herder: StandaloneHerder, secrets: Path
) -> None:
    herder.create_connector("pg", jdbc_sink(secrets))
    (secrets / "db.properties").write_text("schema=id BIGINT\n")  # the password is gone
    herder.restart_task("pg", 1)
    status = herder.task_status("pg", 1)
    assert status.state is State.FAILED
    assert "The config of task pg-1 could not be resolved: connection.password: cannot resolve" in (status.trace or "")


def test_validate_hides_passwords_and_shows_placeholders_for_resolved_values(
    herder: StandaloneHerder, secrets: Path
) -> None:
    (secrets / "bad.properties").write_text("mode=sometimes\n")
    config = jdbc_sink(
        secrets,
        **{
            "insert.mode": f"${{file:{secrets}/bad.properties:mode}}",
            "config.providers": "mine",  # a connector may not declare providers (Connect 4.4 strips these)
        },
    )
    answer = herder.validate("jdbc-sink", config)
    values = {c.value.name: c.value for c in answer.configs}
    assert values["connection.password"].value == "[hidden]" and not values["connection.password"].errors
    assert values["value.schema"].value == config["value.schema"] and not values["value.schema"].errors
    mode = values["insert.mode"]
    assert mode.value == config["insert.mode"] and mode.recommended_values == []
    assert mode.errors == [
        "Invalid value for configuration 'insert.mode': the value resolved from the config provider reference "
        "failed validation"
    ]
    assert "sometimes" not in answer.model_dump_json() and PASSWORD not in answer.model_dump_json()
    assert "config.providers" not in values and answer.error_count == 1


def test_a_literal_password_is_hidden_in_validate_and_in_errors(herder: StandaloneHerder, secrets: Path) -> None:
    config = jdbc_sink(secrets, **{"connection.password": "literal-pw-123", "connection.url": "mysql://literal-pw-123"})
    answer = herder.validate("jdbc-sink", config)
    values = {c.value.name: c.value for c in answer.configs}
    assert values["connection.password"].value == "[hidden]"
    # The URL is no secret (shown as given), but an error quoting it does not repeat the password.
    assert values["connection.url"].errors == [
        "Invalid value mysql://[hidden] for configuration connection.url: expected a URL starting with jdbc:postgresql:"
    ]
