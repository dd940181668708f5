"""The test-only Python plugins (tests/plugins.py) installed as a plugin is: a distribution on plugin.path.

A worker resolves `connector.class` only among its built-ins, installed entry points and plugin.path, so
the test plugins get a `*.dist-info` with their `sparklink.connectors` entry points in a plugin location
of their own; every test worker's properties name it (tests/conftest.py `worker_props`), and the
operator's local workers get it through `operator run --plugin-path`. Their code stays in this repository's
`tests` package, which every test process imports from its working directory.
"""

from __future__ import annotations

from pathlib import Path

DISTRIBUTION = "sparklink_test_plugins-1.0.dist-info"
ENTRY_POINTS = {"counting": "tests.plugins:CountingConnector"}


def install(plugin_path: Path) -> Path:
    """Write the distribution into `plugin_path/sparklink-test-plugins/`; returns `plugin_path`."""
    dist = plugin_path / "sparklink-test-plugins" / DISTRIBUTION
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: sparklink-test-plugins\nVersion: 1.0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in ENTRY_POINTS.items())
    (dist / "entry_points.txt").write_text(f"[sparklink.connectors]\n{lines}")
    return plugin_path
