"""A cap on the size of every HTTP request body, before Gradio reads it.

Gradio 6.31 and FastAPI read a request's whole JSON body into memory before any handler can check a size (Gradio's
``max_file_size`` covers uploads only): a 100 MB paste sent to ``/gradio_api/call/paste_parse`` grew the server by
210 MB, kept after the request, and the handler's own limit (256 K characters) refused it only afterwards.
`BodySizeLimit` answers ``413`` to a body over the cap, found from ``Content-Length`` or, for chunked uploads, as
soon as the bytes received pass it. Before answering it reads and discards the rest of the body, up to a bound
(`DRAIN_FACTOR` times the cap, `DRAIN_SECONDS`): a server that closes its connection with request bytes still
unread makes the kernel reset it, and the client, still sending, gets "connection reset" instead of the 413 (a
9 MB paste did). That is what nginx's "lingering close" does; neither uvicorn nor Starlette caps bodies.

Install it through ``demo.launch(app_kwargs=app_kwargs(limits))``.
"""

from __future__ import annotations

import asyncio
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


#: a refused body is read (and dropped) before the answer while it is at most this many times the cap in all...
DRAIN_FACTOR = 4
#: ...and for at most this many seconds; past either bound the answer goes at once (the client may see a reset)
DRAIN_SECONDS = 20.0


class BodySizeLimit:
    """ASGI middleware: refuse HTTP request bodies larger than ``max_bytes`` with ``413`` and a JSON ``detail``.

    Args:
        app: the ASGI app to wrap.
        max_bytes: the largest body accepted, in bytes.
        drain_factor, drain_seconds: how much of a refused body is read and dropped before the answer, so that
            the client reads it (`DRAIN_FACTOR`, `DRAIN_SECONDS`).
    """

    def __init__(self, app: Any, max_bytes: int, drain_factor: float = DRAIN_FACTOR,
                 drain_seconds: float = DRAIN_SECONDS):
        self.app = app
        self.max_bytes = max_bytes
        self.drain_bytes = int(drain_factor * max_bytes)
        self.drain_seconds = drain_seconds

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
            if int(declared) <= self.drain_bytes:  # else the answer goes at once: reading it would be for nothing
                await self._drain(receive, 0)
            await self._refuse(send)
            return
        received = 0
        started = refused = False

        async def counting_receive() -> dict:
            nonlocal received, refused
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    refused = True
                    if message.get("more_body", False):
                        await self._drain(receive, received)
                    raise _TooLarge(self.max_bytes)
            return message

        async def watching_send(message: dict) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if refused:  # the app answers the refusal itself (Starlette does): the rest may be unread
                    message = {**message, "headers": [*message.get("headers", ()), (b"connection", b"close")]}
            await send(message)

        try:
            await self.app(scope, counting_receive, watching_send)
        except _TooLarge:
            if not started:
                await self._refuse(send)

    async def _drain(self, receive: Any, received: int) -> None:
        """Read and drop the rest of a refused request body (``received`` bytes of it were read already) until it
        ends, the client leaves, it passes ``drain_bytes`` in all, or ``drain_seconds`` pass."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.drain_seconds
        while received <= self.drain_bytes:
            try:
                message = await asyncio.wait_for(receive(), deadline - loop.time())
            except asyncio.TimeoutError:
                return
            if message["type"] != "http.request":
                return  # http.disconnect
            received += len(message.get("body", b""))
            if not message.get("more_body", False):
                return

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
