"""The checks a connector config gets only from a worker of a group (Connect's DistributedHerder adds them to
AbstractHerder's validation). Caller: validation.validate, given a `GroupChecks` by the distributed herder.

- A sink's consumer group may not be the workers' own group (`group.id`): the sink's consumer would join
  the group that assigns connectors and tasks. Connect names the key the group came from: the override
  `consumer.override.group.id`, else `name` (the group is `connect-<name>`).
- `exactly.once.support=required` is refused: this worker has no exactly-once source mode (Connect's
  `exactly.once.source.support`), and, as in Connect, the connector's own answer (`exactlyOnceSupport`) is
  asked and reported as well, so the user learns both whether the worker and whether the connector could.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from sparklink.api.task_config import GROUP_ID_OVERRIDE, sink_group
from sparklink.worker.plugins.desc import PluginDesc

log = logging.getLogger(__name__)

EXACTLY_ONCE_SUPPORT = "exactly.once.support"
NO_EXACTLY_ONCE_WORKER = "This worker does not have exactly-once source support enabled."
NO_PREFLIGHT = (
    "The connector does not implement the API required for preflight validation of exactly-once source support. "
    "Please consult the documentation for the connector to determine whether it supports exactly-once semantics, "
    'and then consider reconfiguring the connector to use the value "requested" for this property (which will '
    "disable this preflight check and allow the connector to be created)."
)
UNSUPPORTED = "The connector does not support exactly-once semantics with the provided configuration."


@dataclass(frozen=True)
class GroupChecks:
    worker_group: str
    """The workers' `group.id`."""

    def add_errors(self, desc: PluginDesc, config: Mapping[str, str], errors: dict[str, list[str]]) -> None:
        """Add the group's errors to `errors` (per key), leaving keys that already have one alone."""
        if desc.type == "sink":
            self._sink_group(config, errors)
        elif desc.type == "source" and not errors.get(EXACTLY_ONCE_SUPPORT):
            self._exactly_once(desc, config, errors)

    def _sink_group(self, config: Mapping[str, str], errors: dict[str, list[str]]) -> None:
        name = config.get("name")
        if name is None and GROUP_ID_OVERRIDE not in config:
            return  # a validate request without a name: no group to compare yet
        group = sink_group(str(name), config)
        if group != self.worker_group:
            return
        if GROUP_ID_OVERRIDE in config:
            message = f"Consumer group {group} conflicts with Connect worker group {self.worker_group}"
            errors.setdefault(GROUP_ID_OVERRIDE, []).append(message)
        else:
            message = f"Consumer group for sink connector named {name} conflicts with Connect worker group "
            message += self.worker_group
            errors.setdefault("name", []).append(message)

    def _exactly_once(self, desc: PluginDesc, config: Mapping[str, str], errors: dict[str, list[str]]) -> None:
        if config.get(EXACTLY_ONCE_SUPPORT, "requested").strip().lower() != "required":
            return
        found = errors.setdefault(EXACTLY_ONCE_SUPPORT, [])
        found.append(NO_EXACTLY_ONCE_WORKER)
        try:
            answer = desc.exactly_once_support(config)
        except Exception as exc:  # the plugin's own failure, reported as Connect reports it
            log.error("Failed while validating connector support for exactly-once semantics", exc_info=True)
            text = str(exc).strip()
            found.append(
                f"An unexpected error occurred during validation: {text}"
                if text
                else "An unexpected error occurred during validation; please see the worker logs for more details."
            )
            return
        if answer is None:
            found.append(NO_PREFLIGHT)
        elif answer == "UNSUPPORTED":
            found.append(UNSUPPORTED)
