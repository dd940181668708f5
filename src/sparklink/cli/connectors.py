"""`sparklink connectors ...`: the Connect REST API from the terminal, with readable tables.

Every command is one HTTP call to a worker (`--url`, or SPARKLINK_URL); errors print the worker's
Connect error message and exit non-zero.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(help="List, create, inspect and control connectors on a running worker.", no_args_is_help=True)
console = Console(soft_wrap=True)

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


# The lifecycle commands, each one call on the connector: name, HTTP method, path below the connector,
# what it prints before the name, help.
_LIFECYCLE = (
    ("delete", "DELETE", "", "deleted", "Delete a connector (its tasks stop; its offsets stay)."),
    (
        "pause",
        "PUT",
        "/pause",
        "pausing",
        "Pause a connector: its task queries stop, offsets stay, and `resume` continues where they left off.",
    ),
    ("resume", "PUT", "/resume", "resuming", "Resume a paused or stopped connector."),
    (
        "stop",
        "PUT",
        "/stop",
        "stopped",
        "Stop a connector completely (no tasks); required before altering or resetting its offsets.",
    ),
)


def _lifecycle(method: str, below: str, done: str) -> Callable[[str, str], None]:
    def command(name: str, url: Url = DEFAULT_URL) -> None:
        call(method, url, f"/connectors/{name}{below}")
        console.print(f"{done} {name}")

    return command


for _command, _method, _below, _done, _help in _LIFECYCLE:
    app.command(_command, help=_help)(_lifecycle(_method, _below, _done))


@app.command()
def restart(
    name: str,
    url: Url = DEFAULT_URL,
    include_tasks: Annotated[bool, typer.Option("--include-tasks", help="Restart tasks too.")] = False,
    only_failed: Annotated[bool, typer.Option("--only-failed", help="Only what is FAILED.")] = False,
    task: Annotated[int | None, typer.Option("--task", help="Restart just this task id.")] = None,
) -> None:
    """Restart a connector (KIP-745), or one task with --task.

    Examples: `restart orders --include-tasks --only-failed` restarts only failed parts.
    """
    if task is not None:
        call("POST", url, f"/connectors/{name}/tasks/{task}/restart")
        console.print(f"restarted task {name}-{task}")
        return
    params = {"includeTasks": str(include_tasks).lower(), "onlyFailed": str(only_failed).lower()}
    response = call("POST", url, f"/connectors/{name}/restart", params=params)
    if response.status_code == 204:
        console.print(f"restarted connector {name}")
        return
    plan = response.json()
    targets = (["connector"] if plan["connector"]["state"] == "RESTARTING" else []) + [
        f"task {t['id']}" for t in plan["tasks"] if t["state"] == "RESTARTING"
    ]
    console.print(f"restarting {name}: {', '.join(targets) if targets else 'nothing needed a restart'}")


@app.command()
def offsets(
    name: str,
    url: Url = DEFAULT_URL,
    alter: Annotated[Path | None, typer.Option(help='JSON file {"offsets": [...]} to apply.', exists=True)] = None,
    reset: Annotated[bool, typer.Option("--reset", help="Reset all offsets.")] = False,
) -> None:
    """Show a connector's offsets, or alter/reset them (the connector must be stopped first)."""
    if alter is not None:
        message = call("PATCH", url, f"/connectors/{name}/offsets", json=json.loads(alter.read_text())).json()
        console.print(message["message"])
        return
    if reset:
        console.print(call("DELETE", url, f"/connectors/{name}/offsets").json()["message"])
        return
    table = Table("partition", "offset")
    for entry in call("GET", url, f"/connectors/{name}/offsets").json()["offsets"]:
        table.add_row(json.dumps(entry["partition"]), json.dumps(entry["offset"]))
    console.print(table)


@app.command()
def topics(
    name: str,
    url: Url = DEFAULT_URL,
    reset: Annotated[bool, typer.Option("--reset", help="Forget the recorded topics.")] = False,
) -> None:
    """Topics a connector has used (KIP-558), or reset that record."""
    if reset:
        call("PUT", url, f"/connectors/{name}/topics/reset")
        console.print(f"reset active topics of {name}")
        return
    for topic in call("GET", url, f"/connectors/{name}/topics").json()[name]["topics"]:
        console.print(topic)
