"""`playground.fairness.client_key`: which visitor a request comes from (real Starlette requests)."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from playground.fairness import client_key, install, refusal_text



def _request(peer: str | None, forwarded: str | None = None) -> Request:
    headers = [(b"x-forwarded-for", forwarded.encode())] if forwarded is not None else []
    scope = {"type": "http", "method": "POST", "path": "/gradio_api/queue/join", "headers": headers,
             "client": (peer, 50000) if peer is not None else None}
    return Request(scope)


def test_the_peer_address_is_the_visitor_unless_a_proxy_is_trusted():
    assert client_key(_request("203.0.113.7"), trust_forwarded=False) == "203.0.113.7"
    # not behind a trusted proxy: a header the client wrote itself changes nothing
    assert client_key(_request("203.0.113.7", "1.2.3.4"), trust_forwarded=False) == "203.0.113.7"


def test_behind_a_trusted_proxy_the_address_the_proxy_appended_is_the_visitor():
    # a Space's proxy connects from its own address and appends the address it was reached from
    assert client_key(_request("10.16.3.80", "1.2.3.4"), trust_forwarded=True) == "1.2.3.4"
    assert client_key(_request("10.16.3.80", " 5.6.7.8 "), trust_forwarded=True) == "5.6.7.8"
    # proxies' own private hops after it are passed over
    assert client_key(_request("10.16.3.80", "1.2.3.4, 10.16.3.80"), trust_forwarded=True) == "1.2.3.4"
    assert client_key(_request("10.16.3.80", "1.2.3.4, 172.16.0.9, 127.0.0.1"),
                      trust_forwarded=True) == "1.2.3.4"
    # no (or an empty, or a meaningless) header: the peer
    assert client_key(_request("10.16.3.80"), trust_forwarded=True) == "10.16.3.80"
    assert client_key(_request("10.16.3.80", ""), trust_forwarded=True) == "10.16.3.80"
    assert client_key(_request("10.16.3.80", " , unknown"), trust_forwarded=True) == "10.16.3.80"


def test_a_forwarded_for_written_by_the_client_does_not_change_who_it_is():
    """The left-most entries are whatever the client sent before the proxy appended its address: a client that
    writes a different address on every request is still one visitor."""
    real = "9.9.9.9"
    keys = {client_key(_request("10.16.3.80", f"{forged}, {real}"), trust_forwarded=True)
            for forged in ("4.3.2.1", "4.3.2.2", "2001:db8::1", "10.0.0.1", "garbage", "1.1.1.1, 8.8.8.8")}
    assert keys == {real}


def test_forwarded_entries_with_ports_and_brackets_and_private_networks():
    from playground.fairness import forwarded_client

    assert forwarded_client("1.2.3.4:4711") == "1.2.3.4"
    assert forwarded_client("[2606:4700::1]:443, 10.0.0.2") == "2606:4700::1"
    assert forwarded_client("2606:4700:0:0::1") == "2606:4700::1"
    # all private (a proxy on a private network): the left-most address is the visitor
    assert forwarded_client("10.0.0.5, 10.16.3.80") == "10.0.0.5"
    assert forwarded_client("unknown, 192.168.1.4") == "192.168.1.4"
    assert forwarded_client("unknown") is None and forwarded_client(" , ") is None


def test_unknown_clients_are_not_capped():
    assert client_key(None, trust_forwarded=True) is None
    assert client_key(_request(None), trust_forwarded=False) is None


def test_install_needs_a_queue_and_a_cap():
    import gradio as gr

    with gr.Blocks() as demo:
        gr.Markdown("x")
    install(demo, None, trust_forwarded=False)  # no cap: nothing to install, no queue needed
    demo._queue = None
    with pytest.raises(RuntimeError, match="demo.queue"):
        install(demo, 4, trust_forwarded=False)
    assert "at most 1 job at a time" in refusal_text(1) and "at most 4 jobs" in refusal_text(4)


def test_the_forwarded_address_is_trusted_on_a_space_or_when_asked(monkeypatch):
    import argparse

    from playground.limits import add_arguments, from_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    monkeypatch.delenv("SPACE_ID", raising=False)
    limits, _ = from_arguments(parser.parse_args(["--public"]), "m")
    assert limits.max_jobs_per_client == 4 and not limits.trust_forwarded_for
    limits, _ = from_arguments(parser.parse_args(["--public", "--trust-forwarded-for",
                                                  "--max-jobs-per-client", "2"]), "m")
    assert limits.max_jobs_per_client == 2 and limits.trust_forwarded_for
    limits, _ = from_arguments(parser.parse_args(["--public", "--max-jobs-per-client", "0"]), "m")
    assert limits.max_jobs_per_client is None
    monkeypatch.setenv("SPACE_ID", "someone/playground")
    limits, _ = from_arguments(parser.parse_args([]), "m")
    assert limits.public and limits.trust_forwarded_for and limits.max_jobs_per_client == 4


def _fake_demo():
    """A demo whose queue records what the wrapped ``push`` lets through (enough of gradio 6.31's queue for
    `install`: no job ever runs, so only the new-session count can refuse)."""
    import asyncio
    import threading
    from types import SimpleNamespace

    let_in = []

    async def push(body, request, username):
        let_in.append(body.session_hash)
        return True, None

    queue = SimpleNamespace(event_ids_to_events={}, pending_event_ids_session={}, pending_messages_per_session={},
                            push=push)
    demo = SimpleNamespace(_queue=queue)

    def join(session, address):
        from types import SimpleNamespace as NS
        body = NS(session_hash=session)
        # In a thread of its own: in the whole suite an earlier browser test's Playwright keeps an event loop
        # running in this one, where asyncio.run refuses to start.
        answer = []
        thread = threading.Thread(target=lambda: answer.append(asyncio.run(queue.push(body, _request(address), None))))
        thread.start()
        thread.join()
        return answer[0]

    return demo, join, let_in


def test_one_visitor_cannot_start_more_sessions_than_its_cap_per_window(monkeypatch):
    """Trial 14 H1: 1,000 cheap calls, each from a fresh session, evicted every other visitor's session (Gradio
    keeps --max-sessions, oldest out). A visitor may start `new_sessions` per window; its sessions' later jobs and
    other visitors go through; once the window passed it may start new ones again."""
    import playground.fairness as fairness
    from playground.fairness import session_refusal_text

    clock = [1000.0]
    monkeypatch.setattr(fairness.time, "monotonic", lambda: clock[0])
    demo, join, let_in = _fake_demo()
    install(demo, 4, trust_forwarded=False, new_sessions=3, window=600.0)
    for i in range(3):
        assert join(f"s{i}", "203.0.113.5")[0]
        clock[0] += 1
    refused = join("s3", "203.0.113.5")
    assert refused == (False, session_refusal_text(3, 600.0), "queue_full")
    assert "at most 3 sessions" in refused[1] and "10 minutes" in refused[1]
    assert join("s0", "203.0.113.5")[0] and join("s2", "203.0.113.5")[0]  # a started session's next jobs
    assert join("t0", "198.51.100.7")[0]  # another visitor
    clock[0] += 600
    assert join("s3", "203.0.113.5")[0]  # the window has passed
    assert let_in == ["s0", "s1", "s2", "s0", "s2", "t0", "s3"]


def test_the_session_cap_is_public_by_default_and_can_be_lifted(monkeypatch):
    import argparse

    from playground.limits import add_arguments, from_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    monkeypatch.delenv("SPACE_ID", raising=False)
    limits, _ = from_arguments(parser.parse_args(["--public"]), "m")
    assert limits.sessions_per_address == 60 and limits.sessions_window == 600.0
    limits, _ = from_arguments(parser.parse_args(["--public", "--sessions-per-address", "0"]), "m")
    assert limits.sessions_per_address is None
    limits, _ = from_arguments(parser.parse_args([]), "m")
    assert limits.sessions_per_address is None


def _queue_demo():
    """A demo whose queue keeps waiting jobs the way gradio 6.31's does (``event_ids_to_events`` holds the jobs
    waiting or running, ``event_queue_per_concurrency_id[id].queue`` the waiting ones in order, ``push`` appends and
    answers the job's id), with a ``run`` that starts the first waiting job."""
    import asyncio
    import itertools
    import threading
    import time
    from types import SimpleNamespace as NS

    ids = itertools.count()
    line = NS(queue=[])
    told = []  # the places ``broadcast_estimations`` was asked to tell from

    async def push(body, request, username):
        event = NS(_id=f"e{next(ids)}", request=request, concurrency_id="paste", session_hash=body.session_hash,
                   who=body.who, enqueue_time=time.monotonic())
        queue.event_ids_to_events[event._id] = event
        line.queue.append(event)
        return True, event._id, "success"

    queue = NS(event_ids_to_events={}, pending_event_ids_session={}, pending_messages_per_session={},
               event_queue_per_concurrency_id={"paste": line}, push=push,
               broadcast_estimations=lambda concurrency_id, after=None: told.append(after))
    demo = NS(_queue=queue)

    def join(who, address):
        body = NS(session_hash=f"s-{who}", who=who)
        answer = []  # in a thread of its own (see `_fake_demo`)
        thread = threading.Thread(target=lambda: answer.append(asyncio.run(queue.push(body, _request(address), None))))
        thread.start()
        thread.join()
        return answer[0]

    def run():
        line.queue.pop(0)  # it runs: still in event_ids_to_events, no longer waiting

    return demo, join, run, lambda: [e.who for e in line.queue], told


