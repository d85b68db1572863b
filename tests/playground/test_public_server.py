"""Load and abuse test (issue #10): the app as a public server on loopback, driven with `gradio_client`.

Concurrent sessions send the hostile inputs of the issue (a nested catastrophic value parser, a slow delimiter on
a long paste, an oversized paste, lone surrogates and deep nesting, server paths in the template editor and the
model box) while other sessions parse normal outputs. Asserted: the normal sessions keep answering within a
bound, every hostile request gets a clear message quickly, the server's memory grows by at most the per-session
bound for 200 KB runs, and no answer names a server path.
"""

from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from playground import doctor_panel
from playground.remote_panel import LOCAL  # the model box's own machine, not a remote server
from tests.serving import live_memory, start_app

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUDGET = 5.0  # the public default
PREFIX = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
TEMPLATE = {"defaults": {"role": "assistant"}, "start_anchor": "<|im_start|>assistant\n", "fields": {
    "reasoning_content": {"open": "<think>", "close": "</think>"},
    "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "content": "json", "repeats": True,
                   "transform": {"type": "function", "function": "{content}"}},
    "content": {"close": "<|im_end|>"}}}
NESTED = {"defaults": {"role": "assistant"}, "start_anchor": "<|im_start|>assistant\n", "fields": {
    "args": {"open": "<x>", "close": "</x>", "content": "xml-inline", "content_args": {
        "tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>",
        "value_parser": {"name": "xml-inline", "args": {"tag_pattern": "(?P<key>k)(?P<value>(a|aa)+z)"}}}},
    "content": {"close": "<|im_end|>"}}}
SLOW = {"start_anchor": "X", "fields": {"x": {"open_pattern": "(a|aa)+z", "close": "</x>"}, "content": {}}}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from gradio_client import Client

    log = tmp_path_factory.mktemp("server") / "server.log"
    # Each session below is a visitor of its own (its own X-Forwarded-For address): the public per-visitor job
    # cap (4) would otherwise count them all as 127.0.0.1.
    proc, url = start_app(["--public", "--request-budget", str(BUDGET), "--reference-budget", "4", "--workers", "2",
                           "--trust-forwarded-for"], log, lambda url: Client(url, verbose=False).close())
    yield proc, url
    proc.kill()
    proc.wait(timeout=30)


@pytest.fixture()
def memory_server(tmp_path):
    """A public server that reports the size of its live objects (`tests.serving.live_memory`): ``(proc, url,
    report)``. Its time limits are lifted (the reference check's set far from its work), so that every 200 KB
    parse (half a second of CPU) and its check are kept whole however loaded the machine is: under the public
    5 s a loaded machine stopped some, and the test failed on the status line."""
    from gradio_client import Client

    report = tmp_path / "live-bytes"
    proc, url = start_app(["--public", "--request-budget", "0", "--regex-timeout", "0", "--reference-budget", "600",
                           "--workers", "2"],
                          tmp_path / "server.log", lambda url: Client(url, verbose=False).close(),
                          memory_report=report)
    yield proc, url, report
    proc.kill()
    proc.wait(timeout=30)


def _visitor(n: int) -> dict:
    """Request headers of visitor number ``n`` (its own address, as a proxy in front of the server would say)."""
    return {"X-Forwarded-For": f"10.0.0.{n}"}


def _join_body(url: str, api_name: str, data: list, session: str) -> str:
    """The body the page posts to ``queue/join`` for ``api_name`` (JSON escapes kept: ``\\ud800``)."""
    import httpx

    config = httpx.get(url + "config", timeout=30).json()
    dep = next(d for d in config["dependencies"] if d.get("api_name") == api_name.lstrip("/"))
    states = {c["id"] for c in config["components"] if c.get("type") == "state"}
    token = {c["id"] for c in config["components"] if c.get("props", {}).get("elem_id") == "page-token"}
    values = iter(data)  # the session state: None (the page never holds it); the page's token: "" (a new page's)
    full = [None if i in states else "" if i in token else next(values) for i in dep["inputs"]]
    return json.dumps({"data": full, "fn_index": dep["id"], "session_hash": session, "event_data": None,
                       "trigger_id": None}, ensure_ascii=True)


