"""Trial 12's memory attacks on the public server, driven over real sockets against the real app on loopback.

F4: a huge ``session_hash`` (under the body cap) was kept by Gradio's queue bookkeeping for good, ~8.5 MB a request;
`playground.http_limits.SessionIdCheck` refuses any session id that is not a short random one, wherever a request
can name one. F6: unfinished request bodies were held with no time limit (60 x 7 MB parked from one address);
`playground.http_limits.BodyGuard` gives each body a deadline and caps the unfinished-body bytes of one visitor and
of all. The server runs with small caps so that a few MB show each bound.
"""

from __future__ import annotations

import json
import socket
import time
import uuid

import httpx
import pytest

from tests.serving import start_app

PER_ADDRESS_MB = 8
TOTAL_MB = 12
BODY_TIMEOUT = 10.0
TEMPLATE = json.dumps({"start_anchor": "@", "fields": {"content": {"close": "<|im_end|>"}}})


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("guards") / "server.log"
    proc, url = start_app(["--public", "--no-preload", "--trust-forwarded-for", "--body-timeout", str(BODY_TIMEOUT),
                           "--max-request-mb", "20",
                           "--max-pending-body-mb-per-address", str(PER_ADDRESS_MB),
                           "--max-pending-body-mb", str(TOTAL_MB)],
                          log, lambda url: httpx.get(url + "config", timeout=10).raise_for_status())
    yield proc, url
    proc.kill()
    proc.wait(timeout=30)


def _paste_join(url: str, session_hash, visitor: str, raw: str = "@hello") -> httpx.Response:
    """A ``queue/join`` of ``paste_parse`` as the page sends it, with the given ``session_hash``."""
    config = httpx.get(url + "config", timeout=30).json()
    dep = next(d for d in config["dependencies"] if d.get("api_name") == "paste_parse")
    states = {c["id"] for c in config["components"] if c.get("type") == "state"}
    token = {c["id"] for c in config["components"] if c.get("props", {}).get("elem_id") == "page-token"}
    values = iter([raw, "", "", TEMPLATE])  # the page's token: "" (a new page's)
    body = {"data": [None if i in states else "" if i in token else next(values) for i in dep["inputs"]],
            "fn_index": dep["id"],
            "session_hash": session_hash, "event_data": None, "trigger_id": None}
    return httpx.post(url + "gradio_api/queue/join", content=json.dumps(body), timeout=60,
                      headers={"content-type": "application/json", "x-forwarded-for": visitor})


def _completion(url: str, session_hash: str) -> dict:
    with httpx.stream("GET", url + f"gradio_api/queue/data?session_hash={session_hash}", timeout=120) as stream:
        for line in stream.iter_lines():
            if line.startswith("data:") and json.loads(line[5:]).get("msg") == "process_completed":
                return json.loads(line[5:])
    raise AssertionError("no completion")


def test_a_session_hash_not_shaped_like_gradios_is_refused_everywhere(server):
    _, url = server
    long_id, spaced = "h" * 129, "two words"
    for bad in (long_id, spaced, "", 12345, ["a"]):
        answer = _paste_join(url, bad, "10.1.0.1")
        assert answer.status_code == 422, (bad, answer.text)
        assert "session_hash" in answer.json()["detail"] and "128" in answer.json()["detail"]
    # a key written with JSON escapes reads as "session_hash" to Starlette's parser, and so here
    escaped = '{"data": ["@x", "", "", null], "fn_index": 0, "\\u0073ession_hash": "%s"}' % long_id
    answer = httpx.post(url + "gradio_api/queue/join", content=escaped, headers={"content-type": "application/json"})
    assert answer.status_code == 422, answer.text
    for path, body in (("gradio_api/call/paste_parse", {"data": ["@x", "", ""], "session_hash": long_id}),
                       ("gradio_api/cancel", {"session_hash": long_id, "fn_index": 0, "event_id": "e"}),
                       ("gradio_api/component_server", {"session_hash": long_id, "component_id": 1,
                                                        "fn_name": "f", "data": None})):
        answer = httpx.post(url + path, json=body, timeout=30)
        assert answer.status_code == 422, (path, answer.text)
    for path in (f"gradio_api/queue/data?session_hash={long_id}", f"gradio_api/heartbeat/{long_id}",
                 f"gradio_api/upload_progress?upload_id={long_id}", "gradio_api/queue/data?session_hash=a%20b"):
        answer = httpx.get(url + path, timeout=30)
        assert answer.status_code == 422, (path, answer.text)
    answer = httpx.post(url + "gradio_api/component_server", files={"data": ("x", b"1")}, timeout=30)
    assert answer.status_code == 415, answer.text
    # the shapes Gradio's page (base 36) and gradio_client (a uuid) make still work, answers and all
    for good in ("k3j9x0a1b2c", str(uuid.uuid4()), "A" * 128):
        answer = _paste_join(url, good, "10.1.0.2")
        assert answer.status_code == 200, answer.text
        done = _completion(url, good)
        assert done["success"] and done["event_id"] == answer.json()["event_id"], done


