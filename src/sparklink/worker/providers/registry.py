"""The config providers a worker declares, and resolving placeholders with them (Kafka's ConfigTransformer).

Declared as in Connect (`config.providers=file,env`, `config.providers.<name>.class=<Java class>`,
`config.providers.<name>.param.<k>=<v>`). sparklink runs no Java providers: it implements Kafka's three
(FileConfigProvider, DirectoryConfigProvider, EnvVarConfigProvider) and Strimzi's two Kubernetes ones under
their class names, and refuses any other class at start, naming the ones it has.

`resolve` replaces every placeholder whose provider is declared; a placeholder of an undeclared provider
stays as written (Connect's behaviour: `${...}` may be literal text). Where Connect leaves a placeholder it
could not resolve (a missing key, a refused path) in the value, `resolve` raises `UnresolvedError` naming
the setting, the placeholder and why, never a value; `resolve(..., strict=False)` leaves such placeholders
as written instead (for validation, which must not fail a create on them). Callers: the worker's settings
(worker/config.py), the herder for connector and task configs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from sparklink.worker.providers import references
from sparklink.worker.providers.base import ConfigProvider, ProviderError
from sparklink.worker.providers.env import EnvVarConfigProvider
from sparklink.worker.providers.files import AllowedPathsError, DirectoryConfigProvider, FileConfigProvider
from sparklink.worker.providers.kubernetes import KubernetesConfigMapConfigProvider, KubernetesSecretConfigProvider

__all__ = ["CONFIG_PROVIDERS", "ConfigProviders", "ProviderConfigError", "UnresolvedError"]

log = logging.getLogger(__name__)

CONFIG_PROVIDERS = "config.providers"
_KAFKA = "org.apache.kafka.common.config.provider."
CLASSES: dict[str, Callable[[str, Mapping[str, str]], ConfigProvider]] = {
    _KAFKA + "FileConfigProvider": FileConfigProvider,
    _KAFKA + "DirectoryConfigProvider": DirectoryConfigProvider,
    _KAFKA + "EnvVarConfigProvider": EnvVarConfigProvider,
    "io.strimzi.kafka.KubernetesSecretConfigProvider": KubernetesSecretConfigProvider,
    "io.strimzi.kafka.KubernetesConfigMapConfigProvider": KubernetesConfigMapConfigProvider,
}


class ProviderConfigError(ValueError):
    """`config.providers*` settings the worker cannot start with; the message names the setting."""


class UnresolvedError(ValueError):
    """Placeholders that could not be resolved; the message names each setting, placeholder and reason."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


def is_provider_key(key: str) -> bool:
    """`config.providers` and `config.providers.*`: the worker's declarations, never a connector's."""
    return key == CONFIG_PROVIDERS or key.startswith(CONFIG_PROVIDERS + ".")


@dataclass
class ConfigProviders:
    """The declared providers by name; empty when the worker declares none."""

    providers: dict[str, ConfigProvider] = field(default_factory=dict)

    @classmethod
    def from_properties(cls, props: Mapping[str, object]) -> ConfigProviders:
        """Build and configure the providers `props` declares; raises ProviderConfigError."""
        names = [n.strip() for n in str(props.get(CONFIG_PROVIDERS) or "").split(",") if n.strip()]
        providers: dict[str, ConfigProvider] = {}
        try:
            for name in names:
                class_key = f"{CONFIG_PROVIDERS}.{name}.class"
                class_name = str(props.get(class_key) or "").strip()
                if not class_name:
                    raise ProviderConfigError(f"{class_key} is not set: config.providers names {name!r}")
                factory = CLASSES.get(class_name)
                if factory is None:
                    raise ProviderConfigError(
                        f"Invalid value {class_name} for configuration {class_key}: sparklink runs no Java config "
                        f"providers; it has {', '.join(sorted(CLASSES))}"
                    )
                prefix = f"{CONFIG_PROVIDERS}.{name}.param."
                params = {k[len(prefix) :]: str(v) for k, v in props.items() if k.startswith(prefix) and v is not None}
                try:
                    providers[name] = factory(name, params)
                except (AllowedPathsError, ValueError) as exc:
                    raise ProviderConfigError(
                        f"Invalid parameters for config provider {name} ({class_name}): {exc}"
                    ) from None
        except ProviderConfigError:
            for provider in providers.values():
                provider.close()
            raise
        return cls(providers)

    def __bool__(self) -> bool:
        return bool(self.providers)

    def resolve(self, config: Mapping[str, str | None], strict: bool = True) -> dict[str, str | None]:
        """`config` with every placeholder of a declared provider replaced by its value."""
        if not self.providers:
            return dict(config)
        wanted: dict[tuple[str, str], set[str]] = {}
        for value in config.values():
            for ref in references.find(value or ""):
                if ref.provider in self.providers:
                    wanted.setdefault((ref.provider, ref.path), set()).add(ref.key)
        found: dict[tuple[str, str], Mapping[str, str]] = {}
        failed: dict[tuple[str, str], str] = {}
        for (provider, path), keys in wanted.items():
            try:
                found[(provider, path)] = self.providers[provider].get(path, keys)
            except ProviderError as exc:
                failed[(provider, path)] = str(exc)
        problems: list[str] = []

        def lookup_in(setting: str) -> Callable[[references.Reference], str | None]:
            def lookup(ref: references.Reference) -> str | None:
                if ref.provider not in self.providers:
                    return None
                where = (ref.provider, ref.path)
                if where in failed:
                    problems.append(f"{setting}: cannot resolve {ref.text}: {failed[where]}")
                    return None
                value = found[where].get(ref.key)
                if value is None:
                    problems.append(f"{setting}: cannot resolve {ref.text}: {_missing(ref)}")
                return value

            return lookup

        resolved = {k: None if v is None else references.substitute(v, lookup_in(k)) for k, v in config.items()}
        if problems and strict:
            raise UnresolvedError(problems)
        for problem in problems:
            log.warning("placeholder left as written: %s", problem)
        return resolved

    def undeclared(self, config: Mapping[str, str | None]) -> list[str]:
        """Placeholders naming a provider this worker does not declare (passed on as written)."""
        return sorted(
            {
                f"{k}: {ref.text}"
                for k, v in config.items()
                for ref in references.find(v or "")
                if ref.provider not in self.providers
            }
        )

    def close(self) -> None:
        for provider in self.providers.values():
            try:
                provider.close()
            except Exception:
                log.debug("closing config provider %s", provider.name, exc_info=True)


def _missing(ref: references.Reference) -> str:
    if ref.path:
        return f"the {ref.provider} provider has no key {ref.key!r} at {ref.path}"
    return f"the {ref.provider} provider has no key {ref.key!r}"