def _join(url: str, api_name: str, data: list, headers: dict, session: str):
    """Put a job in the queue the way the page does; returns the HTTP answer."""
    import httpx

    return httpx.post(url + "gradio_api/queue/join", content=_join_body(url, api_name, data, session), timeout=30,
                      headers={"Content-Type": "application/json", **headers})


def _browser_predict(url: str, api_name: str, data: list, headers: dict | None = None) -> list:
    """Call an endpoint the way the page does, with JSON escapes (``\\ud800``): a lone surrogate is valid JSON
    text and browsers send it, while `gradio_client` cannot encode one."""
    import uuid

    import httpx

    session = uuid.uuid4().hex
    joined = _join(url, api_name, data, headers or {}, session)
    assert joined.status_code == 200, joined.text
    with httpx.stream("GET", url + f"gradio_api/queue/data?session_hash={session}", timeout=120) as stream:
        for line in stream.iter_lines():
            if not line.startswith("data:"):
                continue
            msg = json.loads(line[5:])
            if msg.get("msg") == "process_completed":
                assert msg.get("success"), msg  # a bare "Error" on the page is an unsuccessful completion
                return msg["output"]["data"]
    raise AssertionError("no completion")


def _texts(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in _texts(k) + _texts(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _texts(v)]
    return []


def _server_paths() -> list[str]:
    import tempfile

    return [ROOT, os.path.realpath(ROOT), sys.prefix, os.path.expanduser("~") + "/", "site-packages",
            tempfile.gettempdir() + "/"]


def test_hostile_sessions_do_not_stop_the_others(server, tmp_path):
    from gradio_client import Client

    proc, url = server
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"api_key": "sk-NOT-FOR-YOU", "user": "admin"}))
    answers: dict[str, list] = {}

    def session(name, calls):
        client = clients[name]
        out = []
        try:
            for api, args in calls:
                t0 = time.monotonic()
                result = client.predict(*args, api_name=api)
                out.append((api, args, result, time.monotonic() - t0))
        finally:
            client.close()
        answers[name] = out

    normal = [("/paste_parse", ('<think>ok</think>Hello<tool_call>{"name": "f", "arguments": {}}</tool_call>'
                                f"<|im_end|> {i}", PREFIX, "", json.dumps(TEMPLATE))) for i in range(6)]
    deep = '{"name": "f", "arguments": ' + "[" * 300 + "]" * 300 + "}"
    jobs = {
        "normal-1": normal, "normal-2": normal,
        "nested-1": [("/paste_parse", ("<x><p>k" + "a" * 60 + "yz</p></x>done<|im_end|>", "", "",
                                       json.dumps(NESTED)))] * 2,
        "nested-2": [("/paste_parse", ("<x><p>k" + "a" * 60 + "yz</p></x>done<|im_end|>", "", "",
                                       json.dumps(NESTED)))] * 2,
        "slow": [("/paste_parse", (("a" * 24 + " ") * 208, "", "", json.dumps(SLOW)))],
        "huge": [("/paste_parse", ("x" * 300_000, "", "", json.dumps(TEMPLATE)))],
        "editor": [("/edit_template", (str(secret),)), ("/edit_template", ("/no/such/dir/key.json",))],
        "models": [("/load_model", (name, LOCAL, "")) for name in (str(tmp_path), str(secret), "/etc", "/no/such/model",
                                                    "../../etc", "x" * 5000, "gpt2")],
    }
    odd = "<think>a\ud800b</think>\udfff<tool_call>" + deep + "</tool_call><|im_end|>"
    # connected before the load starts: a Client reads the API description with a 5-second timeout, which the load
    # (not what this test is about) can pass on a loaded machine
    clients = {name: Client(url, verbose=False, headers=_visitor(i + 1)) for i, name in enumerate(jobs)}
    with ThreadPoolExecutor(len(jobs) + 1) as pool:
        odd_answer = pool.submit(_browser_predict, url, "/paste_parse", [odd, PREFIX, "", json.dumps(TEMPLATE)],
                                 _visitor(99))
        list(pool.map(lambda kv: session(*kv), jobs.items()))
        answers["odd"] = [("/paste_parse", (odd,), odd_answer.result(), 0.0)]

    for name in ("normal-1", "normal-2"):
        for _api, _args, result, took in answers[name]:
            assert "Parsed" in result[0], result[0]
            assert took < 30, f"{name} waited {took:.1f} s while hostile sessions ran"
    for name in ("nested-1", "nested-2"):
        for _api, _args, result, took in answers[name]:
            assert took < 30
            shown = " ".join(_texts(result))
            # The nested pattern's own budget fired (a region error naming it), or, with the CPU shared by the
            # other sessions, the request's budget stopped the parse first: both say so on the page.
            assert ("value_parser.args.tag_pattern" in shown and "took longer than" in shown) or \
                f"Stopped after {BUDGET:g} s" in result[0], result[0]
    (_, _, slow, took), = answers["slow"]
    # Stopped by a budget, and the page says which: the request's, or (the scanner holds text the pattern cannot
    # complete yet, then one search over it costs what the one-shot parse costs) the pattern's own.
    assert took < 30 and (f"Stopped after {BUDGET:g} s" in slow[0] and "python app.py" in slow[0]
                          or "PatternTimeoutError" in " ".join(_texts(slow)) and "(a|aa)+z" in " ".join(_texts(slow)))
    (_, _, huge, _), = answers["huge"]
    assert "300,000 characters" in huge[0] and "at most 262,144" in huge[0]
    (_, _, odd, _), = answers["odd"]
    assert "Parsed" in odd[0] and "\ufffd" in " ".join(_texts(odd[1:]))  # the lone surrogates shown as U+FFFD, no bare "Error"
    json.dumps(odd, ensure_ascii=False).encode("utf-8")
    for _api, _args, result, _ in answers["editor"]:
        shown = " ".join(_texts(result))
        assert "api_key" not in shown and "NOT-FOR-YOU" not in shown  # the text is JSON, never a path to read
        assert "not valid JSON" in shown  # the template status under the editor says why
    refusals = set()
    for _api, (name, _backend, _url), result, _ in answers["models"]:
        from playground.policy import shown as shown_name

        refusals.add(result[0].replace(shown_name(name), "NAME"))
        assert len(result[0]) < 1000
    long_name = [r for _a, (n, _b, _u), r, _ in answers["models"] if len(n) == 5000][0][0]
    assert "at most 200 characters" in long_name
    assert len(refusals) == 2, refusals  # one answer for every path or id, one for the over-long name
    for name, calls in answers.items():
        for _api, args, result, _ in calls:
            for text in _texts(result):
                for path in _server_paths():
                    assert path not in text or any(path in str(a) for a in args), (name, path, text[:300])


