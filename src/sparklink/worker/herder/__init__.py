"""The herder: the one control interface over connectors, behind the REST API and the CLI."""
