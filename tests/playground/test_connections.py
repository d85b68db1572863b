"""Connection bounds of a public server (`playground.connections`), on a real ``app.py --public`` process: one
address cannot hold every connection with half-sent requests (trial 10 held 19,990 and locked everyone out), and a
request head that never ends is closed."""

from __future__ import annotations

import socket

import httpx
import pytest

from tests.serving import start_app

CAP = 20
HEAD_TIMEOUT = 15


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("conn") / "server.log"
    proc, url = start_app(["--public", "--no-preload", "--head-timeout", str(HEAD_TIMEOUT),
                           "--max-connections-per-address", str(CAP)], log,
                          lambda url: httpx.get(url + "config", timeout=5).raise_for_status())
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    yield port, log
    proc.kill()
    proc.wait()


# The hostile address is not 127.0.0.1: Gradio's launch checks its own server from there (and stops the app when
# that check is refused), possibly after the server already answers the fixture.
HOSTILE = "127.0.0.3"


def _half_sent(port: int, source: str = HOSTILE) -> socket.socket:
    """A connection from ``source`` whose request head never ends (a slowloris client's)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30, source_address=(source, 0))
    sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
    return sock


def _closed_by_server(sock: socket.socket, within: float) -> bool:
    """Whether the server closed ``sock`` (end of stream or reset) within ``within`` seconds."""
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def _served(port: int, source: str) -> int | str:
    """The status of a plain request from ``source``, or what went wrong."""
    try:
        with httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=60) as client:
            return client.get(f"http://127.0.0.1:{port}/config").status_code
    except httpx.HTTPError as e:
        return repr(e)


def test_one_address_cannot_hold_every_connection_and_half_sent_heads_are_closed(server):
    port, log = server
    held = [_half_sent(port) for _ in range(CAP)]
    try:
        extra = _half_sent(port)
        assert _closed_by_server(extra, 10), "a connection past the per-address cap was kept"
        extra.close()
        other = _served(port, "127.0.0.2")
        assert other == 200, f"another address was not served meanwhile: {other}"
        # the held heads never end: the server closes each once its head timeout passes
        assert all(_closed_by_server(s, HEAD_TIMEOUT + 45) for s in held)
    finally:
        for s in held:
            s.close()
    again = _served(port, HOSTILE)
    assert again == 200, f"the address was not served once its connections were closed: {again}"
    assert "Too many open files" not in log.read_text()
