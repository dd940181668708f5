"""The `sparklink` command line (typer + rich)."""
