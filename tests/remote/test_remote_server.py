"""The remote backend end to end against a real `transformers serve` (no mocks of the server)."""

import json
import threading
import time

import httpx
import pytest

from playground import backends, remote
from playground.reference import reference_check
from playground.session import LiveParse, Run, parse_run, template_to_text

WEATHER = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


def _source(url, model):
    return remote.RemoteSource(server=remote.RemoteServer(name="ts", base_url=url), model=model)


def _prompt(src, messages=ASK, tools=WEATHER, thinking=True):
    lm = src.load()
    return lm, backends.render_prompt(lm, messages, tools, {"enable_thinking": thinking})


def _template_text(lm):
    return template_to_text(lm.tokenizer.response_template)


def test_streamed_run_goes_through_the_parser(serve, builtin_dir):
    src = _source(serve.url, builtin_dir)
    lm, prompt = _prompt(src)
    assert lm.model is None  # a remote run loads the tokenizer only
    chunks = list(src.stream(prompt, max_new_tokens=120, temperature=0, seed=0))
    text = "".join(chunks)
    assert len(chunks) > 5 and all(chunks)
    # the server refused skip_special_tokens (422) and the request was sent again without it
    assert src.outcome.refused == ["skip_special_tokens"] and not src.outcome.special_tokens_kept
    assert src.outcome.finish_reason in ("stop", "length") and not src.outcome.cut
    # the same greedy request, not streamed, gives the same text
    whole = httpx.post(f"{serve.url}/completions", timeout=120, json={
        "model": builtin_dir, "prompt": prompt, "max_tokens": 120, "temperature": 0}).json()
    assert whole["choices"][0]["text"] == text
    # the markers survive the server (they are not special tokens): the template parses reasoning and a call
    live = LiveParse(_template_text(lm), prompt, WEATHER)
    for c in chunks:
        live.feed(c)
    live.finalize()
    view = live.view()
    assert "</think>" in text
    assert view.message["reasoning_content"] == text.split("</think>")[0].strip()
    assert view.events[0]["phase"] == "prefix"  # <think> was opened by the prompt
    assert any(e["type"] == "region_close" and e.get("field") == "reasoning_content" for e in view.events)
    if "<tool_call>" in text:
        call = json.loads(text.split("<tool_call>")[1].split("</tool_call>")[0])
        assert view.message["tool_calls"][0]["function"] == call
    run = Run(prefix=prompt, chunks=tuple(chunks), template_text=_template_text(lm), tools=tuple(WEATHER),
              source="remote")
    assert reference_check(run, parse_run(run))["agree"]
    assert src.notes(text, _template_text(lm), lm.tokenizer) == []


def test_stop_closes_the_stream_and_the_server_stays_usable(serve, builtin_dir):
    src = _source(serve.url, builtin_dir)
    _, prompt = _prompt(src)
    stop = threading.Event()
    got = []
    t0 = time.perf_counter()
    for chunk in src.stream(prompt, max_new_tokens=1000, temperature=0.8, seed=1, stop_event=stop):
        got.append(chunk)
        if len(got) == 5:
            stop.set()
    assert len(got) == 5 and src.outcome.stopped and not src.outcome.cut
    assert time.perf_counter() - t0 < 60
    # the server answers the next request at once (it is not busy with the abandoned one)
    again = _source(serve.url, builtin_dir)
    t1 = time.perf_counter()
    assert list(again.stream(prompt, max_new_tokens=3, temperature=0))
    assert time.perf_counter() - t1 < 30


def test_closing_the_generator_closes_the_stream(serve, builtin_dir):
    src = _source(serve.url, builtin_dir)
    _, prompt = _prompt(src)
    gen = src.stream(prompt, max_new_tokens=1000, temperature=0.8, seed=2)
    assert next(gen)
    gen.close()
    assert src.outcome.chunks == 1


def test_stripped_special_tokens_are_warned_about(serve, special_markers_dir):
    src = _source(serve.url, special_markers_dir)
    lm, prompt = _prompt(src)
    text = "".join(src.stream(prompt, max_new_tokens=80, temperature=0))
    assert text and not any(m in text for m in ("<think>", "</think>", "<tool_call>", "<|im_end|>"))
    notes = src.notes(text, _template_text(lm), lm.tokenizer)
    warning = [n for n in notes if n.startswith("The server removed special tokens;")]
    assert warning, notes
    assert "</think>" in warning[0] and "<tool_call>" in warning[0] and "refused" in warning[0]


