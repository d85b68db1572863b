"""A cap on the size of every HTTP request body, before Gradio reads it.

Gradio 6.31 and FastAPI read a request's whole JSON body into memory before any handler can check a size (Gradio's
``max_file_size`` covers uploads only): a 100 MB paste sent to ``/gradio_api/call/paste_parse`` grew the server by
210 MB, kept after the request, and the handler's own limit (256 K characters) refused it only afterwards.
`BodySizeLimit` answers ``413`` to a body over the cap, found from ``Content-Length`` or, for chunked uploads, as
soon as the bytes received pass it. Before answering it reads and discards the rest of the body, up to a bound
(`DRAIN_FACTOR` times the cap, `DRAIN_SECONDS`): a server that closes its connection with request bytes still
unread makes the kernel reset it, and the client, still sending, gets "connection reset" instead of the 413 (a
9 MB paste did). That is what nginx's "lingering close" does; neither uvicorn nor Starlette caps bodies.

`BodyGuard` bounds the time a body may take and the bytes of unfinished bodies held; `SessionIdCheck` refuses a
session id that is not a short random one (both from trial 12).

Install them through ``demo.launch(app_kwargs=app_kwargs(...))``.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from typing import Any
from urllib.parse import parse_qsl

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


async def drain(receive: Any, received: int, max_bytes: int, seconds: float) -> None:
    """Read and drop the rest of a refused request body from ``receive`` (``received`` bytes of it were read
    already) until it ends, the client leaves, ``max_bytes`` in all were read, or ``seconds`` pass, so that the
    client, still sending, reads the answer instead of a reset."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while received <= max_bytes:
        try:
            message = await asyncio.wait_for(receive(), deadline - loop.time())
        except asyncio.TimeoutError:
            return
        if message["type"] != "http.request":
            return  # http.disconnect
        received += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


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
        await drain(receive, received, self.drain_bytes, self.drain_seconds)

    async def _refuse(self, send: Any) -> None:
        body = json.dumps({"detail": _too_large_text(self.max_bytes)}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


def app_kwargs(max_request_bytes: int | None, *, body_timeout: float | None = None,
               pending_client_bytes: int | None = None, pending_total_bytes: int | None = None,
               trust_forwarded: bool = False, check_session_ids: bool = False) -> dict:
    """``demo.launch(app_kwargs=...)`` that installs, outermost first, `BodySizeLimit` (when ``max_request_bytes``),
    `BodyGuard` (when any of ``body_timeout``, ``pending_client_bytes``, ``pending_total_bytes``; see it for them
    and ``trust_forwarded``) and `SessionIdCheck` (when ``check_session_ids``); ``{}`` when none is asked for."""
    middleware = []
    if max_request_bytes:
        middleware.append(Middleware(BodySizeLimit, max_bytes=int(max_request_bytes)))
    if body_timeout is not None or pending_client_bytes is not None or pending_total_bytes is not None:
        middleware.append(Middleware(BodyGuard, timeout=body_timeout, per_client_bytes=pending_client_bytes,
                                     total_bytes=pending_total_bytes, trust_forwarded=trust_forwarded))
    if check_session_ids:
        middleware.append(Middleware(SessionIdCheck))
    return {"middleware": middleware} if middleware else {}


# ---------------------------------------------------------------- session ids (trial 12, F4)

#: the longest session id taken: Gradio's page makes ~11-13 characters (base 36), gradio_client a 36-character uuid
SESSION_ID_MAX = 128
_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,%d}" % SESSION_ID_MAX)
# where a request names a session or an upload outside its body: query parameters and the heartbeat's path
_ID_PARAMS = ("session_hash", "upload_id")
_HEARTBEAT = re.compile(r"/heartbeat/([^/]*)/?\Z")
# a body that has neither can hold no "session_hash" key, even written with JSON escapes
_BODY_HINTS = (b"session_hash", b"\\")


def session_id_ok(value: Any) -> bool:
    """True when ``value`` has the shape of a session (or upload) id that Gradio's page or clients make: 1 to
    `SESSION_ID_MAX` ASCII letters, digits, ``-`` or ``_``."""
    return isinstance(value, str) and _SESSION_ID.fullmatch(value) is not None


def _bad_id_text(what: str, value: Any) -> str:
    size = f"{len(value):,} characters" if isinstance(value, str) else f"a JSON {type(value).__name__}"
    return (f"{what} must be a session id as Gradio's page makes it: 1 to {SESSION_ID_MAX} letters, digits, '-' or "
            f"'_' (this one is {size}).")


# Gradio's upload route (also under a mount prefix): its page shows a refused upload's answer body verbatim in an
# error toast ("HTTP 429: <body>"), so refusals there are plain text, not JSON.
UPLOAD_ROUTE = "/gradio_api/upload"


def on_route(path: str, route: str) -> bool:
    """True for a request path that reaches ``route`` (also under a mount prefix or with a trailing slash)."""
    return path.rstrip("/").endswith(route)


