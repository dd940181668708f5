"""Connect's EnvVarConfigProvider: `${env:NAME}` (or `${env::NAME}`) is the worker's environment variable NAME.

`allowlist.pattern` (a regular expression the whole name must match; `.*` when unset) limits which
variables placeholders may read. The environment is read when the provider is configured, at worker start,
as Connect reads it in its constructor. A path (`${env:/x:NAME}`) is refused, as in Connect. Unlike Connect,
which answers nothing for a variable outside the allow-list, the refusal says so. Caller: registry.py.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping

from sparklink.worker.providers.base import ProviderError

__all__ = ["ALLOWLIST_PATTERN", "EnvVarConfigProvider"]

ALLOWLIST_PATTERN = "allowlist.pattern"
log = logging.getLogger(__name__)


class EnvVarConfigProvider:
    """`org.apache.kafka.common.config.provider.EnvVarConfigProvider`."""

    def __init__(self, name: str, params: Mapping[str, str], environ: Mapping[str, str] | None = None) -> None:
        self.name = name
        if ALLOWLIST_PATTERN in params:
            self.pattern_text = params[ALLOWLIST_PATTERN]
        else:
            self.pattern_text = ".*"
            log.info("No pattern for environment variables provided. Using default pattern '(.*)'.")
        try:
            self.pattern = re.compile(self.pattern_text)
        except re.error as exc:
            raise ValueError(f"{ALLOWLIST_PATTERN} {self.pattern_text!r} is not a regular expression: {exc}") from None
        source = os.environ if environ is None else environ
        self.variables = {k: v for k, v in source.items() if self.pattern.fullmatch(k)}

    def get(self, path: str, keys: set[str]) -> Mapping[str, str]:
        if path:
            raise ProviderError(f"Path is not supported for EnvVarConfigProvider, invalid value '{path}'")
        refused = sorted(k for k in keys if not self.pattern.fullmatch(k))
        if refused:
            raise ProviderError(
                f"the {self.name} provider may not read environment variable {refused[0]}: it does not match its "
                f"allowlist.pattern ({self.pattern_text}); use a variable it matches or widen "
                f"config.providers.{self.name}.param.allowlist.pattern in the worker's properties"
            )
        return {k: self.variables[k] for k in keys if k in self.variables}

    def close(self) -> None:
        pass