def test_memory_per_session_stays_bounded(memory_server):
    from gradio_client import Client

    proc, url, memory_report = memory_server
    raw = "<think>" + " ".join(f"word{i % 97}" for i in range(30_000)) + "</think>Done.<|im_end|>"
    assert 200_000 < len(raw) < 240_000
    warm = Client(url, verbose=False)
    assert "Parsed" in warm.predict(raw, PREFIX, "", json.dumps(TEMPLATE), api_name="/paste_parse")[0]
    warm.close()
    # What the server's live objects weigh after a full collection: the resident size measured here before moved
    # with what the allocator kept of each parse's freed memory (more when the parses ran on more threads, as
    # under load) and with garbage not yet collected.
    before = live_memory(proc, memory_report)
    clients = []
    n = 8
    try:
        for _ in range(n):
            client = Client(url, verbose=False)
            clients.append(client)
            status = client.predict(raw, PREFIX, "", json.dumps(TEMPLATE), api_name="/paste_parse")[0]
            assert "Parsed" in status, status
        grown = (live_memory(proc, memory_report) - before) / 2**20
    finally:
        for client in clients:
            client.close()
    # 3 MB kept per session (run, parse, and Gradio's copies of the page's values; 2.6 MB measured), plus some
    # for the server's own bookkeeping (two readings with nothing done between them differ by about 1 MB); it was
    # 38 MB per session before runs were kept compactly.
    assert grown < 3 * n + 8, f"{grown:.1f} MB for {n} sessions"