async def send_refusal(send: Any, status: int, detail: str, *, path: str = "", retry_after: int | None = None) -> None:
    """Send a whole refusal that closes the connection (the body may be unread): ``{"detail": ...}`` JSON, as
    Starlette's ``HTTPException`` answers (what API clients read), except on `UPLOAD_ROUTE` (``path``: the
    request's), where it is ``detail`` as plain text for the page's toast. ``retry_after``: seconds, sent as a
    ``Retry-After`` header."""
    if on_route(path, UPLOAD_ROUTE):
        body, kind = detail.encode(), b"text/plain; charset=utf-8"
    else:
        body, kind = json.dumps({"detail": detail}).encode(), b"application/json"
    headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class SessionIdCheck:
    """ASGI middleware: refuse with ``422`` a request that names a session or an upload by anything but a short id.

    Gradio 6.31 takes a client's ``session_hash`` as it comes and keeps it as a key of its queue's bookkeeping
    (``pending_messages_per_session``, ``pending_event_ids_session``, which a client that never reads its answers
    never clears) and of its state holder: trial 12 sent 100 ``queue/join`` bodies under the 8 MB cap, each with a
    distinct 7.5 MB ``session_hash``, and the public server grew by 856 MB, kept. This checks, before Gradio sees
    the request, every place one can be named (`session_id_ok`): the ``session_hash`` and ``upload_id`` query
    parameters (``queue/data``, ``upload``, ``upload_progress``), the ``session_hash`` header (``upload``), the
    ``heartbeat/{session_hash}`` path and the top-level ``session_hash`` of a JSON body (``queue/join``,
    ``call/*``, ``run/*``, ``api/*``, ``cancel``, ``component_server``). A JSON body is read whole first (it is at
    most the body cap: `BodySizeLimit` runs before) and parsed with the same parser Starlette uses, so a key
    written with escapes or given twice reads the same here as there. ``component_server`` also takes a form
    (``multipart/form-data``); no component of this playground has server functions, so such a call could only
    make a session entry, and it is refused with ``415``.
    """

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = self._head_problem(scope)
        if problem is not None:
            await send_refusal(send, *problem, path=scope.get("path", ""))
            return
        if scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        content_type = dict(scope.get("headers") or ()).get(b"content-type", b"").lower()
        if content_type.startswith((b"multipart/", b"application/x-www-form-urlencoded")):
            if scope.get("path", "").rstrip("/").endswith("/component_server"):
                await send_refusal(send, 415, "component_server takes JSON bodies only on this server.")
                return
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left before its body ended
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        del chunks
        if any(hint in body for hint in _BODY_HINTS):
            try:
                parsed = json.loads(body)
            except (ValueError, RecursionError):
                parsed = None  # not JSON: the app answers it as it does
            if isinstance(parsed, dict) and parsed.get("session_hash") is not None \
                    and not session_id_ok(parsed["session_hash"]):
                await send_refusal(send, 422, _bad_id_text("session_hash", parsed["session_hash"]))
                return
            del parsed
        replayed = False

        async def replay() -> dict:
            nonlocal replayed, body
            if replayed:
                return await receive()  # after the body: the client leaving (http.disconnect)
            replayed = True
            message, body = {"type": "http.request", "body": body, "more_body": False}, b""
            return message

        await self.app(scope, replay, send)

    @staticmethod
    def _head_problem(scope: dict) -> tuple[int, str] | None:
        """``(status, detail)`` when the request's path, query or headers name a session badly, else None."""
        query = scope.get("query_string") or b""
        if query:
            for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
                if name in _ID_PARAMS and not session_id_ok(value):
                    return 422, _bad_id_text(name, value)
        match = _HEARTBEAT.search(scope.get("path", ""))
        if match and not session_id_ok(match.group(1)):
            return 422, _bad_id_text("session_hash", match.group(1))
        header = dict(scope.get("headers") or ()).get(b"session_hash")
        if header is not None and not session_id_ok(header.decode("latin-1")):
            return 422, _bad_id_text("session_hash", header.decode("latin-1"))
        return None


# ---------------------------------------------------------------- unfinished bodies (trial 12, F6)

#: a request whose body has sent at most this many bytes is never refused by the caps on unfinished bodies (the
#: page's own requests are a few KB); uvicorn itself buffers about this much per connection before it stops reading
SMALL_BODY = 64 * 1024


def _body_limit_text(status: int, timeout: float | None, cap_mb: float | None, whose: str) -> str:
    if status == 408:
        return (f"Request body not complete within {timeout:g} s: this server takes a whole request body within "
                f"{timeout:g} s of its head. To send it slowly, run the playground on your own machine "
                "(python app.py).")
    return (f"This server is receiving too many unfinished request bodies {whose} (at most {cap_mb:g} MB at once): "
            f"try again in a moment, or run the playground on your own machine (python app.py).")


class _BodyRefused(HTTPException):
    """Raised from ``receive`` when a body is late (``408``) or would pass a cap on unfinished bodies (``503``)."""


