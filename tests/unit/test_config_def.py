"""Config declarations parse, validate and report errors in Kafka's ConfigException wording."""

from __future__ import annotations

import pytest

from sparklink.api import config as cfg
from sparklink.worker.herder import validation
from sparklink.worker.plugins import Plugins

DEF = (
    cfg.ConfigDef()
    .define(cfg.ConfigKey("n", "INT", "a number", default=3, validator=cfg.at_least(1)))
    .define(cfg.ConfigKey("flag", "BOOLEAN", "a flag", default=False))
    .define(cfg.ConfigKey("names", "LIST", "names"))
)


def test_parse_applies_types_and_defaults() -> None:
    assert DEF.parse({"names": "a, b,,c"}) == {"n": 3, "flag": False, "names": ["a", "b", "c"]}
    assert DEF.parse({"n": "7", "flag": "TRUE", "names": "x"})["flag"] is True


def test_validate_reports_each_bad_key() -> None:
    errors = DEF.validate({"n": "0", "flag": "maybe"})
    assert errors["n"] == ["Invalid value 0 for configuration n: Value must be at least 1"]
    assert errors["flag"] == ["Invalid value maybe for configuration flag: Expected value to be either true or false"]
    assert errors["names"] == ['Missing required configuration "names" which has no default value.']


def test_parse_raises_on_invalid_values() -> None:
    with pytest.raises(ValueError, match="Not a number of type INT"):
        DEF.parse({"n": "many", "names": "a"})


def test_plugins_resolve_aliases_class_names_and_dotted_paths() -> None:
    plugins = Plugins()
    by_alias = plugins.resolve("datagen")
    assert plugins.resolve("DatagenConnector") is by_alias
    assert plugins.resolve("sparklink.connectors.datagen.DatagenConnector") is by_alias
    assert by_alias.type == "source"
    assert plugins.find("sparklink.connectors.datagen.Nope") is None


def test_connector_validation_merges_base_and_plugin_keys() -> None:
    errors = validation.validate(Plugins(), {"name": "", "connector.class": "datagen", "tasks.max": "x"}, 256)
    assert errors["name"] and errors["tasks.max"] and errors["topic"]
    assert not errors["records.per.second"]