def test_distinct_big_pattern_templates_leave_memory_flat(memory_server):
    """Trial 13 F8: each template whose close pattern writes out 99,000 items (under the compile cap) grew the server
    by ~28 MB, kept (`regex`'s own cache of 500 patterns, ours counted in entries). Once the pattern caches are full,
    more distinct templates add nothing but what those caches may hold."""
    import regex

    from parsing.regex_cost import CACHED_PATTERN_SIZE, compile_size
    from playground.session import COMPILED_TEMPLATES_SIZE

    proc, url, memory_report = memory_server

    def template(k: int) -> str:
        return json.dumps({"defaults": {"role": "assistant"}, "start_anchor": "@", "fields": {"content": {
            "close_pattern": "<\\|im_end\\|>|(?:z%db0q{1000}){99}" % k, "repeats": True, "join": ""}}})

    def send(ks) -> None:
        for k in ks:
            kind, data = _answer(url, "paste_parse", ["@hello<|im_end|>", "", "", template(k)])
            assert kind == "complete" and "Parsed 16 characters" in data[0], (kind, str(data)[:300])

    source = json.loads(template(0))["fields"]["content"]["close_pattern"]
    items = compile_size(source)
    assert 90_000 < items < 100_000
    item_bytes = sys.getsizeof(regex.compile(source, regex.DOTALL, cache_pattern=False)) / items  # ~110
    send(range(2))
    before = live_memory(proc, memory_report)
    send(range(2, 14))  # fills every cache: 3 templates' patterns at most in each
    full = live_memory(proc, memory_report)
    send(range(14, 26))
    after = live_memory(proc, memory_report)
    # What the caches may hold: two pattern caches (compiled patterns, their branches) and the compiled templates,
    # each of which holds its pattern about twice (whole and as branches); plus 8 MB for the server's bookkeeping.
    cap = (2 * CACHED_PATTERN_SIZE + 2 * COMPILED_TEMPLATES_SIZE) * item_bytes + 8 * 2**20
    assert full - before < cap, f"{(full - before) / 2**20:.0f} MB for 12 templates (cap {cap / 2**20:.0f} MB)"
    # 12 more distinct templates (336 MB before): only bookkeeping, not one more template's patterns
    assert after - full < items * item_bytes / 2, f"{(after - full) / 2**20:.1f} MB for 12 more templates"


def test_request_bodies_over_the_cap_are_refused_before_they_are_read(server):
    """Gradio reads a whole JSON body before any handler checks a size (100 MB grew the server by 210 MB):
    `playground.http_limits` answers 413 to a body over the public 8 MB cap, on every route."""
    import httpx

    _proc, url = server
    big = json.dumps({"data": ["x" * (9 << 20), "", "", ""]})
    for route in ("gradio_api/call/paste_parse", "gradio_api/queue/join", "gradio_api/upload"):
        r = httpx.post(url + route, content=big, headers={"Content-Type": "application/json"}, timeout=60)
        assert r.status_code == 413, (route, r.status_code, r.text[:200])
        assert "at most 8 MB" in r.json()["detail"]
    # the standard library's client, which sends the whole body before it reads: it got "connection reset" while
    # the server answered unread (trial 9); the refused body is now read and dropped first
    import http.client
    from urllib.parse import urlsplit

    conn = http.client.HTTPConnection(urlsplit(url).hostname, urlsplit(url).port, timeout=60)
    try:
        conn.request("POST", "/gradio_api/call/paste_parse", body=big, headers={"Content-Type": "application/json"})
        answer = conn.getresponse()
        assert answer.status == 413 and "at most 8 MB" in json.loads(answer.read())["detail"]
    finally:
        conn.close()
    # under the cap, the handler's own limit answers with its message
    client_body = json.dumps({"data": ["x" * 300_000, "", "", ""]})
    r = httpx.post(url + "gradio_api/call/paste_parse", content=client_body,
                   headers={"Content-Type": "application/json"}, timeout=60)
    assert r.status_code == 200, r.text[:200]


def _answer(url: str, api_name: str, data: list) -> tuple[str, object]:
    """(the last event's kind, its data) of a raw ``/gradio_api/call/API_NAME`` call with ``data``."""
    import httpx

    r = httpx.post(url + f"gradio_api/call/{api_name}", json={"data": data}, timeout=60)
    assert r.status_code == 200, r.text[:200]
    events = httpx.get(url + f"gradio_api/call/{api_name}/{r.json()['event_id']}", timeout=60).text
    kind, data_line = events.strip().split("\n")[-2:]
    return kind.removeprefix("event: "), json.loads(data_line.removeprefix("data: "))