def test_a_visitor_with_nothing_running_is_served_before_the_later_jobs_of_others():
    """Trial 15 H2: six addresses each keeping 4 slow parses in flight made another visitor's small paste wait
    12-25 s behind all of them (first come, first served). Waiting jobs now take turns: each client's first
    waiting job before anyone's second, and so on."""
    demo, join, run, waiting, told = _queue_demo()
    install(demo, 4, trust_forwarded=True)
    for n in range(4):
        assert join(f"a{n}", "203.0.113.1")[0]
    for n in range(4):
        assert join(f"b{n}", "203.0.113.2")[0]
    assert waiting() == ["a0", "b0", "a1", "b1", "a2", "b2", "a3", "b3"]
    run(); run()  # a0 and b0 run
    assert join("v0", "198.51.100.7")[0]  # a visitor with nothing running or waiting: next in line
    assert waiting() == ["v0", "a1", "b1", "a2", "b2", "a3", "b3"]
    assert join("v1", "198.51.100.7")[0]  # its second job waits its turn, after the others' second ones
    assert waiting() == ["v0", "a1", "b1", "v1", "a2", "b2", "a3", "b3"]
    assert told[-2:] == [0, 3]  # the jobs from the new one's place on are told their new places
    assert join("c0", "203.0.113.3")[0] and waiting()[:2] == ["v0", "c0"]


