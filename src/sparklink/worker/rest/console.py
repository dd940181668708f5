"""`GET /ui`: the worker's web console, four static files shipped in the package.

The console is a page and a script; everything it shows and does goes through the worker's own REST
API from the browser (`/connectors?expand=status`, `/metrics`, the actions), so it has exactly the
rights the browser's credentials give, and nothing here touches the herder. Serving it weakens no
guard: it is a GET of fixed files behind the same Host check and basic authentication as every route
(basic_auth.py asks a browser for credentials on these paths only), with a Content-Security-Policy
that allows scripts, styles and requests from this origin alone (no inline script, no inline style,
no frame, no form target), `nosniff` and no referrer. Nothing is fetched from anywhere else at run
time. Caller: app.py; `GET /` links here (root.py).
"""

from __future__ import annotations

import functools
from importlib import resources

from fastapi import APIRouter, Response

router = APIRouter(tags=["console"], include_in_schema=False)

PATH = "/ui"
FILES = {
    "index.html": "text/html; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    # Small files, revalidated each load: an upgraded worker serves its own console at once.
    "Cache-Control": "no-cache",
}


def is_console(path: str) -> bool:
    return path == PATH or path.startswith(PATH + "/")


@functools.cache
def _content(name: str) -> bytes:
    return (resources.files("sparklink.worker.rest") / "static" / "console" / name).read_bytes()


def _file(name: str) -> Response:
    return Response(_content(name), media_type=FILES[name], headers=HEADERS)


@router.get(PATH)
def console_page() -> Response:
    return _file("index.html")


@router.get(f"{PATH}/console.js")
def console_script() -> Response:
    return _file("console.js")


@router.get(f"{PATH}/console.css")
def console_style() -> Response:
    return _file("console.css")


@router.get(f"{PATH}/favicon.svg")
def console_icon() -> Response:
    return _file("favicon.svg")
