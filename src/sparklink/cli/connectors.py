"""`sparklink connectors ...`: the Connect REST API from the terminal, with readable tables.

Every command is one HTTP call to a worker (`--url`, or SPARKLINK_URL); errors print the worker's
Connect error message and exit non-zero.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(help="List, create, inspect and control connectors on a running worker.", no_args_is_help=True)
console = Console()

Url = Annotated[str, typer.Option("--url", envvar="SPARKLINK_URL", help="The worker's REST URL.")]
DEFAULT_URL = "http://127.0.0.1:8083"


def call(method: str, url: str, path: str, **kwargs: Any) -> httpx.Response:
    try:
        response = httpx.request(method, url.rstrip("/") + path, timeout=120, **kwargs)
    except httpx.HTTPError as exc:
        console.print(f"[red]cannot reach the worker at {url}:[/red] {exc}. Is `sparklink worker` running?")
        raise typer.Exit(2) from None
    if response.status_code >= 400:
        try:
            message = response.json().get("message", response.text)
        except ValueError:
            message = response.text
        console.print(f"[red]{response.status_code}[/red] {message}")
        raise typer.Exit(1)
    return response


@app.command("list")
def list_connectors(url: Url = DEFAULT_URL) -> None:
    """Every connector with its state and task states."""
    data = call("GET", url, "/connectors?expand=status").json()
    table = Table("connector", "type", "state", "tasks")
    for name, entry in sorted(data.items()):
        status = entry.get("status", {})
        tasks = ", ".join(f"{t['id']}:{t['state']}" for t in status.get("tasks", []))
        table.add_row(name, status.get("type", ""), status.get("connector", {}).get("state", ""), tasks or "-")
    console.print(table)


@app.command()
def get(name: str, url: Url = DEFAULT_URL) -> None:
    """A connector's config, tasks and status."""
    info = call("GET", url, f"/connectors/{name}").json()
    status = call("GET", url, f"/connectors/{name}/status").json()
    console.print_json(json.dumps({"info": info, "status": status}))


@app.command()
def status(name: str, url: Url = DEFAULT_URL) -> None:
    """A connector's state and each task's state (with the first line of a failure trace)."""
    data = call("GET", url, f"/connectors/{name}/status").json()
    table = Table("what", "state", "worker", "trace")
    c = data["connector"]
    first = (c.get("trace") or "").strip().splitlines()
    table.add_row("connector", c["state"], c["worker_id"], first[0] if first else "")
    for t in data["tasks"]:
        first = (t.get("trace") or "").strip().splitlines()
        table.add_row(f"task {t['id']}", t["state"], t["worker_id"], first[0] if first else "")
    console.print(table)


@app.command()
def create(
    config_file: Annotated[
        Path,
        typer.Argument(help='JSON: {"name":..,"config":{..}} or a flat config map with a \'name\' key.', exists=True),
    ],
    url: Url = DEFAULT_URL,
    initial_state: Annotated[str | None, typer.Option(help="RUNNING, PAUSED or STOPPED.")] = None,
) -> None:
    """Create a connector from a JSON file."""
    body = json.loads(config_file.read_text())
    if "config" not in body:
        body = {"name": body.get("name"), "config": body}
    if initial_state:
        body["initial_state"] = initial_state
    info = call("POST", url, "/connectors", json=body).json()
    console.print(f"[green]created[/green] {info['name']} ({info['type']})")


@app.command()
def delete(name: str, url: Url = DEFAULT_URL) -> None:
    """Delete a connector (its tasks stop; its offsets stay)."""
    call("DELETE", url, f"/connectors/{name}")
    console.print(f"deleted {name}")
