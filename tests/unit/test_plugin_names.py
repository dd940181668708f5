"""Plugin names resolve only among what is installed, and no module is imported to find out (issue 28 finding 4).

A `connector.class`, `task.class`, converter, transformation or predicate that names a module which is
not a plugin (`os.system`, `subprocess.Popen`, or a module of our own whose import would leave a file
behind) gets Connect's answer - a 400 naming the class, or an error on the key in a validate answer - and
the module is never imported.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparklink.api.errors import BadRequestError, ConnectError
from sparklink.worker.herder import validation
from sparklink.worker.plugins import Plugins

MARKER = "sparklink_import_marker"
"""A module on sys.path whose import writes a file: if it is ever imported, the test sees the file."""

NOT_PLUGINS = ("os.system", "subprocess.Popen", "http.server.HTTPServer", f"{MARKER}.Anything")


@pytest.fixture(scope="module")
def plugins() -> Plugins:
    return Plugins()


@pytest.fixture
def marker(tmp_path: Path) -> Iterator[Path]:
    """The marker module on sys.path; yields the file its import would write."""
    witness = tmp_path / "imported"
    (tmp_path / f"{MARKER}.py").write_text(
        f"import pathlib\npathlib.Path({str(witness)!r}).write_text('imported')\nclass Anything: pass\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        yield witness
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(MARKER, None)


def _not_imported(witness: Path) -> None:
    assert MARKER not in sys.modules
    assert not witness.exists()


@pytest.mark.parametrize("name", NOT_PLUGINS)
def test_connector_class_naming_a_module_is_connects_400_and_imports_nothing(
    plugins: Plugins, marker: Path, name: str
) -> None:
    with pytest.raises(BadRequestError) as refused:
        plugins.resolve(name)
    assert str(refused.value).startswith(
        f"Failed to find any class that implements Connector and which name matches {name}, available connectors are: "
    )
    assert plugins.find(name) is None
    _not_imported(marker)


@pytest.mark.parametrize("name", NOT_PLUGINS)
def test_task_class_naming_a_module_is_refused_and_imports_nothing(plugins: Plugins, marker: Path, name: str) -> None:
    with pytest.raises(ConnectError, match=f"Task class {name} .* is not a task of a known plugin"):
        plugins.new_task(name)
    with pytest.raises(ConnectError, match="is not a task of a known plugin"):
        plugins.new_task(name, "datagen")  # a known connector does not make any task class loadable
    _not_imported(marker)


@pytest.mark.parametrize("name", NOT_PLUGINS)
def test_validate_with_a_module_as_connector_class_reports_it_on_the_key(
    plugins: Plugins, marker: Path, name: str
) -> None:
    errors = validation.validate(plugins, {"name": "x", "connector.class": name, "tasks.max": "1"}, 256)
    assert errors["connector.class"] == [
        f"Invalid value {name} for configuration connector.class: no connector plugin with this name or alias"
    ]
    with pytest.raises(BadRequestError, match=f"which name matches {name}"):
        validation.config_infos(validation.Checks(plugins, 256), name.rsplit(".", 1)[-1], {"connector.class": name})
    _not_imported(marker)


@pytest.mark.parametrize("key", ["key.converter", "value.converter", "header.converter"])
@pytest.mark.parametrize("name", NOT_PLUGINS)
def test_converter_naming_a_module_is_an_error_on_its_key(plugins: Plugins, marker: Path, key: str, name: str) -> None:
    config = {"name": "x", "connector.class": "datagen", "topic": "t", key: name}
    errors = validation.validate(plugins, config, 256)
    assert errors[key], f"{key}={name} was accepted"
    assert any(name in e and "could not be found" in e for e in errors[key]), errors[key]
    _not_imported(marker)


@pytest.mark.parametrize("name", NOT_PLUGINS)
def test_transform_and_predicate_naming_a_module_are_errors_on_their_keys(
    plugins: Plugins, marker: Path, name: str
) -> None:
    config = {
        "name": "x",
        "connector.class": "datagen",
        "topic": "t",
        "transforms": "t1",
        "transforms.t1.type": name,
        "transforms.t1.predicate": "p1",
        "predicates": "p1",
        "predicates.p1.type": name,
    }
    errors = validation.validate(plugins, config, 256)
    assert any(name in e for e in errors["transforms.t1.type"]), errors["transforms.t1.type"]
    assert any(name in e for e in errors["predicates.p1.type"]), errors["predicates.p1.type"]
    _not_imported(marker)
