"""A cap on the long-lived event streams one visitor may hold open, and no development stream on a public server.

Gradio 6.31 streams over server-sent events, plain HTTP answers that never end on their own: the page keeps one
open per session at ``/gradio_api/heartbeat/<session>`` (any session name is accepted, none has to exist), one at
``/gradio_api/queue/data`` while its jobs run, and ``/gradio_api/upload_progress`` during an upload. Each holds a
connection that is busy the whole time, so neither the head timeout nor the total cap's making room
(`playground.connections`) ever closes it: one client opening heartbeat streams under made-up session names
could hold every connection of the total cap, and behind a proxy (a Space) the cap per address is off. `StreamCap`
counts the streams of each visitor (`playground.fairness.client_key`: the address, or behind a trusted proxy the
address it forwards) and answers ``429`` with a reason past ``per_client``.

``/gradio_api/dev/reload``, Gradio's reload-mode stream, is served by every app and wakes 20 times a second for as
long as it is open; the page uses it only under ``gradio app.py`` (reload mode). A public server answers it
``404``.

Install it through ``demo.launch(app_kwargs=...)`` (`middleware`).
"""

from __future__ import annotations

import re
from typing import Any

from starlette.middleware import Middleware
from starlette.requests import HTTPConnection

from .fairness import client_key
from .http_limits import send_refusal

_STREAM = re.compile(r"/gradio_api/(?:heartbeat/[^/]*|queue/data|upload_progress)/?$")
_DEV = re.compile(r"/gradio_api/dev/reload/?$")


def refusal_text(per_client: int) -> str:
    """What a visitor past the cap is told (the ``detail`` of the 429 answer)."""
    return (f"This server keeps at most {per_client} live connections (open pages, running jobs, uploads) per "
            f"visitor, and yours are all in use: close a tab of this page and try again. To run without this "
            f"limit, run the playground on your own machine (python app.py).")


DEV_TEXT = "Not found: live reload is for development (gradio app.py), not on a public server."


class StreamCap:
    """ASGI middleware: at most ``per_client`` event streams open at once per visitor (past it: ``429`` with
    `refusal_text`), and ``/gradio_api/dev/reload`` answered ``404`` when ``block_dev``.

    Args:
        app: the ASGI app to wrap.
        per_client: streams one visitor may hold at once (None: no cap).
        trust_forwarded: tell visitors apart by ``X-Forwarded-For`` (`playground.fairness.client_key`).
        block_dev: answer Gradio's reload-mode stream ``404``.
    """

    def __init__(self, app: Any, per_client: int | None, trust_forwarded: bool, block_dev: bool = True):
        self.app = app
        self.per_client = per_client
        self.trust_forwarded = trust_forwarded
        self.block_dev = block_dev
        self.open: dict[str, int] = {}  # streams open per visitor (the event loop's thread only)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        if self.block_dev and _DEV.search(path):
            await send_refusal(send, 404, DEV_TEXT)
            return
        key = client_key(HTTPConnection(scope), self.trust_forwarded) if self.per_client and _STREAM.search(
            path) else None
        if key is None:
            await self.app(scope, receive, send)
            return
        if self.open.get(key, 0) >= self.per_client:
            await send_refusal(send, 429, refusal_text(self.per_client))
            return
        self.open[key] = self.open.get(key, 0) + 1
        try:
            await self.app(scope, receive, send)
        finally:
            left = self.open.get(key, 1) - 1
            if left > 0:
                self.open[key] = left
            else:
                self.open.pop(key, None)


def middleware(per_client: int | None, trust_forwarded: bool, public: bool) -> list:
    """The ``Middleware`` entries for ``demo.launch(app_kwargs={"middleware": [...]})``: `StreamCap` when there is
    a cap or a public server (empty otherwise)."""
    if per_client is None and not public:
        return []
    return [Middleware(StreamCap, per_client=per_client, trust_forwarded=trust_forwarded, block_dev=public)]
