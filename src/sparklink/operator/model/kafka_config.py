"""Kafka broker settings as the operator handles them: forbidden options, validation against Kafka's
configuration model, and the settings that matter to controller-only nodes. Pure: the model's facts (read
from the jars by `sparklink.platform.kafka_config_model`) come in as data.

Strimzi's rules, kept so that manifests behave the same:
- options the operator owns (listeners, node.id, process.roles, log.dirs, security, ...) are forbidden in
  `spec.kafka.config`; they are dropped, each with a Warning condition (Strimzi drops them with a log line);
  a key or value with a line break or control character refuses the cluster's change as a whole
  (`model.config_safety`, applied by `model.kafka`);
- every other known option is validated by its type and validator: "num.io.threads has value 'x' which is
  not an int" (ConfigModel.validate); unknown options pass (they may be meant for plugins);
- a controller-only node runs only the options relevant to controllers (KafkaConfigurationDiff's list), so
  changing a broker-only option never restarts a controller.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sparklink.operator.model.resources import config_value

FORBIDDEN_PREFIXES = (
    "listeners", "advertised.", "broker.", "listener.", "host.name", "port", "inter.broker.listener.name", "sasl.",
    "ssl.", "security.", "password.", "log.dir", "zookeeper.connect", "zookeeper.set.acl", "zookeeper.ssl",
    "zookeeper.clientCnxnSocket", "authorizer.", "super.user", "cruise.control.metrics.topic",
    "cruise.control.metrics.reporter.bootstrap.servers", "node.id", "process.roles", "controller.", "metadata.log.dir",
    "zookeeper.metadata.migration.enable", "client.quota.callback.static.kafka.admin.",
    "client.quota.callback.static.produce", "client.quota.callback.static.fetch",
    "client.quota.callback.static.storage.per.volume.limit.min.available.",
    "client.quota.callback.static.excluded.principal.name.list", "prometheus.metrics.reporter.", "cordoned.log.dirs",
)  # fmt: skip
FORBIDDEN_EXCEPTIONS = frozenset(
    {
        "zookeeper.connection.timeout.ms", "sasl.server.max.receive.size", "ssl.cipher.suites", "ssl.protocol",
        "ssl.enabled.protocols", "ssl.secure.random.implementation", "cruise.control.metrics.topic.num.partitions",
        "cruise.control.metrics.topic.replication.factor", "cruise.control.metrics.topic.retention.ms",
        "cruise.control.metrics.topic.auto.create.retries", "cruise.control.metrics.topic.auto.create.timeout.ms",
        "cruise.control.metrics.topic.min.insync.replicas", "broker.session.timeout.ms",
        "broker.heartbeat.interval.ms", "controller.socket.timeout.ms", "controller.quorum.election.backoff.max.ms",
        "controller.quorum.election.timeout.ms", "controller.quorum.fetch.timeout.ms",
    }
)  # fmt: skip
# Strimzi's KafkaConfigurationDiff.CONTROLLER_RELEVANT_PROPERTIES, less what is forbidden above anyway.
CONTROLLER_RELEVANT = frozenset(
    {
        "alter.config.policy.class.name", "auto.create.topics.enable", "background.threads",
        "broker.heartbeat.interval.ms", "broker.session.timeout.ms", "connection.failed.authentication.delay.ms",
        "connections.max.idle.ms", "connections.max.reauth.ms", "controlled.shutdown.enable",
        "controlled.shutdown.max.retries", "controlled.shutdown.retry.backoff.ms",
        "controller.quorum.append.linger.ms", "controller.quorum.election.backoff.max.ms",
        "controller.quorum.election.timeout.ms", "controller.quorum.fetch.timeout.ms",
        "controller.quorum.request.timeout.ms", "controller.quorum.retry.backoff.ms", "controller.quota.window.num",
        "controller.quota.window.size.seconds", "controller.socket.timeout.ms", "create.topic.policy.class.name",
        "default.replication.factor", "delete.topic.enable", "early.start.listeners",
        "kafka.metrics.polling.interval.secs", "kafka.metrics.reporters", "leader.imbalance.check.interval.seconds",
        "leader.imbalance.per.broker.percentage", "min.insync.replicas", "max.connection.creation.rate",
        "max.connections.per.ip.overrides", "max.connections.per.ip", "max.connections",
        "metadata.log.max.record.bytes.between.snapshots", "metadata.log.max.snapshot.interval.ms",
        "metadata.log.segment.bytes", "metadata.log.segment.min.bytes", "metadata.log.segment.ms",
        "metadata.max.idle.interval.ms", "metadata.max.retention.bytes", "metadata.max.retention.ms",
        "metric.reporters", "metrics.num.samples", "metrics.recording.level", "metrics.sample.window.ms",
        "num.io.threads", "num.network.threads", "num.partitions", "offsets.topic.replication.factor",
        "principal.builder.class", "replica.selector.class", "reserved.broker.max.id", "sasl.server.max.receive.size",
        "security.providers", "server.max.startup.time.ms", "socket.connection.setup.timeout.max.ms",
        "socket.connection.setup.timeout.ms", "socket.listen.backlog.size", "socket.receive.buffer.bytes",
        "socket.request.max.bytes", "socket.send.buffer.bytes", "ssl.cipher.suites", "ssl.enabled.protocols",
        "ssl.protocol", "ssl.secure.random.implementation", "transaction.state.log.min.isr",
        "transaction.state.log.replication.factor", "queued.max.requests", "queued.max.requests.bytes",
        "unclean.leader.election.enable",
    }
)  # fmt: skip
# Strimzi checks that these do not ask for more replicas than there are brokers.
REPLICA_COUNT_OPTIONS = (
    "default.replication.factor",
    "offsets.topic.replication.factor",
    "transaction.state.log.replication.factor",
    "transaction.state.log.min.isr",
)
_INTEGER = re.compile(r"^[+-]?\d+$")
_BOUNDS = {"short": 2**15, "int": 2**31, "long": 2**63}


def forbidden(option: str) -> bool:
    """Strimzi's AbstractConfiguration.filterForbidden: the prefix matched on the lower-cased option (so
    `Listeners` is forbidden too), the exception on the option as written."""
    return option.lower().startswith(FORBIDDEN_PREFIXES) and option not in FORBIDDEN_EXCEPTIONS


def user_config(raw: Any) -> tuple[dict[str, str], tuple[str, ...]]:
    """`spec.kafka.config` (or a pool's `spec.config`) as broker settings, and the forbidden options dropped."""
    config: dict[str, str] = {}
    ignored: list[str] = []
    for key, value in raw.items() if isinstance(raw, Mapping) else ():
        if forbidden(str(key)):
            ignored.append(str(key))
        elif value is not None:
            config[str(key)] = config_value(value)
    return config, tuple(ignored)


def for_roles(config: Mapping[str, str], broker: bool, controller: bool) -> dict[str, str]:
    """The settings a node with these roles runs: controller-only nodes get the controller-relevant ones."""
    if controller and not broker:
        return {k: v for k, v in config.items() if k in CONTROLLER_RELEVANT}
    return dict(config)


@dataclass(frozen=True)
class OptionModel:
    type: str
    dynamic: bool = False
    minimum: float | None = None
    maximum: float | None = None
    values: tuple[str, ...] | None = None
    case_insensitive: bool = False
    items: tuple[str, ...] | None = None
    pattern: str | None = None

    def validate(self, name: str, value: str) -> list[str]:
        """Strimzi's ConfigModel.validate, with its messages."""
        kind = self.type
        if kind == "boolean":
            return [] if value in ("true", "false") else [f"{name} has value '{value}' which is not a boolean"]
        if kind in _BOUNDS:
            if not _INTEGER.match(value) or not -_BOUNDS[kind] <= int(value) < _BOUNDS[kind]:
                article = "an int" if kind == "int" else f"a {kind}"
                return [f"{name} has value '{value}' which is not {article}"]
            return self._range(name, value, int(value))
        if kind == "double":
            try:
                number = float(value) if "_" not in value else math.nan  # Java reads no "1_000"
            except ValueError:
                number = math.nan
            if math.isnan(number) and value.strip() != "NaN":
                return [f"{name} has value '{value}' which is not a double"]
            return self._range(name, value, number)
        if kind == "list":
            return self._list(name, value)
        if kind == "string":
            return self._string(name, value)
        return []  # class, password: anything

    def _range(self, name: str, value: str, number: float) -> list[str]:
        errors = []
        if self.minimum is not None and number < self.minimum:
            errors.append(f"{name} has value {value} which less than the minimum value {_number(self.minimum)}")
        if self.maximum is not None and number > self.maximum:
            errors.append(f"{name} has value {value} which greater than the maximum value {_number(self.maximum)}")
        if self.pattern is not None and not re.fullmatch(self.pattern, value):
            errors.append(f"{name} has value '{value}' which does not match the required pattern: {self.pattern}")
        return errors

    def _string(self, name: str, value: str) -> list[str]:
        errors = []
        if self.values is not None:
            if self.case_insensitive and value.upper() not in self.values:
                allowed = ", ".join(self.values)
                errors.append(
                    f"{name} has value '{value}' which is not one of the allowed values (case-insensitive): [{allowed}]"
                )
            elif not self.case_insensitive and value not in self.values:
                errors.append(
                    f"{name} has value '{value}' which is not one of the allowed values: [{', '.join(self.values)}]"
                )
        if self.pattern is not None and not re.fullmatch(self.pattern, value):
            errors.append(f"{name} has value '{value}' which does not match the required pattern: {self.pattern}")
        return errors

    def _list(self, name: str, value: str) -> list[str]:
        items = re.split(r" *, *", value.strip())
        if len(set(items)) != len(items):
            return [f"{name} contains duplicate values"]
        if any(item == "" for item in items):
            return [f"{name} contains empty values"]
        if self.items:
            unknown = sorted(set(items) - set(self.items))
            if unknown:
                allowed = ", ".join(self.items)
                return [f"{name} contains values [{', '.join(unknown)}] which are not in the allowed items [{allowed}]"]
        return []


@dataclass(frozen=True)
class ConfigModel:
    """Kafka's broker options for one version (what `kafka_config_model.load()` returns, typed)."""

    version: str
    options: Mapping[str, OptionModel] = field(default_factory=dict)
    metadata_versions: tuple[str, ...] = ()  # oldest first, up to the latest production one

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> ConfigModel:
        options = {}
        for name, spec in (raw.get("configs") or {}).items():
            options[name] = OptionModel(
                type=str(spec.get("type", "string")),
                dynamic=bool(spec.get("dynamic", False)),
                minimum=spec.get("min"),
                maximum=spec.get("max"),
                values=tuple(spec["values"]) if spec.get("values") is not None else None,
                case_insensitive=bool(spec.get("caseInsensitive", False)),
                items=tuple(spec["items"]) if spec.get("items") is not None else None,
                pattern=spec.get("pattern"),
            )
        versions = tuple(str(v) for v in raw.get("metadataVersions") or ())
        return cls(str(raw.get("version", "")), options, versions)

    def validate(self, config: Mapping[str, str]) -> list[str]:
        """Every error in `config`, in option order; options unknown to Kafka are not checked."""
        errors: list[str] = []
        for name in sorted(config):
            option = self.options.get(name)
            if option is not None:
                errors += option.validate(name, config[name])
        return errors

    @property
    def latest_metadata_version(self) -> str | None:
        return self.metadata_versions[-1] if self.metadata_versions else None

    def metadata_version(self, wanted: str) -> str | None:
        """`4.3-IV0` as is, `4.3` as the last of its versions; None when Kafka has no such version."""
        if wanted in self.metadata_versions:
            return wanted
        matching = [v for v in self.metadata_versions if v.split("-")[0] == wanted]
        return matching[-1] if matching else None

    def dynamic(self, name: str) -> bool:
        """Whether a running broker can change it (an unknown option cannot: it needs a restart)."""
        option = self.options.get(name)
        return option is not None and option.dynamic


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
