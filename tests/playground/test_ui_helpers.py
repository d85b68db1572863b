"""UI helpers that need no browser: history rendering, error wrapping, example runs, previews, the panel hook."""

import json

import gradio as gr

from playground import backends, ui
from playground.session import LiveParse, parse_run


def test_history_to_chat_renders_parsed_turns_and_tool_results():
    hist = [{"role": "user", "content": "hi"},
            {"role": "assistant", "reasoning_content": "r", "content": "x" * 50000, "_raw": "raw",
             "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}]},
            {"role": "tool", "content": "42", "name": "f"}]
    chat = ui.history_to_chat(hist)
    assert chat[0] == {"role": "user", "content": "hi"}
    assert chat[1]["metadata"]["title"].endswith("Reasoning")
    assert "Tool call: f" in chat[2]["metadata"]["title"]
    assert len(chat[3]["content"]) < 50000 and "more" in chat[3]["content"]  # huge content clipped for display
    assert chat[-1]["metadata"]["title"].endswith("Tool result")


def test_safe_turns_exceptions_into_status_messages():
    def boom(x):
        raise backends.ModelLoadError("Could not load 'x': nope")

    out = ui._safe(boom, 3)(1)
    assert "Could not load" in out[0] and "Traceback" not in out[0]
    assert len(out) == 3
    assert "KeyError" in ui._safe(lambda: {}["k"])()


def test_example_run_replays_library_transcripts():
    fams = ui.list_library_families()
    assert fams
    names = ui.example_transcript_names(fams[0])
    run = ui.example_run(fams[0], names[0])
    assert run.chunks and run.source == "example"
    view = parse_run(run)
    assert view.final and view.text.endswith(run.text)
    try:
        ui.example_run(fams[0], "no-such-transcript")
    except ValueError as e:
        assert "Not in the library" in str(e)
    else:  # pragma: no cover
        raise AssertionError("missing transcript accepted")


def test_live_previews_are_clipped_and_throttled():
    live = LiveParse(ui.template_to_text(ui.SKELETON_TEMPLATE), "")
    live.feed("<think>" + "y" * 10000)
    vis = ui._visuals(live.view(), window=ui.STREAM_WINDOW)
    assert len(json.dumps(vis[3])) < 3000  # message preview clipped
    skipped = ui._visuals(live.view(), window=ui.STREAM_WINDOW, preview=False)
    assert isinstance(skipped[3], type(gr.skip())) and isinstance(skipped[2], type(gr.skip()))
    t = ui._Throttle(10)
    assert t() and not t()


def test_build_ui_exposes_the_panel_context(tiny_model_dir):
    demo = ui.build_ui(tiny_model_dir)
    ctx = demo.panel_context
    assert isinstance(ctx, ui.PanelContext)
    assert ctx.template.elem_id == "template" and ctx.model_box.elem_id == "model-box"
    assert ctx.load_model(tiny_model_dir) is backends.load_model(tiny_model_dir)
    assert ctx.trust_remote_code is False


def _handler(demo, name):
    for fn in demo.fns.values():
        if getattr(fn.fn, "__name__", "") == name:
            return fn.fn
    raise AssertionError(f"no handler {name}")


def _is_full_update(value):
    return isinstance(value, dict) and value.get("__type__") == "update" and "value" in value


def test_last_yield_of_a_replay_carries_the_whole_final_state(tiny_model_dir):
    """Done status, final timeline, and the final message and parsed turn as full replacements."""
    from playground.session import Session

    demo = ui.build_ui(tiny_model_dir)
    raw = "Hmm " * 200 + "\n</think>\nSure.<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call><|im_end|>"
    prefix = "<|im_start|>assistant\n<think>\n"
    tpl = ui.template_to_text(ui.SKELETON_TEMPLATE)
    outs = list(_handler(demo, "paste_replay")(raw, prefix, "", tpl, Session()))
    status, timeline, _legend, events, message, turn, _check, _sess = outs[-1]
    assert "done" in status and 'data-status="final"' in timeline and "<table>" in events
    assert _is_full_update(message) and message["value"]["role"] == "assistant"
    assert message["value"]["tool_calls"][0]["function"]["name"] == "f"
    assert _is_full_update(turn) and any("Sure." in str(m.get("content")) for m in turn["value"])


def test_last_yield_of_a_live_generation_carries_the_whole_final_state(tiny_model_dir):
    from playground.session import Session

    demo = ui.build_ui(tiny_model_dir)
    tpl = ui.template_to_text(ui.SKELETON_TEMPLATE)
    outs = list(_handler(demo, "send_user")("hello", Session(), tiny_model_dir, "", "", False, 30, 1.0, 1.0, 0,
                                            tpl, None))
    status, chat, _u, _t, timeline, _legend, events, message, turn, _check, _sess = outs[-1]
    assert "Done" in status and 'data-status="final"' in timeline
    assert _is_full_update(chat) and chat["value"][0] == {"role": "user", "content": "hello"}
    assert _is_full_update(message) and message["value"].get("role") == "assistant"
    assert _is_full_update(turn)


def test_send_with_a_model_that_fails_to_load_says_why_and_keeps_the_text(tiny_model_dir):
    from playground.session import Session

    demo = ui.build_ui(tiny_model_dir)
    tpl = ui.template_to_text(ui.SKELETON_TEMPLATE)
    sess = Session()
    outs = list(_handler(demo, "send_user")("keep me", sess, "no-such-org/x", "", "", False, 30, 1.0, 1.0, 0,
                                            tpl, None))
    status, chat, user_box, tool_box = outs[-1][:4]
    assert "No model loaded:" in status and "no-such-org/x" in status and "Load a model first" in status
    assert "Traceback" not in status
    assert user_box == "keep me" and sess.history == [] and chat == []
    outs = list(_handler(demo, "send_tool")("42", sess, "no-such-org/x", "", "", False, 30, 1.0, 1.0, 0,
                                            tpl, None))
    assert outs[-1][3] == "42" and "No model loaded" in outs[-1][0]


def test_timeline_from_is_validated():
    import pytest

    assert ui.parse_timeline_start("", 100) is None and ui.parse_timeline_start(None, 100) is None
    assert ui.parse_timeline_start(" 42 ", 100) == 42 and ui.parse_timeline_start("100", 100) == 100
    for bad, words in (("abc", "not a character position"), ("-5", "not a character position"),
                       ("1e99", "not a character position"), ("4.5", "not a character position"),
                       ("101", "past the end"), ("9" * 40, "past the end"), ("٣", "not a character position")):
        with pytest.raises(ValueError, match=words) as e:
            ui.parse_timeline_start(bad, 100)
        assert "from 0 to 100" in str(e.value)


def test_move_window_handler_reports_bad_input(tiny_model_dir):
    from playground.session import Run, Session

    demo = ui.build_ui(tiny_model_dir)
    move = _handler(demo, "move_window")
    sess = Session()
    assert "Nothing parsed yet" in move("0", sess)[0]
    sess.view = parse_run(Run(chunks=("x" * 9000,), template_text=ui.template_to_text(ui.SKELETON_TEMPLATE)))
    status, timeline = move("abc", sess)
    assert "not a character position" in status and "moved" not in status
    assert isinstance(timeline, type(gr.skip()))
    status, timeline = move("10", sess)
    assert "characters 10–6010 of" in status and 'data-status="final"' in timeline