def test_a_visitors_own_jobs_keep_their_order_when_its_turn_falls():
    """Trial 16 M1: a job is placed by its client's turn, but the turns of the jobs already waiting fall as their
    clients' jobs finish (in any line), so the line is not sorted by turn, and a visitor's new job was placed ahead
    of its own older one (its "Check current run" ran before the paste it was to check)."""
    demo, join, run, waiting, told = _queue_demo()
    install(demo, 8, trust_forwarded=True)
    for who, address in (("a0", "203.0.113.1"), ("a1", "203.0.113.1"), ("b0", "203.0.113.2"), ("b1", "203.0.113.2")):
        assert join(who, address)[0]
        run()  # two jobs of each visitor running
    assert join("b2", "203.0.113.2")[0] and join("a2", "203.0.113.1")[0]
    assert waiting() == ["b2", "a2"]  # each with its turn 2 (first come)
    jobs = demo._queue.event_ids_to_events
    for job_id in [i for i, e in jobs.items() if e.who in ("a0", "a1")]:
        del jobs[job_id]  # a's running jobs end: a2's turn is 0 now, b2's still 2
    assert join("a3", "203.0.113.1")[0]
    assert waiting() == ["b2", "a2", "a3"]  # after its own a2 (by turn alone it would go first)
    assert join("c0", "203.0.113.3")[0] and waiting() == ["c0", "b2", "a2", "a3"]  # others still take turns
