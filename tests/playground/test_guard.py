"""The guard around every handler (issue #10 item 6): no bare "Error", no traceback, no server path."""

import json

import gradio as gr
import orjson
import pytest

from playground import guard
from playground.limits import Limits, RequestBudget, RequestCancelled


def nested(depth: int):
    value: list = []
    for _ in range(depth):
        value = [value]
    return {"tool_calls": [{"arguments": value}]}


def test_clean_repairs_surrogates_and_cuts_deep_nesting():
    with pytest.raises(orjson.JSONEncodeError):  # what made the page show a bare "Error"
        orjson.dumps({"content": "a\ud800b"})
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps(nested(300))
    cleaned = guard.clean({"content": "a\ud800b", "pair": "\ud83d\ude00", "deep": nested(300)})
    orjson.dumps(cleaned)
    assert cleaned["content"] == "a\ufffdb" and cleaned["pair"] == "😀"
    depth, value = 0, cleaned["deep"]["tool_calls"][0]["arguments"]
    while isinstance(value, list):
        depth, value = depth + 1, value[0]
    assert depth < guard.MAX_DEPTH and "nested deeper than" in value
    same = {"a": ["b", {"c": 1}]}
    assert guard.clean(same) is same  # nothing copied when nothing changes


def test_messages_hide_paths_on_a_public_server():
    guard.configure(Limits.public_space())
    try:
        msg = guard.message_for(FileNotFoundError(2, "No such file or directory", "/srv/app/secret/key.json"))
        assert "/srv" not in msg and "<path>" in msg
        assert guard.message_for(RecursionError("maximum recursion depth exceeded")) == \
            "The input is nested too deeply to handle."
    finally:
        guard.configure(Limits.private())
    assert "/srv/app" in guard.message_for(FileNotFoundError(2, "No such file", "/srv/app/x"))


def test_protect_turns_every_failure_into_a_message():
    with gr.Blocks() as demo:
        box = gr.Textbox()
        status = gr.HTML()
        other = gr.Textbox()

        def echo(text):
            if text == "boom":
                raise KeyError("x")
            return "ok", text

        def stream(text):
            yield "working", gr.skip()
            if text == "boom":
                raise ValueError("Readable reason.")
            yield "done", text

        def left(text):
            raise RequestCancelled("the client left")

        box.submit(echo, box, [status, other])
        box.change(stream, box, [status, other])
        box.blur(left, box, [status, other])
        box.focus(lambda text: 1 / 0, box, other)
    guard.protect(demo, {status: lambda m: f"<b>{m}</b>"})
    fns = [f.fn for f in demo.fns.values()]
    echo_g, stream_g, left_g, plain_g = fns
    assert echo_g("a\ud800") == ("ok", "a\ufffd")  # input repaired before the handler sees it
    msg, skipped = echo_g("boom")
    assert msg == "<b>KeyError: 'x'</b>" and skipped == gr.skip()
    assert [o[0] for o in stream_g("boom")] == ["working", "<b>Readable reason.</b>"]
    assert left_g("x") == (gr.skip(), gr.skip())
    with pytest.raises(gr.Error) as info:  # no status output: a notice with the message
        plain_g("x")
    assert "ZeroDivisionError" in str(info.value)
    assert demo.fns[0].fn.__wrapped__.__name__ == "echo"  # Gradio still sees the handler's own signature


def test_protect_refuses_oversized_inputs_in_every_handler_that_takes_them():
    """A crafted request can send the editor's text to any handler that takes it (a paste parse, a Doctor check),
    not only to the edit handler that checked it: paste_parse took a 300,000-character template on a server whose
    limit is 65,536."""
    from playground.limits import Limits

    guard.configure(Limits.public_space())
    try:
        with gr.Blocks() as demo:
            editor = gr.Code()
            paste = gr.Textbox()
            status = gr.HTML()
            seen = []

            def parse(raw, text):
                seen.append(len(text))
                return "parsed", raw

            def replay(text, request: gr.Request, raw):  # Gradio inserts the request second
                seen.append(len(text))
                yield "replayed", raw

            paste.submit(parse, [paste, editor], [status, paste])
            paste.change(replay, [editor, paste], [status, paste])
        guard.protect(demo, {status: lambda m: f"<b>{m}</b>"},
                      sizes={editor: ("The template", "max_template_chars"),
                             paste: ("The pasted output", "max_paste_chars")})
        parse_g, replay_g = [f.fn for f in demo.fns.values()]
        big = "x" * 70_000
        msg, skipped = parse_g("raw", big)
        assert msg.startswith("<b>The template is 70,000 characters; this server takes at most 65,536.")
        assert skipped == gr.skip() and seen == []
        assert [o[0] for o in replay_g(big, None, "raw")][0].startswith("<b>The template is 70,000 characters")
        assert [o[0] for o in replay_g("{}", None, "y" * 300_000)][0].startswith("<b>The pasted output is 300,000")
        assert seen == []
        assert parse_g("raw", "{}") == ("parsed", "raw") and list(replay_g("{}", None, "raw")) == [("replayed", "raw")]
        assert seen == [2, 2]
    finally:
        guard.configure(Limits.private())


