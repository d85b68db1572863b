"""The HTTP body cap (`playground.http_limits`): a body over it gets 413 before the app reads it whole."""

from __future__ import annotations

import argparse

import fastapi
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
