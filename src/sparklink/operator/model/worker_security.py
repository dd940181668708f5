"""The credentials of a Connect worker group and of its MirrorMaker 2 clusters, and what the worker may read.

A KafkaConnect has one `ClientAuth` (its `spec.tls` / `spec.authentication`); a KafkaMirrorMaker2 has the
target's (the workers' own connection, `spec.target`) and one per `spec.mirrors[i].source`. Their
`Material` becomes files of the worker's credentials directory: the target's at its top, source `i`'s in
`source-<i>/` (an index, not the alias, names it: an alias is free text). Strimzi's
KafkaMirrorMaker2Connectors writes each cluster's client settings once under `source.cluster.` /
`target.cluster.` in every connector's config, the password and key as config-provider placeholders;
`connector_settings` does the same, pointing a local worker at the files and a pod at its Secrets.

On the local runtime a worker runs as the operator's user, so a file-reading config provider that a
resource declares in `config` (Kafka's FileConfigProvider or DirectoryConfigProvider, which Strimzi allows)
could read any file the operator can. `local_settings` confines each one with KIP-993's `allowed.paths` to
the worker's credentials directory (the resource's own value is replaced, with a Warning from
`provider_warnings`). Pure; callers: `model.workers`, `reconcile.connect_workers`, `reconcile.mirror_maker_2`
and the hosts.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparklink.operator.model.client_auth import (
    KUBERNETES_PROVIDER,
    LOCAL_PROVIDER,
    Material,
    provider_settings,
)
from sparklink.operator.model.conditions import Condition, warning
from sparklink.operator.model.workers import WorkerSettings

TARGET_PREFIX, SOURCE_PREFIX = "target.cluster.", "source.cluster."
PROVIDERS = "config.providers"
ALLOWED_PATHS = "allowed.paths"
# The config providers of Kafka that read files by a path the placeholder names.
FILE_PROVIDERS = frozenset(
    {
        "org.apache.kafka.common.config.provider.FileConfigProvider",
        "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
    }
)
REASON_PROVIDER = "ConfigProviderConfined"


def credential_files(settings: WorkerSettings) -> dict[str, bytes]:
    """Every file of the credentials directory, by path relative to it (never printed)."""
    files = dict(settings.material.files) if settings.client_auth and settings.material else {}
    for source in settings.sources:
        if source.material is not None:
            files |= {f"{source.directory}/{name}": data for name, data in source.material.files.items()}
    return files


def local_settings(settings: WorkerSettings, directory: str, group_directory: str) -> dict[str, str]:
    """What a local worker adds to its properties: its own client security read from `directory` (its own
    credentials), sparklink's provider declared for the sources' placeholders (which name the files in
    `group_directory`, the first worker's, as the connectors' config is shared by the group), and every
    file provider of the resource's `config` confined to those directories."""
    user_providers = settings.config.get(PROVIDERS)
    out = settings.client_auth.local_settings(directory, user_providers) if settings.client_auth else {}
    allowed = ",".join(dict.fromkeys((directory, group_directory)))
    if any(s.auth.needs_provider for s in settings.sources) or out.get(PROVIDERS):
        out |= provider_settings(LOCAL_PROVIDER, user_providers, {_allowed_key(LOCAL_PROVIDER): allowed})
    for name in file_providers(settings.config):
        out[_allowed_key(name)] = allowed
    return out


def kubernetes_settings(settings: WorkerSettings, namespace: str) -> dict[str, str]:
    """What a worker pod adds to its properties (the sources' placeholders need the Secret provider)."""
    user_providers = settings.config.get(PROVIDERS)
    out: dict[str, str] = {}
    if settings.client_auth is not None and settings.material is not None:
        out = settings.client_auth.kubernetes_settings(namespace, user_providers, settings.material)
    declared = out.get(PROVIDERS, user_providers)
    if any(s.auth.needs_provider for s in settings.sources) and KUBERNETES_PROVIDER not in _names(declared):
        out |= provider_settings(KUBERNETES_PROVIDER, declared, {})
    return out


def connector_settings(
    settings: WorkerSettings, group_directory: str | None, namespace: str
) -> tuple[dict[str, str], dict[int, dict[str, str]]]:
    """The `target.cluster.` settings and each mirror's `source.cluster.` settings of the connectors' config;
    `group_directory` is the local workers' shared credentials directory (None: the workers run in pods)."""
    target: dict[str, str] = {}
    if settings.client_auth is not None:
        target = settings.client_auth.cluster_settings(
            TARGET_PREFIX, group_directory, namespace, settings.material or Material()
        )
    sources = {
        s.index: s.auth.cluster_settings(
            SOURCE_PREFIX,
            None if group_directory is None else f"{group_directory}/{s.directory}",
            namespace,
            s.material or Material(),
        )
        for s in settings.sources
    }
    return target, sources


def file_providers(config: Mapping[str, str]) -> list[str]:
    """The providers `config` declares whose class reads files by path."""
    return [
        n for n in _names(config.get(PROVIDERS)) if config.get(f"{PROVIDERS}.{n}.class", "").strip() in FILE_PROVIDERS
    ]


def _names(providers: str | None) -> list[str]:
    return [n.strip() for n in (providers or "").split(",") if n.strip()]


def provider_warnings(config: Mapping[str, str]) -> tuple[Condition, ...]:
    """On the local runtime: a Warning for each file provider whose `allowed.paths` the resource set (it is
    replaced by the worker's credentials directory, so a placeholder cannot read the operator's files)."""
    return tuple(
        warning(
            REASON_PROVIDER,
            f'Configuration option "{_allowed_key(name)}" was replaced: on the local runtime the file provider '
            f"'{name}' may read only the worker's credentials directory (the files of spec.tls and "
            "spec.authentication); run the workers on Kubernetes to read files of their pods",
        )
        for name in file_providers(config)
        if _allowed_key(name) in config
    )


def _allowed_key(provider: str) -> str:
    return f"{PROVIDERS}.{provider}.param.{ALLOWED_PATHS}"