class BodyGuard:
    """ASGI middleware: a deadline for each request body, and caps on the bytes of unfinished bodies held.

    uvicorn bounds the time to send a request head (`playground.connections`) but not a body, and Starlette keeps
    what has arrived of a body until it ends: trial 12 opened 60 connections from one address, each sending all but
    the last byte of a 7 MB body (under the 8 MB cap), and the public server grew by 427 MB for as long as they
    stayed open; 256 connections x 8 MB is 2 GB from one address. Here:

    * a request's body must be complete within ``timeout`` seconds of its head, else ``408`` (the connection is
      closed: the rest is unread);
    * the bytes received of bodies not yet complete are counted per client (`playground.fairness.client_key`:
      the peer address, or the visitor's ``X-Forwarded-For`` address behind a trusted proxy) and in all; a body
      whose arrival passes ``per_client_bytes`` or ``total_bytes`` is refused with ``503`` (its bytes stop counting
      at once; the rest of it is read and dropped first, within the body's deadline, as `BodySizeLimit` does, so
      that a client still sending reads the answer). A body that has sent at most `SMALL_BODY` bytes is counted but
      never refused, so that a page's normal requests are answered while large ones are refused. A body's bytes
      stop counting when it is complete (it is then the handler's).

    Args:
        app: the ASGI app to wrap.
        timeout: seconds from a request's head to the end of its body (None: no limit).
        per_client_bytes, total_bytes: unfinished-body bytes one client, and all, may have sent (None: no cap).
        trust_forwarded: take a client's address from ``X-Forwarded-For`` (`playground.fairness.client_key`).
    """

    def __init__(self, app: Any, timeout: float | None = None, per_client_bytes: int | None = None,
                 total_bytes: int | None = None, trust_forwarded: bool = False):
        self.app = app
        self.timeout = timeout
        self.per_client_bytes = per_client_bytes
        self.total_bytes = total_bytes
        self.trust_forwarded = trust_forwarded
        self.pending: dict[str | None, int] = {}  # unfinished-body bytes per client
        self.pending_total = 0

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from starlette.requests import HTTPConnection

        from .fairness import client_key

        client = client_key(HTTPConnection(scope), self.trust_forwarded)
        loop = asyncio.get_running_loop()
        deadline = None if self.timeout is None else loop.time() + self.timeout
        held = 0  # this body's bytes counted in self.pending
        done = started = refused = False
        drain_bytes = 0  # a refused body's rest to read and drop before the answer
        refusal: tuple[int, str] | None = None  # (status, detail) of a refused body

        async def drain_rest() -> None:
            nonlocal drain_bytes
            if drain_bytes:
                limit, drain_bytes = drain_bytes, 0
                await drain(receive, 0, limit, min(DRAIN_SECONDS, deadline_left()))

        def deadline_left() -> float:
            return math.inf if deadline is None else max(0.0, deadline - loop.time())

        def release() -> None:
            nonlocal held
            if held:
                left = self.pending.get(client, 0) - held
                if left > 0:
                    self.pending[client] = left
                else:
                    self.pending.pop(client, None)
                self.pending_total -= held
                held = 0

        async def guarded_receive() -> dict:
            nonlocal held, done, refused, drain_bytes, refusal
            if done:
                return await receive()
            try:
                if deadline is None:
                    message = await receive()
                else:
                    message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except asyncio.TimeoutError:
                refused = True
                release()
                refusal = (408, _body_limit_text(408, self.timeout, None, ""))
                raise _BodyRefused(*refusal) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                done = True
                release()
                return message
            size = len(message.get("body", b""))
            held += size
            self.pending[client] = self.pending.get(client, 0) + size
            self.pending_total += size
            if held > SMALL_BODY:
                over = None
                if self.per_client_bytes is not None and client is not None \
                        and self.pending[client] > self.per_client_bytes:
                    over = (self.per_client_bytes, "from your address")
                elif self.total_bytes is not None and self.pending_total > self.total_bytes:
                    over = (self.total_bytes, "from all visitors")
                if over is not None:
                    refused = True
                    release()
                    drain_bytes = DRAIN_FACTOR * over[0]  # dropped before the answer, once the app let go of its part
                    refusal = (503, _body_limit_text(503, None, over[0] / 2 ** 20, over[1]))
                    raise _BodyRefused(*refusal)
            return message

        async def watching_send(message: dict) -> None:
            nonlocal started
            if refused:  # the app answers the refusal itself (Starlette does): held until the app let go of the body
                app_answer.append(message)
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        app_answer: list[dict] = []  # the app's answer to a refused body, sent once the app returned
        try:
            await self.app(scope, guarded_receive, watching_send)
        except _BodyRefused:
            pass  # answered below, outside this block: the traceback (and the app's part of the body, which its
            # frames hold) is gone by then
        finally:
            release()
        if not refused:
            return
        await drain_rest()  # the rest of the body, read and dropped so that the client reads the answer
        if app_answer:
            for message in app_answer:
                if message["type"] == "http.response.start":  # the rest may be unread: no reuse of the connection
                    message = {**message, "headers": [*message.get("headers", ()), (b"connection", b"close")]}
                await send(message)
        elif not started:
            await send_refusal(send, *refusal, path=scope.get("path", ""))
