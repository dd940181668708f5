"""A short path for the reads that clients poll: `GET /connectors`, `/connectors/{c}`, `.../status`, `.../config`.

Operators, UIs and the Connect clients poll these several times a second per connector. FastAPI's
route matching and dependency solving cost several times what the herder's in-memory read does, and
the REST server shares its GIL with the Spark callbacks of the running tasks. This middleware answers
these four reads (plain GET, no query string) with the herder call its route makes and the same
rendering (`responses.answer` over the herder's wire entity), so both paths send the same bytes.
Anything else, and any read that raises (not found, not the leader, still starting), goes on to the
app, whose route answers it and whose mapper shapes the error, so the short path never decides an
outcome the routes would decide differently.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from sparklink.worker.herder.model import Herder
from sparklink.worker.rest.responses import Content, answer

Read = Callable[[Herder, str], Content]

# What each `/connectors/{name}/<leaf>` read returns; "" is `/connectors/{name}` itself.
READS: dict[str, Read] = {
    "": lambda herder, name: herder.connector_info(name),
    "status": lambda herder, name: herder.connector_status(name),
    "config": lambda herder, name: herder.connector_config(name),
}


class FastReads:
    """Answers the polled reads without routing; everything else passes through unchanged."""

    def __init__(self, app: ASGIApp, herder: Callable[[], Herder | None]) -> None:
        self.app = app
        self.herder = herder

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = self._answer(scope) if scope["type"] == "http" and scope["method"] == "GET" else None
        if response is None:
            await self.app(scope, receive, send)
            return
        await response(scope, receive, send)

    def _answer(self, scope: Scope) -> JSONResponse | None:
        herder = self.herder()
        if herder is None or scope.get("query_string"):
            return None
        parts = scope["path"].split("/")  # "/connectors/x/status" -> ["", "connectors", "x", "status"]
        if parts[:2] != ["", "connectors"] or len(parts) > 4:
            return None
        try:
            if len(parts) == 2:
                content: Content = herder.connectors()
            else:
                name, leaf = parts[2], parts[3] if len(parts) == 4 else ""
                read = READS.get(leaf)
                if not name or read is None:
                    return None
                content = read(herder, name)
        except Exception:  # the route raises it again and the error mapper answers
            return None
        return answer(content)
