"""The HTTP body cap (`playground.http_limits`): a body over it gets 413 before the app reads it whole."""

from __future__ import annotations

import argparse
import json

import fastapi
import pytest
from fastapi.testclient import TestClient

from playground import http_limits
from playground.limits import Limits, add_arguments, from_arguments

CAP = 1024


def _client() -> tuple[TestClient, list]:
    seen: list = []
    app = fastapi.FastAPI(**http_limits.app_kwargs(CAP))

    @app.post("/echo")
    async def echo(body: dict):
        seen.append(len(body["data"]))
        return {"n": len(body["data"])}

    @app.post("/raw")
    async def raw(request: fastapi.Request):
        n = 0
        async for chunk in request.stream():
            n += len(chunk)
        seen.append(n)
        return {"n": n}

    return TestClient(app), seen


def test_a_body_under_the_cap_reaches_the_handler():
    client, seen = _client()
    r = client.post("/echo", json={"data": "x" * 500})
    assert r.status_code == 200 and r.json() == {"n": 500} and seen == [500]


def test_a_declared_length_over_the_cap_is_refused_unread():
    client, seen = _client()
    r = client.post("/echo", json={"data": "x" * (CAP + 1)})
    assert r.status_code == 413
    assert "this server takes at most" in r.json()["detail"] and "python app.py" in r.json()["detail"]
    assert seen == []


def test_a_chunked_body_is_cut_when_it_passes_the_cap():
    client, seen = _client()

    def chunks():
        for _ in range(100):
            yield b"y" * 100

    for path in ("/echo", "/raw"):
        r = client.post(path, content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413, (path, r.status_code, r.text)
        assert "this server takes at most" in r.text
    assert seen == []


def test_no_cap_installs_nothing():
    assert http_limits.app_kwargs(None) == {}


def test_public_servers_cap_request_bodies_and_the_flag_sets_it():
    assert Limits.public_space().max_request_bytes == 8 << 20 and Limits.private().max_request_bytes is None
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    limits, _ = from_arguments(parser.parse_args(["--public", "--max-request-mb", "2.5"]), "m")
    assert limits.max_request_bytes == int(2.5 * 2 ** 20)
    limits, _ = from_arguments(parser.parse_args(["--public", "--max-request-mb", "0"]), "m")
    assert limits.max_request_bytes is None


# ---------------------------------------------------------------- through a real server and socket


@pytest.fixture(scope="module")
def served():
    """The capped app under uvicorn (the server Gradio runs) on a free loopback port, with a 2 MB cap: a body over it
    outgrows the socket buffers, so a server that closed without reading it reset the client mid-send."""
    import threading

    import uvicorn

    from tests.serving import free_port

    app = fastapi.FastAPI(**http_limits.app_kwargs(BIG_CAP))

    @app.post("/echo")
    async def echo(request: fastapi.Request):
        return {"n": len(await request.body())}

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        thread.join(0.05)
    yield port
    server.should_exit = True
    thread.join(10)


BIG_CAP = 2 << 20


def _post(port: int, head: bytes, body_parts) -> tuple[int, dict]:
    """Send ``head`` then every part of ``body_parts`` on a raw socket (as a client that does not look at the
    answer before its body is out), then read the whole answer: (status, JSON body)."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(head)
        for part in body_parts:
            sock.sendall(part)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head_text, _, body = data.partition(b"\r\n\r\n")
    return int(head_text.split()[1]), json.loads(body)


def test_a_client_still_sending_a_body_over_the_cap_reads_the_413(served):
    """Trial 9: a 9 MB paste to a public server got "connection reset" (the answer went, unread bytes made the
    kernel reset the connection): the refused body is now read and dropped first."""
    size = 3 * BIG_CAP + 5
    head = (f"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n"
            "\r\n").encode()
    status, answer = _post(served, head, [b"x" * (size // 4)] * 4 + [b"x" * (size % 4)])
    assert status == 413 and "at most 2 MB" in answer["detail"]
    chunk = b"y" * (1 << 20)
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(3 * (BIG_CAP >> 20))) + b"0\r\n\r\n"
    head = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    status, answer = _post(served, head, [chunked])
    assert status == 413 and "at most 2 MB" in answer["detail"]
    # under the cap, the handler answers
    status, answer = _post(served, (f"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: {BIG_CAP}\r\n"
                                    "Connection: close\r\n\r\n").encode(), [b"z" * BIG_CAP])
    assert status == 200 and answer == {"n": BIG_CAP}


def test_a_body_declared_past_the_drain_bound_is_answered_without_waiting_for_it(served):
    """Past `DRAIN_FACTOR` times the cap nothing is read: the answer comes before a byte of the body is sent."""
    size = http_limits.DRAIN_FACTOR * BIG_CAP + 1
    head = f"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: {size}\r\n\r\n".encode()
    status, answer = _post(served, head, [])
    assert status == 413 and "at most 2 MB" in answer["detail"]