def test_request_budget_counts_only_work_and_cancels():
    import threading
    import time

    cancel = threading.Event()
    budget = RequestBudget(0.2, cancel)
    with budget.working():
        time.sleep(0.05)
    time.sleep(0.2)  # not work: not counted
    assert 0.04 < budget.spent < 0.2 and not budget.exhausted and 0 < budget.remaining() < 0.16
    budget.check()
    cancel.set()
    with pytest.raises(RequestCancelled):
        budget.check()
    assert RequestBudget(None).remaining() is None


def test_size_limits_say_how_to_run_without_them():
    limits = Limits.public_space()
    limits.check_size("The paste", "x" * 10, "max_paste_chars")
    with pytest.raises(ValueError) as info:
        limits.check_size("The pasted output", "x" * (limits.max_paste_chars + 1), "max_paste_chars")
    text = str(info.value)
    assert f"{limits.max_paste_chars + 1:,} characters" in text and "python app.py" in text
    Limits.private().check_size("The pasted output", "x" * 10**7, "max_paste_chars")  # no limit privately
    json.dumps(text)


def test_work_stops_when_the_client_leaves():
    """The unload handler calls `SESSIONS.leave`: the session's cancel event stops its parse and its worker."""
    import threading
    import time

    from parsing.streams import tokenish_chunks
    from playground import reference
    from playground.session import SKELETON_TEMPLATE, ParseView, Run, parse_run, template_to_text
    from playground.state import Session

    registry = guard.SessionRegistry()
    cancel = registry.cancel_event("abc")
    sess = Session()
    run = Run(prefix="", chunks=tokenish_chunks("<think>" + "word " * 20_000), template_text=template_to_text(
        SKELETON_TEMPLATE))
    sess.keep(run, None, None)
    registry.touch("abc", sess)
    threading.Timer(0.2, registry.leave, args=("abc",)).start()
    t0 = time.monotonic()
    with pytest.raises(RequestCancelled):
        for _ in range(1000):  # far more work than 0.2 s
            parse_run(run, budget=RequestBudget(None, cancel))
    assert time.monotonic() - t0 < 5
    assert sess.run is None and len(registry) == 0  # its run was freed with it

    slow = {"start_anchor": "X", "fields": {"x": {"open_pattern": "(a|aa)+$", "close": "</x>"}, "content": {}}}
    stuck = Run(prefix="", chunks=("a" * 60 + "b",), template_text=json.dumps(slow))
    gone = threading.Event()
    threading.Timer(0.5, gone.set).start()
    reference.warm_up()
    t0 = time.monotonic()
    chk = reference.reference_check(stuck, ParseView(final=True), budget=60, cancel=gone)
    assert chk["skipped"] == "reference check cancelled" and time.monotonic() - t0 < 5


def test_a_parse_stops_when_the_request_spent_its_budget_elsewhere():
    """Drawing the live views counts on the request's budget too: once it is spent, the parse stops there."""
    from playground.session import SKELETON_TEMPLATE, LiveParse, template_to_text

    budget = RequestBudget(1.0)
    live = LiveParse(template_to_text(SKELETON_TEMPLATE), "", budget=budget)
    live.feed("<think>fine so far")
    budget.spent += 1.0  # e.g. the timeline drawn for the previews
    live.feed(" and the rest")
    live.feed("</think>done<|im_end|>")
    live.finalize()
    view = live.view()
    assert view.cut is not None and view.cut["start"] == len("<think>fine so far")
    assert "time budget of 1 s" in view.cut["message"]
    assert view.text == "<think>fine so far and the rest</think>done<|im_end|>"  # the rest kept, unparsed
    assert list(view.chunk_starts) == [0, 18, 31] and view.message is None


def test_a_handler_that_checks_a_size_itself_gets_the_text_but_never_a_non_text_value():
    guard.configure(Limits.public_space())
    try:
        with gr.Blocks() as demo:
            editor = gr.Code()
            status = gr.HTML()
            seen = []

            def typed(text):
                seen.append(len(text))
                return "read"

            typed.checks_own_sizes = ("max_template_chars",)
            editor.input(typed, [editor], [status])
            editor.change(lambda text: seen.append(-len(text)) or "other", [editor], [status])
        guard.protect(demo, {status: lambda m: f"<b>{m}</b>"}, sizes={editor: ("The template", "max_template_chars")})
        own, other = [f.fn for f in demo.fns.values()]
        assert own("x" * 70_000) == "read" and seen == [70_000]  # it says why itself, where the user looks
        assert other("x" * 70_000).startswith("<b>The template is 70,000 characters") and seen == [70_000]
        assert own({"a": 1}) == "<b>The template must be text (a string), not an object.</b>" and seen == [70_000]
    finally:
        guard.configure(Limits.private())
