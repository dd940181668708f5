"""The web console at /ui in a real browser (Debian's headless Chromium through Playwright), on a worker
that asks for basic authentication: the browser's credentials carry its page and every API call it makes.

The console lists the connectors, shows a failed task with its trace, and restarts it with a click;
it is served with a strict Content-Security-Policy (the browser reports any violation as a console
error, and there must be none) and works from the keyboard. Screenshots go to the test's tmp dir.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparklink.platform.kafka import KafkaCluster
from sparklink.worker.assembly import RunningWorker, start_worker
from sparklink.worker.config import WorkerConfig
from tests.conftest import worker_props
from tests.helpers import create_topic, unique, wait_for

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

EXTENSION = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
LOGIN_MODULE = "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"
USER = "operator"
PASSWORD = f"pw-{uuid.uuid4().hex}"


@dataclass(frozen=True)
class Console:
    worker: RunningWorker
    state: Path

    @property
    def url(self) -> str:
        return self.worker.url

    def client(self) -> httpx.Client:
        return httpx.Client(auth=(USER, PASSWORD), timeout=60)


@pytest.fixture(scope="module")
def console(kafka: KafkaCluster, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    state = tmp_path_factory.mktemp("console")
    (state / "credentials.properties").write_text(f"{USER}={PASSWORD}\n")
    jaas = state / "connect_jaas.conf"
    jaas.write_text(f'KafkaConnect {{\n  {LOGIN_MODULE} required\n  file="{state / "credentials.properties"}";\n}};\n')
    props = worker_props(kafka, unique("console"), state / "worker")
    props.pop("rest.port")
    props.update({"listeners": "http://127.0.0.1:0", "rest.extension.classes": EXTENSION})
    environ = {"KAFKA_OPTS": f"-Djava.security.auth.login.config={jaas}"}
    worker = start_worker(WorkerConfig.model_validate(props), spark=spark, environ=environ)
    try:
        yield Console(worker, state)
    finally:
        worker.stop()


def _create(client: httpx.Client, url: str, name: str, config: dict[str, str], state: str = "RUNNING") -> None:
    response = client.post(f"{url}/connectors", json={"name": name, "config": config, "initial_state": state})
    assert response.status_code == 201, response.text


def _task_state(client: httpx.Client, url: str, name: str) -> str:
    return str(client.get(f"{url}/connectors/{name}/status").json()["tasks"][0]["state"])


def test_the_console_shows_the_connectors_and_restarts_a_failed_task_with_a_click(
    console: Console, browser: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    topic, blocker, written = unique("console"), tmp_path / "blocked", tmp_path / "blocked" / "out.txt"
    blocker.mkdir()  # the sink is accepted only for a file in a directory that exists
    create_topic(console.worker.config.bootstrap_servers, topic)
    with console.client() as client:
        gen = {"connector.class": "datagen", "topic": topic, "records.per.second": "5", "sparklink.realtime": "false"}
        _create(client, console.url, "ui-gen", gen)
        sink = {"connector.class": "FileStreamSink", "topics": topic, "file": str(written)}
        _create(client, console.url, "ui-sink", sink, state="PAUSED")
        # Then a file takes the directory's place: the task's start refuses the path and the task fails.
        blocker.rmdir()
        blocker.write_text("a file where the sink needs a directory")
        assert client.put(f"{console.url}/connectors/ui-sink/resume").status_code == 202
        wait_for(lambda: _task_state(client, console.url, "ui-sink") == "FAILED", 120, "the sink's task FAILED")

    context = browser.new_context(
        http_credentials={"username": USER, "password": PASSWORD}, viewport={"width": 1280, "height": 900}
    )
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{console.url}/ui")
        sink = page.get_by_role("button", name=re.compile(r"^ui-sink\b"))
        expect(sink).to_contain_text("1 failed", timeout=60_000)
        expect(page.get_by_role("button", name=re.compile(r"^ui-gen\b"))).to_contain_text("RUNNING")
        page.screenshot(path=str(tmp_path / "1-connectors.png"), full_page=True)

        sink.click()
        row = page.locator('#tasks tr[data-task="0"]')
        expect(row.locator(".task-state > span")).to_have_text("FAILED")
        expect(page.locator("#connector-worker")).to_have_text(console.worker.herder.worker_id)
        row.get_by_text("Trace", exact=True).click()  # the trace itself may say "Traceback"
        expect(row.locator("pre")).to_contain_text("blocked")
        page.screenshot(path=str(tmp_path / "2-failed-task.png"), full_page=True)

        blocker.unlink()  # what failed the task is gone: a restart now runs
        blocker.mkdir()
        row.get_by_role("button", name="Restart task 0").click()
        expect(page.locator("#message")).to_contain_text("accepted")
        expect(row.locator(".task-state > span")).to_have_text("RUNNING", timeout=120_000)
        wait_for(lambda: written.exists() and written.read_text().count("\n") > 0, 120, "the restarted sink writing")
        expect(page.locator("#rate-now")).to_contain_text("Now:", timeout=60_000)
        page.screenshot(path=str(tmp_path / "3-restarted.png"), full_page=True)
    finally:
        context.close()
    with console.client() as client:
        try:
            assert _task_state(client, console.url, "ui-sink") == "RUNNING"
        finally:  # the keyboard test expects its connector to be the only one
            for name in ("ui-gen", "ui-sink"):
                client.delete(f"{console.url}/connectors/{name}")
            wait_for(lambda: client.get(f"{console.url}/connectors").json() == [], 60, "both connectors deleted")
    # A Content-Security-Policy violation, a failed request or a script error would be here.
    assert errors == []


def test_the_console_works_from_the_keyboard(console: Console, browser: Any) -> None:
    from playwright.sync_api import expect

    with console.client() as client:
        _create(client, console.url, "ui-keys", {"connector.class": "datagen", "topic": unique("keys")})
    context = browser.new_context(http_credentials={"username": USER, "password": PASSWORD})
    try:
        page = context.new_page()
        page.goto(f"{console.url}/ui")
        expect(page.get_by_role("button", name=re.compile(r"^ui-keys\b"))).to_be_visible(timeout=60_000)
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Skip to the selected connector"
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent").startswith("ui-keys")
        page.keyboard.press("Enter")
        expect(page.locator("#connector-name")).to_have_text("ui-keys")
        expect(page.locator("#details")).to_be_focused()  # focus moves once the details are drawn
        page.keyboard.press("Tab")  # into the details: the first control is a real, labelled button
        assert page.evaluate("document.activeElement.tagName + ':' + document.activeElement.id") in (
            "SUMMARY:",
            "BUTTON:restart",
        )
    finally:
        context.close()
        with console.client() as client:
            client.delete(f"{console.url}/connectors/ui-keys")


def test_the_console_keeps_every_guard_and_asks_a_browser_for_credentials(console: Console) -> None:
    anonymous = httpx.get(f"{console.url}/ui", timeout=30)
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"] == 'Basic realm="Kafka Connect", charset="UTF-8"'
    api = httpx.get(f"{console.url}/connectors", timeout=30)
    assert api.status_code == 401 and "www-authenticate" not in api.headers  # Connect's answer, unchanged
    with console.client() as client:
        for path, media in (
            ("/ui", "text/html"),
            ("/ui/console.js", "text/javascript"),
            ("/ui/console.css", "text/css"),
        ):
            answer = client.get(f"{console.url}{path}")
            assert answer.status_code == 200 and answer.headers["content-type"].startswith(media)
            policy = answer.headers["content-security-policy"]
            assert "default-src 'none'" in policy and "script-src 'self'" in policy and "unsafe" not in policy
            assert answer.headers["x-content-type-options"] == "nosniff"
            assert answer.headers["x-frame-options"] == "DENY"
        page = client.get(f"{console.url}/ui").text
        # No inline script or style, nothing from another origin.
        assert "<script>" not in page and "style=" not in page and "http://" not in page and "https://" not in page
        root = client.get(f"{console.url}/")
        assert root.json()["version"] and root.headers["link"] == '</ui>; rel="console"; type="text/html"'
        browser_root = client.get(f"{console.url}/", headers={"Accept": "text/html,*/*;q=0.8"})
        assert (browser_root.status_code, browser_root.headers["location"]) == (303, "/ui")