def test_a_doctor_suite_sent_as_text_is_capped_like_an_upload(server):
    """Trial 10 sent a 6.1 MB suite to ``/do_run_suite`` and it went to a worker, while an uploaded suite is capped
    at 2 MB: the text is capped at the same size in characters, with a message saying what to run instead."""
    from playground.limits import Limits

    _proc, url = server
    cap = Limits.public_space().max_suite_chars
    line = json.dumps({"prefix": "S", "output": "x", "expected": {"content": "x"}}) + "\n"
    big = line * (cap // len(line) + 1)
    template = json.dumps({"start_anchor": "S", "fields": {"content": {}}})
    kind, payload = _answer(url, "do_run_suite", [template, big, 1])
    said = (f"The Doctor suite is {len(big):,} characters; this server takes at most {cap:,}. To run it without "
            "limits, use `python -m parsing check template.json cases.jsonl` or start the playground on your own "
            "machine (`python app.py`: no per-request limit there).")
    # said in the suite's own panel (not a pop-up), its commands as code
    assert kind == "complete" and payload[0] == doctor_panel._error_note(said), payload
    assert "doctor-note-error" in payload[0] and "<code>python -m parsing check template.json cases.jsonl</code>" \
        in payload[0], payload
    kind, payload = _answer(url, "do_run_suite", [template, line * 3, 1])  # a suite under the cap runs
    assert kind == "complete" and "doctor-suite-result" in payload[0] and " #3 " in payload[0], payload


def test_an_api_call_with_the_wrong_number_of_values_is_told_which_values(server):
    """Gradio counts the values before our handlers run and answered a wrong count with ``{"error": null}``
    (trial 9): `playground.api_calls` answers in words, without ``show_error`` showing every internal message."""
    from playground.api_calls import wrong_count_text

    _proc, url = server
    wanted = ["Raw model output", "Prompt prefix (may be empty)", "Tools (optional JSON list)", "Response template"]
    template = json.dumps({"start_anchor": "S", "fields": {"content": {}, "reasoning_content": {
        "open": "<think>", "close": "</think>"}}})
    right = ["<think>ok</think>Hi", "S", "", template]

    # one fewer, one more (it filled the hidden session slot and moved every value one input along: trial 10),
    # two more, and none at all
    for data in (right[:-1], right + ["extra"], right + ["extra", "more"], []):
        kind, payload = _answer(url, "paste_parse", data)
        assert kind == "error" and payload["error"] == wrong_count_text("paste_parse", wanted, len(data)), payload
    for api_name, data in (("export", [template, "x"]), ("edit_template", [template, "x"])):
        kind, payload = _answer(url, api_name, data)
        assert kind == "error" and payload["error"] == wrong_count_text(api_name, ["Response template"], 2), payload
    # the right count, and the form gradio_client sends (None in the hidden session slot), parse the same
    for data in (right, [None, *right]):
        kind, payload = _answer(url, "paste_parse", data)
        shown = json.dumps(payload)
        assert kind == "complete" and f"Parsed {len(right[0])} characters." in payload[0], (kind, shown[:300])
        assert '"content": "Hi"' in shown and '"reasoning_content": "ok"' in shown, shown[:2000]


def test_a_queue_join_without_the_session_placeholder_is_told_where_it_goes(server):
    """``queue/join`` adds no placeholder for the hidden session state (``call/<api>`` does): a raw call with the four
    values an API caller sees was told "takes 4 values ...; this call sent 4" (trial 13 F4)."""
    import uuid

    import httpx

    from playground.api_calls import wrong_count_text

    _proc, url = server
    config = httpx.get(url + "config", timeout=30).json()
    dep = next(d for d in config["dependencies"] if d.get("api_name") == "paste_parse")
    states = {c["id"] for c in config["components"] if c.get("type") == "state"}
    hidden = [n + 1 for n, i in enumerate(dep["inputs"]) if i in states]
    assert hidden == [1]  # the session state comes first
    session = uuid.uuid4().hex
    shown = ["Hi", "S", "", json.dumps({"start_anchor": "S", "fields": {"content": {}}})]
    joined = httpx.post(url + "gradio_api/queue/join", timeout=30, json={
        "data": shown, "fn_index": dep["id"], "session_hash": session, "event_data": None, "trigger_id": None})
    assert joined.status_code == 200, joined.text
    with httpx.stream("GET", url + f"gradio_api/queue/data?session_hash={session}", timeout=120) as stream:
        done = next(m for m in (json.loads(line[5:]) for line in stream.iter_lines() if line.startswith("data:"))
                    if m.get("msg") == "process_completed")
    wanted = ["Raw model output", "Prompt prefix (may be empty)", "Tools (optional JSON list)", "Response template"]
    said = done["output"]["error"]
    assert not done["success"] and said == wrong_count_text("paste_parse", wanted, 4, hidden), done
    assert "this call sent 4." not in said and "5 values, with null at position 1" in said, said


def test_gradio_client_parses_a_tool_call_with_a_path_argument_as_the_readme_says(server):
    """gradio_client 2.x takes every dict with a string "path" in an answer for a Gradio file and downloads it:
    ``read_file(path=...)``, the commonest agent tool call, made ``Client(url).predict`` fail with 403 (trial 13
    F6). The README's API section says to call with ``download_files=False``; this is that call."""
    from gradio_client import Client

    _proc, url = server
    template = open(os.path.join(ROOT, "examples", "families", "hermes", "template.json"), encoding="utf-8").read()
    raw = '<tool_call>\n{"name": "read_file", "arguments": {"path": "src/main.rs"}}\n</tool_call><|im_end|>'
    client = Client(url, verbose=False, download_files=False, headers=_visitor(150))
    try:
        outputs = client.predict(raw, "", "", template, api_name="/paste_parse")
    finally:
        client.close()
    # (the message comes as the #message component's update: {"value": message, "__type__": "update"})
    messages = [o["value"] for o in outputs if isinstance(o, dict) and "tool_calls" in (o.get("value") or {})]
    assert len(messages) == 1 and messages[0]["tool_calls"] == [
        {"type": "function", "function": {"name": "read_file", "arguments": {"path": "src/main.rs"}}}], outputs


def test_one_visitor_cannot_take_every_slot(server):
    """A fresh-user trial sent 40 slow parses at once from one client: another visitor's parse waited 45 s behind
    them. A visitor now has at most 4 jobs waiting or running (`playground.fairness`); its next one is refused at
    once with a message, while another visitor's parse is answered."""
    import uuid

    import httpx
    from gradio_client import Client

    from playground.fairness import refusal_text
    from playground.limits import Limits

    _proc, url = server
    cap = Limits.public_space().max_jobs_per_client
    hog = {"Content-Type": "application/json", **_visitor(200)}
    slow = [("a" * 24 + " ") * 208, "", "", json.dumps(SLOW)]  # each runs into a budget: a second at least
    sessions = [uuid.uuid4().hex for _ in range(cap + 1)]
    bodies = [_join_body(url, "/paste_parse", slow, s) for s in sessions]  # built first: the joins go back to back
    with httpx.Client(timeout=30) as http:
        answers = [http.post(url + "gradio_api/queue/join", content=b, headers=hog) for b in bodies]
    assert [a.status_code for a in answers[:cap]] == [200] * cap, [a.text for a in answers]
    refused = answers[cap]
    assert refused.status_code == 503 and refused.json()["detail"] == refusal_text(cap), refused.text
    other = Client(url, verbose=False, headers=_visitor(201))  # another visitor is served
    try:
        status = other.predict("<think>ok</think>Hi<|im_end|>", PREFIX, "", json.dumps(TEMPLATE),
                               api_name="/paste_parse")[0]
    finally:
        other.close()
    assert "Parsed" in status, status
    for s in sessions[:cap]:  # the hog's jobs end (each by a budget) ...
        with httpx.stream("GET", url + f"gradio_api/queue/data?session_hash={s}", timeout=120,
                          headers=hog) as stream:
            for line in stream.iter_lines():
                if line.startswith("data:") and json.loads(line[5:]).get("msg") == "process_completed":
                    break
    body = _join_body(url, "/paste_parse", ["<think>ok</think>Hi<|im_end|>", PREFIX, "", json.dumps(TEMPLATE)],
                      uuid.uuid4().hex)
    deadline = time.monotonic() + 60  # ... and Gradio forgets a job just after it sends its last message
    while True:
        again = httpx.post(url + "gradio_api/queue/join", content=body, headers=hog, timeout=30)
        if again.status_code != 503 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert again.status_code == 200, again.text  # ... and then the hog is served again
