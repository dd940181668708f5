"""Strimzi's metrics files as the tests read them: the JMX exporter's rules applied as the exporter applies
them, and the metric names Strimzi's dashboards and alert rules query.

The files are Strimzi's own (tests/data/strimzi/metrics, Apache-2.0, see NOTICE.md). `ExporterRules`
follows jmx_exporter's JmxCollector: an MBean attribute becomes the text
`<domain><<key properties, in order>><<>><attribute>: <value>`, each rule's pattern is wrapped as
`^.*(?:pattern).*$`, the first rule that matches decides, and its `name` and `labels` are the
pattern's replacements, passed through `safeName` and lower-cased as the files ask.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).resolve().parents[1] / "data" / "strimzi" / "metrics"
CONNECT_RULES = DATA / "kafka-connect-metrics.yaml"
MM2_RULES = DATA / "kafka-mirror-maker-2-metrics.yaml"
CONNECT_DASHBOARD = DATA / "strimzi-kafka-connect.json"
MM2_DASHBOARD = DATA / "strimzi-kafka-mirror-maker-2.json"
CONNECT_ALERTS = DATA / "prometheus-kafka-connect-rules.yaml"
MM2_ALERTS = DATA / "prometheus-mirrormaker2-rules.yaml"
OPERATORS_DASHBOARD = DATA / "strimzi-operators.json"

# Words of PromQL that look like metric names (functions, keywords, Grafana variables' functions).
PROMQL_WORDS = {
    "sum", "by", "rate", "increase", "count", "on", "group_left", "group_right", "topk", "absent", "sort",
    "min", "max", "avg", "without", "ignoring", "and", "or", "unless", "time", "query_result", "label_values",
    "irate", "bool", "offset",
}  # fmt: skip


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    name: str
    labels: dict[str, str]
    kind: str
    value: str | None
    factor: float


class ExporterRules:
    """The `rules` of a Strimzi metrics ConfigMap, applied as the JMX exporter applies them."""

    def __init__(self, path: Path) -> None:
        config: dict[str, Any] | None = None
        for document in yaml.safe_load_all(path.read_text()):
            data = (document or {}).get("data") or {}
            if "metrics-config.yml" in data:
                config = yaml.safe_load(data["metrics-config.yml"])
        assert config is not None, f"{path} holds no metrics-config.yml"
        self.lowercase_names = bool(config.get("lowercaseOutputName"))
        self.lowercase_labels = bool(config.get("lowercaseOutputLabelNames"))
        self.rules = [
            Rule(
                re.compile(r"^.*(?:" + r["pattern"] + r").*$"),
                r["name"],
                {str(k): str(v) for k, v in (r.get("labels") or {}).items()},
                str(r.get("type", "UNTYPED")).lower(),
                None if r.get("value") is None else str(r["value"]),
                float(r.get("valueFactor", 1.0)),
            )
            for r in config["rules"]
        ]

    def apply(
        self, domain: str, properties: list[tuple[str, str]], attribute: str, value: float | str
    ) -> tuple[str, tuple[tuple[str, str], ...], str, float] | None:
        """(name, labels, type, value) of one attribute, or None when no rule exports it."""
        numeric = not isinstance(value, str)
        shown = _java_double(float(value)) if numeric else value
        text = f"{domain}<{', '.join(f'{k}={v}' for k, v in properties)}><>{attribute}: {shown}"
        for rule in self.rules:
            match = rule.pattern.match(text)
            if match is None:
                continue
            name = self._safe(match.expand(_python(rule.name)), self.lowercase_names)
            labels = tuple(
                (self._safe(match.expand(_python(k)), self.lowercase_labels), match.expand(_python(v)))
                for k, v in rule.labels.items()
            )
            if rule.value is not None:
                number = float(match.expand(_python(rule.value)))
            elif numeric:
                number = float(value)
            else:
                return None  # a text attribute without a value in its rule is dropped
            return name, labels, rule.kind, number * rule.factor
        return None

    @staticmethod
    def _safe(name: str, lower: bool) -> str:
        out = re.sub(r"[^a-zA-Z0-9:_]+|_+", "_", name)
        out = "_" + out if out[:1].isdigit() else out
        return out.lower() if lower else out


def _python(template: str) -> str:
    """A Java replacement (`$1`) as Python's (`\\g<1>`)."""
    return re.sub(r"\$(\d+)", r"\\g<\1>", template)


def _java_double(value: float) -> str:
    return repr(value) if value == value else "NaN"


def queried_names(paths: list[Path]) -> set[str]:
    """Every metric name the dashboards' targets and variables and the alert rules' expressions query."""
    exprs: list[str] = []
    for path in paths:
        if path.suffix == ".json":
            exprs += list(_dashboard_queries(json.loads(path.read_text())))
        else:
            for document in yaml.safe_load_all(path.read_text()):
                for group in (document or {}).get("spec", {}).get("groups", []):
                    exprs += [rule["expr"] for rule in group.get("rules", []) if "expr" in rule]
    names: set[str] = set()
    for expr in exprs:
        # Label matchers and strings hold no metric names; drop them before finding words.
        bare = re.sub(r'\{[^}]*\}|"(?:[^"\\]|\\.)*"|\[[^\]]*\]', " ", expr)
        # So do grouping clauses: `by (pod)`, `on(connector)`, `group_left(status)` name labels.
        bare = re.sub(r"\b(by|on|without|ignoring|group_left|group_right)\s*\([^)]*\)", " ", bare)
        for word in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", bare):
            if word not in PROMQL_WORDS and not word.startswith("$") and "_" in word:
                names.add(word)
    return names


def _dashboard_queries(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if (key == "expr" and isinstance(value, str)) or (
                key == "query" and isinstance(value, str) and "(" in value
            ):
                yield value
            else:
                yield from _dashboard_queries(value)
    elif isinstance(node, list):
        for item in node:
            yield from _dashboard_queries(item)
