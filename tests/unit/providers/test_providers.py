"""Kafka's File, Directory and EnvVar config providers with KIP-993's allowed.paths and the env allow-list, and the
registry that declares them as Connect does and refuses what sparklink does not run."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from sparklink.worker.providers.registry import ConfigProviders, ProviderConfigError, UnresolvedError

KAFKA = "org.apache.kafka.common.config.provider."
SECRET = "pa55:w=rd"


def providers(**params: str) -> dict[str, str]:
    return {
        "config.providers": "file,dir,env",
        "config.providers.file.class": KAFKA + "FileConfigProvider",
        "config.providers.dir.class": KAFKA + "DirectoryConfigProvider",
        "config.providers.env.class": KAFKA + "EnvVarConfigProvider",
        **{f"config.providers.{k.replace('__', '.').replace('_', '.')}": v for k, v in params.items()},
    }


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    folder = tmp_path / "secrets"
    folder.mkdir()
    # Java properties escapes: `\:` and `\=` are the characters themselves.
    (folder / "db.properties").write_text("user=ada\npassword=pa55\\:w\\=rd\n")
    (folder / "token").write_text("tok-123\n")
    return folder


def test_file_directory_and_env_values_replace_their_placeholders(secrets: Path) -> None:
    registry = ConfigProviders.from_properties(providers())
    config = {
        "connection.password": f"${{file:{secrets}/db.properties:password}}",
        "token": f"${{dir:{secrets}:token}}",
        "home": "${env:HOME}/x",
        "plain": "${topic}",
    }
    assert registry.resolve(config) == {
        "connection.password": SECRET,
        "token": "tok-123\n",  # a file's content as written, newline included (Connect)
        "home": f"{os.environ['HOME']}/x",
        "plain": "${topic}",
    }


def test_a_missing_key_fails_naming_the_setting_provider_and_path_but_no_value(secrets: Path) -> None:
    registry = ConfigProviders.from_properties(providers())
    placeholder = f"${{file:{secrets}/db.properties:pasword}}"
    with pytest.raises(UnresolvedError) as caught:
        registry.resolve({"connection.password": placeholder})
    message = str(caught.value)
    assert f"connection.password: cannot resolve {placeholder}" in message
    assert f"the file provider has no key 'pasword' at {secrets}/db.properties" in message
    assert SECRET not in message and "pa55" not in message


def test_a_missing_file_fails_with_the_path(secrets: Path) -> None:
    registry = ConfigProviders.from_properties(providers())
    with pytest.raises(
        UnresolvedError, match=re.escape(f"could not read properties from file {secrets}/nope.properties")
    ):
        registry.resolve({"k": f"${{file:{secrets}/nope.properties:password}}"})


def test_allowed_paths_refuse_a_file_outside_them(secrets: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.properties"
    outside.write_text("password=elsewhere\n")
    registry = ConfigProviders.from_properties(providers(file_param_allowed__paths=str(secrets)))
    assert registry.resolve({"k": f"${{file:{secrets}/db.properties:user}}"}) == {"k": "ada"}
    for sneaky in (str(outside), f"{secrets}/../outside.properties"):
        with pytest.raises(
            UnresolvedError, match=re.escape(f"may not read {sneaky}: it is not under its allowed.paths")
        ):
            registry.resolve({"k": f"${{file:{sneaky}:password}}"})


def test_allowed_paths_refuse_a_link_that_leads_outside(secrets: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.properties"
    outside.write_text("password=elsewhere\n")
    (secrets / "link.properties").symlink_to(outside)
    registry = ConfigProviders.from_properties(providers(file_param_allowed__paths=str(secrets)))
    with pytest.raises(UnresolvedError, match=re.escape("not under its allowed.paths")):
        registry.resolve({"k": f"${{file:{secrets}/link.properties:password}}"})


def test_a_directory_key_cannot_step_out_of_its_directory(secrets: Path) -> None:
    registry = ConfigProviders.from_properties(providers(dir_param_allowed__paths=str(secrets.parent)))
    with pytest.raises(UnresolvedError, match=re.escape("the dir provider has no key '../secrets/token'")):
        registry.resolve({"k": f"${{dir:{secrets}:../secrets/token}}"})


def test_allowed_paths_must_be_absolute_and_exist(tmp_path: Path) -> None:
    with pytest.raises(ProviderConfigError, match=re.escape("Path relative/dir is not absolute")):
        ConfigProviders.from_properties(providers(file_param_allowed__paths="relative/dir"))
    with pytest.raises(ProviderConfigError, match=re.escape(f"Path {tmp_path}/gone does not exist")):
        ConfigProviders.from_properties(providers(file_param_allowed__paths=f"{tmp_path}/gone"))


def test_the_env_allowlist_refuses_a_variable_outside_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APP_DB_PASSWORD", "from-env")
    monkeypatch.setenv("OTHER_SECRET", "not-for-connectors")
    registry = ConfigProviders.from_properties(providers(env_param_allowlist_pattern="APP_.*"))
    assert registry.resolve({"k": "${env:APP_DB_PASSWORD}"}) == {"k": "from-env"}
    with pytest.raises(UnresolvedError) as caught:
        registry.resolve({"k": "${env:OTHER_SECRET}"})
    assert "may not read environment variable OTHER_SECRET: it does not match its allowlist.pattern (APP_.*)" in str(
        caught.value
    )
    assert "not-for-connectors" not in str(caught.value)
    with pytest.raises(
        UnresolvedError, match=re.escape("Path is not supported for EnvVarConfigProvider, invalid value '/x'")
    ):
        registry.resolve({"k": "${env:/x:APP_DB_PASSWORD}"})


def test_lenient_resolution_leaves_what_it_cannot_resolve(secrets: Path) -> None:
    registry = ConfigProviders.from_properties(providers())
    config = {"a": f"${{file:{secrets}/db.properties:user}}", "b": f"${{file:{secrets}/db.properties:nope}}"}
    assert registry.resolve(config, strict=False) == {"a": "ada", "b": config["b"]}


def test_placeholders_of_undeclared_providers_pass_as_written() -> None:
    registry = ConfigProviders.from_properties(providers())
    assert registry.resolve({"k": "${vault:secret/db:pw}"}) == {"k": "${vault:secret/db:pw}"}
    assert registry.undeclared({"k": "${vault:secret/db:pw}", "t": "${topic}"}) == ["k: ${vault:secret/db:pw}"]
    assert ConfigProviders.from_properties({}).resolve({"k": "${file:/p:k}"}) == {"k": "${file:/p:k}"}


def test_a_java_provider_class_is_refused_naming_the_ones_sparklink_has() -> None:
    props = {"config.providers": "vault", "config.providers.vault.class": "com.example.VaultConfigProvider"}
    with pytest.raises(ProviderConfigError) as caught:
        ConfigProviders.from_properties(props)
    message = str(caught.value)
    assert message.startswith(
        "Invalid value com.example.VaultConfigProvider for configuration config.providers.vault.class: "
        "sparklink runs no Java config providers"
    )
    assert "io.strimzi.kafka.KubernetesSecretConfigProvider" in message and KAFKA + "FileConfigProvider" in message
    with pytest.raises(ProviderConfigError, match=re.escape("config.providers.x.class is not set")):
        ConfigProviders.from_properties({"config.providers": "x"})