def test_huge_session_hashes_are_not_kept(server):
    proc, url = server
    size, count = 3_000_000, 20  # kept, 20 such requests grew the server by ~70 MB before
    before = _rss_mb(proc.pid)
    for k in range(count):
        answer = _paste_join(url, f"{k:04d}" + "h" * size, "10.2.0.1")
        assert answer.status_code == 422
    grown = _rss_mb(proc.pid) - before
    assert grown < count * size / 2 ** 20 / 2, f"the server grew by {grown:.0f} MB"
    assert _paste_join(url, "afterwards1", "10.2.0.1").status_code == 200


def _park(port: int, visitor: str, size: int) -> socket.socket:
    """A connection that sends a ``queue/join`` head and all but the last byte of a ``size``-byte body, then waits
    (a refused one may already be closed, or reset, by the time the body is sent)."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"POST /gradio_api/queue/join HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"X-Forwarded-For: %s\r\nContent-Length: %d\r\n\r\n" % (visitor.encode(), size))
    try:
        sock.sendall(b'{"data":["' + b"a" * (size - 11))
    except OSError:
        pass
    return sock


def _answer(sock: socket.socket, wait: float = 120.0) -> str:
    """The status line the server answers on ``sock`` ("closed" when it closes or resets it without one); fails
    when the connection is still held after ``wait`` seconds."""
    sock.settimeout(wait)
    try:
        data = sock.recv(4096)
    except socket.timeout:
        raise AssertionError(f"still held after {wait:g} s") from None
    except OSError:
        return "closed"
    finally:
        sock.close()
    return data.split(b"\r\n")[0].decode() if data else "closed"


def _read_all(sock: socket.socket, wait: float = 120.0) -> bytes:
    """Everything the server sends on ``sock`` until it closes it (the answers here close their connection)."""
    sock.settimeout(wait)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    finally:
        sock.close()
    return data


def _port(url: str) -> int:
    return int(url.rstrip("/").rsplit(":", 1)[1])


def test_one_visitor_cannot_park_more_unfinished_bodies_than_its_cap(server):
    proc, url = server
    size, count = 4_000_000, 12  # 48 MB of unfinished bodies asked for, 8 MB allowed to one visitor
    before = _rss_mb(proc.pid)
    socks = [_park(_port(url), "10.3.0.1", size) for _ in range(count)]
    grown = _rss_mb(proc.pid) - before
    answers = [_answer(s) for s in socks]  # every one is answered in the end: none is held for good
    late = answers.count("HTTP/1.1 408 Request Timeout")
    assert 1 <= late <= PER_ADDRESS_MB * 2 ** 20 // size, answers
    assert all(a in ("HTTP/1.1 503 Service Unavailable", "closed") for a in answers if "408" not in a), answers
    assert grown < count * size / 2 ** 20 / 2, f"the server grew by {grown:.0f} MB"


def test_all_visitors_together_are_capped_and_a_normal_request_still_goes_through(server):
    _, url = server
    size = 4_000_000  # under one visitor's cap; the total (12 MB) takes 3
    socks = [_park(_port(url), f"10.4.0.{n}", size) for n in range(1, 7)]
    # meanwhile a normal visitor's request (a small body) is taken and answered
    answer = _paste_join(url, "normal00001", "10.4.1.1")
    assert answer.status_code == 200, answer.text
    assert _completion(url, "normal00001")["success"]
    answers = [_answer(s) for s in socks]
    late = answers.count("HTTP/1.1 408 Request Timeout")
    assert 1 <= late <= TOTAL_MB * 2 ** 20 // size, answers
    assert all(a in ("HTTP/1.1 503 Service Unavailable", "closed") for a in answers if "408" not in a), answers
    assert "HTTP/1.1 503 Service Unavailable" in answers, answers  # read: the rest of each body was dropped first


def test_a_refusal_says_which_cap_and_a_late_body_says_the_deadline(server):
    _, url = server
    port = _port(url)
    # one body larger than a visitor's cap on its own (the body cap is 20 MB here): refused, and the client, still
    # sending, reads why (the rest of the body is read and dropped first)
    size = (PER_ADDRESS_MB + 2) * 2 ** 20
    over = socket.create_connection(("127.0.0.1", port))
    over.sendall(b"POST /gradio_api/queue/join HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"X-Forwarded-For: 10.5.0.1\r\nContent-Length: %d\r\n\r\n" % size)
    over.sendall(b'{"data":["' + b"a" * (size - 10))
    refusal = _read_all(over)
    assert refusal.startswith(b"HTTP/1.1 503"), refusal[:200]
    assert b"from your address" in refusal and f"at most {PER_ADDRESS_MB:g} MB".encode() in refusal, refusal
    # a body that stops short of its Content-Length is answered at its deadline
    late = _park(port, "10.5.0.2", 200_000)
    answer = _read_all(late)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert f"within {BODY_TIMEOUT:g} s".encode() in answer, answer


def test_a_public_server_installs_both_guards_with_its_limits_and_a_private_one_neither():
    import argparse
    import os
    import sys

    from playground import http_limits
    from playground.limits import Limits, add_arguments, from_arguments

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    import app

    public = Limits.public_space(trust_forwarded_for=True)
    middleware = app.serving_kwargs(public, 8)[1]["app_kwargs"]["middleware"]
    assert [m.cls for m in middleware[:3]] == [http_limits.BodySizeLimit, http_limits.BodyGuard,
                                               http_limits.SessionIdCheck]
    assert middleware[1].kwargs == {"timeout": public.body_timeout, "trust_forwarded": True,
                                    "per_client_bytes": int(public.max_pending_body_mb_per_address * 2 ** 20),
                                    "total_bytes": int(public.max_pending_body_mb * 2 ** 20)}
    assert app.serving_kwargs(Limits.private(), 8)[1]["app_kwargs"] == {}
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    limits = from_arguments(parser.parse_args(["--public", "--body-timeout", "0", "--max-pending-body-mb", "1.5"]),
                            "m")[0]
    assert limits.body_timeout is None and limits.max_pending_body_mb == 1.5
    assert http_limits.session_id_ok("k3j9x0a1b2c") and not http_limits.session_id_ok("k3j9x0a1b2c\n")


def test_answers_never_read_count_against_their_visitor_until_it_reads_them(server):
    """Gradio keeps each finished job's answer until a stream reads it: one session joining and never reading piled
    them up (56 answers of 0.46 MB: +57 MB, kept). Unread answers now take the visitor's job slots (4 in public)."""
    from playground.fairness import refusal_text
    from playground.limits import Limits

    _, url = server
    cap = Limits.public_space().max_jobs_per_client
    session, visitor = "unread00001", "10.6.0.1"
    taken, refused = 0, None
    deadline = time.monotonic() + 120
    while refused is None and time.monotonic() < deadline:
        answer = _paste_join(url, session, visitor)
        if answer.status_code == 503:
            refused = answer
        else:
            assert answer.status_code == 200, answer.text
            taken += 1
            time.sleep(0.5)  # the job finishes; only its unread answer is left
    assert refused is not None and refused.json()["detail"] == refusal_text(cap), "never refused"
    assert taken == cap
    completed = 0
    with httpx.stream("GET", url + f"gradio_api/queue/data?session_hash={session}", timeout=120) as stream:
        for line in stream.iter_lines():
            if line.startswith("data:") and json.loads(line[5:]).get("msg") == "process_completed":
                completed += 1
    assert completed == cap  # every answer was kept for its reader
    deadline = time.monotonic() + 60
    while (answer := _paste_join(url, session, visitor)).status_code == 503 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert answer.status_code == 200, answer.text
    assert _completion(url, session)["success"]
