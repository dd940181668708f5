"""A real browser for the tests: Debian's Chromium (/usr/bin/chromium, installed by scripts/bootstrap.sh),
driven by Playwright with the system browser, so Playwright downloads no browser of its own.

Loaded as a pytest plugin from tests/conftest.py. One browser per test module that needs one; each test
takes a fresh context (its own cookies, cache and credentials) from it. Not one per session: Playwright's
sync API keeps an event loop running on the main thread while it is open, and every later test that calls
`asyncio.run` (Starlette's TestClient does) would fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """The module's headless Chromium (a playwright.sync_api.Browser)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        try:
            yield chromium
        finally:
            chromium.close()