def test_server_parity_greedy_matches_the_template(serve, builtin_dir):
    src = _source(serve.url, builtin_dir)
    lm, prompt = _prompt(src)
    sampling = dict(max_new_tokens=120, temperature=0.0, top_p=0.95, seed=0)
    live = LiveParse(_template_text(lm), prompt, WEATHER)
    for c in src.stream(prompt, **sampling):
        live.feed(c)
    live.finalize()
    ours = live.view().message
    got = remote.server_message(src.server, builtin_dir, ASK, WEATHER, {"enable_thinking": True}, **sampling)
    # the server parses with the same response template: with greedy decoding the fields agree
    assert got["reasoning"] == ours["reasoning_content"]
    assert [c["function"]["name"] for c in got["tool_calls"]] == \
        [c["function"]["name"] for c in ours.get("tool_calls", [])]
    rows = remote.compare_messages(ours, got)
    assert {r["verdict"] for r in rows} <= {"same", "whitespace"}, rows
    from playground.remote_panel import parity_html

    page = parity_html(rows, "builtin @ ts", sampling)
    assert 'id="parity-same"' in page and "Greedy decoding" in page


def test_server_parity_highlights_a_template_that_parses_differently(serve, builtin_dir):
    src = _source(serve.url, builtin_dir)
    lm, prompt = _prompt(src)
    sampling = dict(max_new_tokens=120, temperature=0.0, top_p=0.95, seed=0)
    text = "".join(src.stream(prompt, **sampling))
    # a template that forgets the reasoning field: everything lands in content
    spec = dict(lm.tokenizer.response_template)
    spec["fields"] = {k: v for k, v in spec["fields"].items() if k != "reasoning_content"}
    run = Run(prefix=prompt, chunks=(text,), template_text=template_to_text(spec), tools=tuple(WEATHER))
    ours = parse_run(run).message
    got = remote.server_message(src.server, builtin_dir, ASK, WEATHER, {"enable_thinking": True}, **sampling)
    rows = {r["field"]: r for r in remote.compare_messages(ours, got)}
    assert rows["reasoning (reasoning_content)"]["verdict"] == "differs"
    assert rows["reasoning (reasoning_content)"]["server"] == got["reasoning"]
    from playground.remote_panel import parity_html

    assert 'class="differs"' in parity_html(list(rows.values()), "x", {"temperature": 0.7})


def test_server_killed_mid_stream_keeps_what_arrived(tmp_path, builtin_dir):
    from tests.serving import ServeProcess, warm_up

    proc = ServeProcess(tmp_path)
    try:
        warm_up(proc.url, builtin_dir)
        src = _source(proc.url, builtin_dir)
        lm, prompt = _prompt(src)
        got = []
        for chunk in src.stream(prompt, max_new_tokens=2000, temperature=1.0, seed=3):
            got.append(chunk)
            if len(got) == 5:
                proc.kill()
        assert len(got) >= 5 and src.outcome.chunks == len(got)
        assert src.outcome.cut and "connection" in src.outcome.cut
        notes = src.notes("".join(got), _template_text(lm), lm.tokenizer)
        assert notes[0].startswith("Cut: the connection dropped") and f"after {len(got)} chunks" in notes[0]
        live = LiveParse(_template_text(lm), prompt, WEATHER)
        for c in got:
            live.feed(c)
        live.finalize()
        assert live.view().text.endswith("".join(got))
        # the server is gone: the next run is a readable error
        with pytest.raises(remote.RemoteError, match="Could not connect to ts .*connection refused"):
            list(_source(proc.url, builtin_dir).stream(prompt, max_new_tokens=3))
    finally:
        proc.stop()


def test_http_errors_are_readable(serve, builtin_dir, tmp_path):
    src = _source(serve.url, str(tmp_path / "no-such-model"))
    with pytest.raises(remote.RemoteError, match=r"ts answered POST /v1/completions with HTTP \d{3}"):
        list(src.stream("hi", max_new_tokens=2))
    assert remote.list_models(remote.RemoteServer("ts", serve.url)) == []  # it lists its (empty) hub cache
