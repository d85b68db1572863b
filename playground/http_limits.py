"""A cap on the size of every HTTP request body, before Gradio reads it.

Gradio 6.31 and FastAPI read a request's whole JSON body into memory before any handler can check a size (Gradio's
``max_file_size`` covers uploads only): a 100 MB paste sent to ``/gradio_api/call/paste_parse`` grew the server by
210 MB, kept after the request, and the handler's own limit (256 K characters) refused it only afterwards.
`BodySizeLimit` answers ``413`` to a body over the cap: at once when ``Content-Length`` says so, else as soon as
the bytes received (chunked uploads) pass it, without reading the rest.

Install it through ``demo.launch(app_kwargs=app_kwargs(limits))``.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.exceptions import HTTPException
from starlette.middleware import Middleware


def _too_large_text(max_bytes: int) -> str:
    limit = f"{max_bytes / 2 ** 20:g} MB"
    return (f"Request body larger than {limit}: this server takes at most {limit} per request. To work with larger "
            "inputs, run the playground on your own machine (python app.py).")


class _TooLarge(HTTPException):
    """Raised from ``receive`` when a body without (or with a false) ``Content-Length`` passes the cap: FastAPI
    and Starlette pass HTTP exceptions through their body parsing and answer them with their status."""

    def __init__(self, max_bytes: int):
        super().__init__(413, _too_large_text(max_bytes))


class BodySizeLimit:
    """ASGI middleware: refuse HTTP request bodies larger than ``max_bytes`` with ``413`` and a JSON ``detail``.

    Args:
        app: the ASGI app to wrap.
        max_bytes: the largest body accepted, in bytes.
    """

    def __init__(self, app: Any, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        try:
            too_long = declared is not None and int(declared) > self.max_bytes
        except ValueError:
            too_long = False  # the server (h11) refuses a malformed Content-Length itself
        if too_long:
            await self._refuse(send)
            return
        received = 0
        started = False

        async def counting_receive() -> dict:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _TooLarge(self.max_bytes)
            return message

        async def watching_send(message: dict) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, watching_send)
        except _TooLarge:
            if not started:
                await self._refuse(send)

    async def _refuse(self, send: Any) -> None:
        body = json.dumps({"detail": _too_large_text(self.max_bytes)}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


def app_kwargs(max_request_bytes: int | None) -> dict:
    """``demo.launch(app_kwargs=...)`` that installs `BodySizeLimit` (nothing when ``max_request_bytes`` is None)."""
    if not max_request_bytes:
        return {}
    return {"middleware": [Middleware(BodySizeLimit, max_bytes=int(max_request_bytes))]}
