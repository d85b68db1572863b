"""Event streams per visitor (`playground.stream_limits`), on a real ``app.py --public`` process: Gradio's
heartbeat stream takes any session name and never ends, so one client could hold every connection with them;
past ``--max-streams-per-client`` a new one is refused with a reason, and Gradio's reload-mode stream is not
served publicly."""

from __future__ import annotations

import json
import socket
import time
import uuid

import httpx
import pytest

from playground.stream_limits import DEV_TEXT, middleware, refusal_text
from tests.serving import start_app

CAP = 3


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("streams") / "server.log"
    proc, url = start_app(["--public", "--no-preload", "--max-streams-per-client", str(CAP)], log,
                          lambda url: httpx.get(url + "config", timeout=5).raise_for_status())
    yield int(url.rstrip("/").rsplit(":", 1)[1]), log
    proc.kill()
    proc.wait()


def _open(port: int, source: str, path: str) -> tuple[int, bytes, socket.socket]:
    """GET ``path`` from ``source``: the answer's status, what came after its head so far, and the socket."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60, source_address=(source, 0))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        part = sock.recv(4096)
        assert part, f"closed before an answer to {path}: {data!r}"
        data += part
    head, rest = data.split(b"\r\n\r\n", 1)
    return int(head.split(b" ", 2)[1]), rest, sock


def _heartbeat(port: int, source: str) -> tuple[int, bytes, socket.socket]:
    """A heartbeat stream under a made-up session name, as a hostile client would open many."""
    return _open(port, source, f"/gradio_api/heartbeat/{uuid.uuid4().hex}")


def _detail(port: int, status: int, rest: bytes, sock: socket.socket) -> str:
    """The JSON ``detail`` of a short answer (``rest`` holds its start)."""
    sock.settimeout(30)
    while True:
        try:
            return json.loads(rest)["detail"]
        except ValueError:
            part = sock.recv(4096)
            assert part, rest
            rest += part


def test_one_visitor_cannot_hold_more_event_streams_than_the_cap(server):
    port, log = server
    held = []
    try:
        for _ in range(CAP):
            status, _, sock = _heartbeat(port, "127.0.0.7")
            held.append(sock)
            assert status == 200
        status, rest, extra = _heartbeat(port, "127.0.0.7")
        with extra:
            assert status == 429 and _detail(port, status, rest, extra) == refusal_text(CAP)
        # other requests of that visitor, and another visitor's streams, are not held back
        with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.7"), timeout=60) as client:
            assert client.get(f"http://127.0.0.1:{port}/config").status_code == 200
        status, _, other = _heartbeat(port, "127.0.0.8")
        other.close()
        assert status == 200
        # a stream the visitor closes frees its place (the server learns of the close when its loop gets to it)
        held.pop().close()
        deadline = time.monotonic() + 60
        while True:
            status, _, sock = _heartbeat(port, "127.0.0.7")
            if status == 200 or time.monotonic() > deadline:
                break
            sock.close()
            time.sleep(0.5)
        held.append(sock)
        assert status == 200, "a stream closed by the visitor still counted"
    finally:
        for s in held:
            s.close()
    assert "Traceback" not in log.read_text()


def test_the_reload_stream_is_not_served_publicly(server):
    port, _ = server
    status, rest, sock = _open(port, "127.0.0.9", "/gradio_api/dev/reload")
    with sock:
        assert status == 404 and _detail(port, status, rest, sock) == DEV_TEXT


def test_the_middleware_is_there_on_a_public_server_or_with_a_cap():
    assert middleware(None, False, public=False) == []
    (public,) = middleware(32, True, public=True)
    assert public.kwargs == {"per_client": 32, "trust_forwarded": True, "block_dev": True}
    (private,) = middleware(5, False, public=False)
    assert private.kwargs["block_dev"] is False
